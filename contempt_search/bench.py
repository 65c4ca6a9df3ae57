"""``python -m contempt_search.bench``: the cost of search-contempt against mctx's own search.

For each game and kind, one batch of positions (random plies from the start) is searched three ways with the same
network, key, batch and simulations: mctx's own dense search (``run_search(..., mctx_loop=True)``), the project's
search over its tree of legal moves with the standard rules (``run_search``'s default: mctx's actions and visit
counts) and search-contempt (``contempt_rules``, on that tree).  Each is compiled first, then timed as the best of
``--repeats`` runs, interleaved (each round times each search once).  One JSON line per (game, kind): seconds per
search, ``ratio`` = contempt / mctx, ``standard_ratio`` = standard rules in the project loop / mctx,
``rules_overhead`` = contempt / standard rules in the project loop (what the contempt rules themselves cost), and
contempt's mean ``sampled_visit_fraction``.  A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from contempt_search.rules import contempt_rules
from zerolab import (
    AlphaZeroResNet,
    SearchConfig,
    init_variables,
    interleaved_best_times,
    make_game,
    run_search,
)


def random_positions(game, batch_size: int, plies: int, seed: int = 0):
    states = game.batched_init(jax.random.split(jax.random.key(seed), batch_size))
    step = game.batched_step
    rng = np.random.default_rng(seed)
    for _ in range(plies):
        legal = np.asarray(states.legal_action_mask)
        states = step(states, jnp.asarray([rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in legal],
                                          jnp.int32))
    return states


def bench_case(game_name: str, kind: str, batch_size: int, simulations: int, sc_limit: int, channels: int,
               num_blocks: int, repeats: int) -> dict:
    game = make_game(game_name)
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=channels, num_blocks=num_blocks)
    variables = init_variables(network, game, jax.random.key(0))
    states = random_positions(game, batch_size, plies=6)
    config = SearchConfig(kind=kind, num_simulations=simulations, max_num_considered_actions=16)
    key = jax.random.key(1)
    searches = {
        "mctx": None,
        "standard_rules": None,  # the standard search in the project's loop
        "contempt": contempt_rules(config, sc_limit),
    }
    compiled = {name: jax.jit(lambda v, k, s, rules=rules, reference=name == "mctx": run_search(
                    config, game, network, v, k, s, rules=rules, mctx_loop=reference))
                for name, rules in searches.items()}
    outputs = {name: jax.block_until_ready(search(variables, key, states)) for name, search in compiled.items()}
    seconds = interleaved_best_times({name: functools.partial(search, variables, key, states)
                                      for name, search in compiled.items()}, repeats)
    return {
        "game": game_name, "kind": kind, "batch_size": batch_size, "simulations": simulations, "sc_limit": sc_limit,
        "network": f"resnet {channels}x{num_blocks}", "backend": jax.default_backend(),
        "device": jax.devices()[0].device_kind,
        **{f"{name}_s": value for name, value in seconds.items()},
        "ratio": seconds["contempt"] / seconds["mctx"],
        "standard_ratio": seconds["standard_rules"] / seconds["mctx"],
        "rules_overhead": seconds["contempt"] / seconds["standard_rules"],
        "sampled_visit_fraction": float(np.mean(outputs["contempt"].summary["sampled_visit_fraction"])),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m contempt_search.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=["gardner_chess", "chess"], action="append")
    parser.add_argument("--kind", choices=["gumbel", "muzero"], action="append")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--simulations", type=int, default=64)
    parser.add_argument("--sc-limit", type=int, default=4)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--num-blocks", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    for game_name in args.game or ["gardner_chess", "chess"]:
        for kind in args.kind or ["gumbel", "muzero"]:
            row = bench_case(game_name, kind, args.batch_size, args.simulations, args.sc_limit, args.channels,
                             args.num_blocks, args.repeats)
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
