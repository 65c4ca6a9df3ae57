"""A checkpoint's network and search, loaded to play 8×8 chess behind a UCI server (:mod:`zerolab.frontends.uci_search`).

:func:`checkpoint_search` builds the run's network for 8×8 chess (a board-size independent network trained on
Gardner chess plays 8×8; one whose parameters do not fit is refused) with the run's search under play defaults
(:data:`PLAY_SEARCH_DEFAULTS`) and the command line's overrides (:func:`play_search`).  JAX, pgx and the network are
imported inside the functions, so a UCI handshake does not wait for them.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zerolab.games import ChessGame
    from zerolab.search.mcts import SearchConfig

#: Search settings for playing rather than training: no exploration noise at the root.
PLAY_SEARCH_DEFAULTS = {"gumbel_scale": 0.0, "dirichlet_fraction": 0.0}


@dataclasses.dataclass
class LoadedSearch:
    """A network ready for 8×8 chess: the game, the module, its variables, the search config and a description.

    The search config carries its rules (``rules``/``rule_options``), which ``run_search`` builds."""

    game: ChessGame
    network: Any
    variables: Any
    search: SearchConfig
    description: str


def play_search(search: SearchConfig, simulations: int | None, overrides: Mapping[str, str]) -> SearchConfig:
    """The run's search with :data:`PLAY_SEARCH_DEFAULTS`, ``simulations`` (if given) and the overrides, in order."""
    search = dataclasses.replace(search, **PLAY_SEARCH_DEFAULTS)
    if simulations is not None:
        search = dataclasses.replace(search, num_simulations=int(simulations))
    return search.with_overrides(overrides)


def checkpoint_search(path: str, step: int | None = None, simulations: int | None = None,
                      overrides: Mapping[str, str] | None = None) -> LoadedSearch:
    """The network and search of a checkpoint, built for 8×8 chess (see the module docstring).

    Raises:
      FileNotFoundError: no checkpoint at ``path``.
      ValueError: the checkpoint's parameters do not fit 8×8 chess, or a bad search override.
    """
    import jax

    from zerolab.play.agents import load_search_agent
    from zerolab.games import make_game
    from zerolab.networks.network import init_variables

    options = {} if step is None else {"step": str(step)}
    agent = load_search_agent(path, options)  # the run's own game: 8×8 chess in any observation (e.g. chess:lc0)
    game = agent.game
    if getattr(game, "board_size", None) != 8:  # trained on another board: the same network built for 8×8 chess
        game = make_game("chess")
        agent = load_search_agent(path, options, game=game)
    expected = jax.eval_shape(lambda: init_variables(agent.network, game, jax.random.key(0)))
    shapes = lambda tree: jax.tree.map(lambda leaf: tuple(leaf.shape), tree)  # noqa: E731
    if shapes(expected) != shapes(agent.variables):
        raise ValueError(
            f"--checkpoint {path}: the network of this checkpoint ({type(agent.network).__name__}) does not fit 8x8 "
            "chess; only board-size independent networks (AlphaGateau) trained on Gardner chess play 8x8"
        )
    search = play_search(agent.search_config, simulations, overrides or {})
    return LoadedSearch(game, agent.network, agent.variables, search, f"{agent.name} ({type(agent.network).__name__})")


def run_simulations(path: str | os.PathLike, default: int = 32) -> int:
    """The ``search.num_simulations`` of the run that ``path`` (a run or checkpoint step directory) belongs to, read
    from its ``config.json`` without loading the checkpoint (``default`` when the file has none)."""
    import pathlib

    path = pathlib.Path(path)
    run = path if (path / "checkpoints").is_dir() else path.parent.parent
    try:
        config = json.loads((run / "config.json").read_text())
        return int(config["search"]["num_simulations"])
    except (OSError, ValueError, KeyError, TypeError):
        return default


def with_compilation_cache(load: Callable[[], LoadedSearch], directory: str) -> Callable[[], LoadedSearch]:
    """``load`` that first points JAX's persistent compilation cache at ``directory``."""

    def load_with_cache() -> LoadedSearch:
        import jax

        jax.config.update("jax_compilation_cache_dir", directory)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        return load()

    return load_with_cache


__all__ = ["LoadedSearch", "PLAY_SEARCH_DEFAULTS", "checkpoint_search", "play_search", "run_simulations",
           "with_compilation_cache"]
