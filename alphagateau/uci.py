"""AlphaGateau as a UCI engine: the core's search engine (``python -m zerolab uci``) with AlphaGateau's defaults.

::

    python -m alphagateau.uci --checkpoint RUN_OR_STEP_DIR [--simulations N] [search.KEY=VALUE ...]
    python -m alphagateau.uci --random-init [--channels H --blocks L] [--simulations N]

What is AlphaGateau's here: the engine's name, ``Simulations`` starting at 64, and ``--random-init``, an untrained
AlphaGateau (H, L) for smoke checks.  Everything else — the position bridge (pgx history), the time-to-simulations
rule, the compile cache, the protocol, search overrides — is the core's (:mod:`zerolab.frontends.uci_search`); a checkpoint
trained on 5×5 Gardner chess plays 8×8 because AlphaGateau's parameters do not depend on the board.
``python -m zerolab uci --checkpoint DIR`` plays the same checkpoint with the run's own simulation count.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from zerolab import checkpoint_search, serve_search_engine
from zerolab import check_checkpoint
from zerolab.frontends import LoadedSearch, play_search, search_overrides

ENGINE_NAME = "AlphaGateau (zerolab)"
DEFAULT_SIMULATIONS = 64
MAXIMUM_SIMULATIONS = 100_000


def random_network(channels: int, num_blocks: int, seed: int, overrides: dict[str, str]) -> LoadedSearch:
    """An untrained AlphaGateau (``channels`` H, ``num_blocks`` L) for 8×8 chess; parameters from ``seed``."""
    import jax

    from alphagateau.network import AlphaGateau
    from zerolab import SearchConfig, init_variables, make_game

    game = make_game("chess")
    network = AlphaGateau(channels=channels, num_blocks=num_blocks)
    variables = init_variables(network, game, jax.random.key(seed))
    search = play_search(SearchConfig(), None, overrides)
    return LoadedSearch(game, network, variables, search, f"untrained AlphaGateau H={channels} L={num_blocks}")


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m alphagateau.uci", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint", help="a zerolab run directory (newest checkpoint) or checkpoint step directory")
    source.add_argument("--random-init", action="store_true", help="an untrained AlphaGateau, for smoke checks")
    parser.add_argument("--simulations", type=int, default=DEFAULT_SIMULATIONS, help="the Simulations option's start")
    parser.add_argument("--channels", type=int, default=128, help="--random-init: width H (node and edge features)")
    parser.add_argument("--blocks", type=int, default=5, help="--random-init: ResGATEAU blocks L")
    parser.add_argument("--gumbel-scale", type=float, default=0.0, help="Gumbel noise of the search (0: none)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random init and of the search keys")
    parser.add_argument("--compilation-cache", default=None,
                        help="directory of JAX's persistent compilation cache (default: the per-user one, "
                             "~/.cache/zerolab/jax-compilation; '' for none)")
    parser.add_argument("overrides", nargs="*", help="search.KEY=VALUE overrides, e.g. search.kind=muzero")
    arguments = parser.parse_args(argv)
    if not 1 <= arguments.simulations <= MAXIMUM_SIMULATIONS:
        parser.error(f"--simulations must be from 1 to {MAXIMUM_SIMULATIONS}")
    try:
        arguments.search_overrides = search_overrides(arguments.overrides, "alphagateau-uci")
    except ValueError as error:
        parser.error(str(error))
    return arguments


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the engine on standard input and output; loading and compiling happen while the GUI handshakes."""
    arguments = parse_arguments(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    overrides = dict(arguments.search_overrides)
    overrides.setdefault("gumbel_scale", str(arguments.gumbel_scale))
    if arguments.checkpoint:  # what can be checked without loading the network, before the server starts
        try:
            check_checkpoint(arguments.checkpoint, None, overrides)
        except (FileNotFoundError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    if arguments.random_init:
        def load() -> LoadedSearch:
            return random_network(arguments.channels, arguments.blocks, arguments.seed, overrides)
    else:
        def load() -> LoadedSearch:
            return checkpoint_search(arguments.checkpoint, None, arguments.simulations, overrides)
    return serve_search_engine(load, ENGINE_NAME, arguments.simulations, seed=arguments.seed,
                               compilation_cache=arguments.compilation_cache)


__all__ = ["ENGINE_NAME", "DEFAULT_SIMULATIONS", "random_network"]


if __name__ == "__main__":
    sys.exit(main())
