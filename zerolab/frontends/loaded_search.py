"""A checkpoint's network and search, loaded to play 8×8 chess behind a UCI server (:mod:`zerolab.frontends.uci_search`).

:func:`checkpoint_search` builds the run's network for 8×8 chess (a board-size independent network trained on
Gardner chess plays 8×8; one whose parameters do not fit is refused) with the run's search under play defaults
(:data:`PLAY_SEARCH_DEFAULTS`) and the command line's overrides (:func:`play_search`).  JAX, pgx and the network are
imported inside the functions, so a UCI handshake does not wait for them.

:func:`check_checkpoint` finds, before the server starts and without loading the network, what would make
:func:`checkpoint_search` fail later: no such run, checkpoint or ``--step``, a run of another game (Go), a bad search
override.  ``python -m zerolab uci`` refuses those at launch (one ``error:`` line, exit status 2) instead of answering
``uciok`` and playing fallback moves; what only loading finds (parameters that do not fit 8×8) ends the engine with
exit status 2 (:func:`zerolab.frontends.uci_search.serve_search_engine`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
import logging
import pathlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zerolab.games import ChessGame
    from zerolab.search.config import SearchConfig

logger = logging.getLogger("zerolab.frontends.loaded_search")

#: Search settings for playing rather than training: no exploration noise at the root.
PLAY_SEARCH_DEFAULTS = {"gumbel_scale": 0.0, "dirichlet_fraction": 0.0}
#: Games whose runs play 8×8 chess: chess itself, and Gardner chess with a board-size independent network.
CHESS_GAMES = ("chess", "gardner_chess")


@dataclasses.dataclass
class LoadedSearch:
    """A network ready for 8×8 chess: the game, the module, its variables, the search config and a description.

    The search config carries its rules (``rules``/``rule_options``), which ``run_search`` builds."""

    game: ChessGame
    network: Any
    variables: Any
    search: SearchConfig
    description: str
    note: str = ""  # for the GUI, e.g. that the network was trained on another board


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

    from zerolab.play.search_agents import make_search_agent
    from zerolab.games import make_game
    from zerolab.networks.network import init_variables
    from zerolab.training.trained_variables import load_trained_variables

    quiet_closed_event_loop_errors()
    # One read of the checkpoint: a network trained on another board is built for 8×8 chess from the same variables.
    trained = load_trained_variables(path, step)
    run_game, note = str(trained.config.game.name), ""
    if run_game.partition(":")[0] != "chess":  # Gardner chess (check_checkpoint refuses every other game)
        note = f"the network was trained on {run_game}, not 8x8 chess: its scores on 8x8 are extrapolations"
        run_game = "chess"
    game = make_game(run_game)
    agent = make_search_agent(trained.config, trained.variables, {}, game,
                              name=f"{pathlib.Path(path).name}@{trained.step}")
    expected = jax.eval_shape(lambda: init_variables(agent.network, game, jax.random.key(0)))
    shapes = lambda tree: jax.tree.map(lambda leaf: tuple(leaf.shape), tree)  # noqa: E731
    if shapes(expected) != shapes(agent.variables):
        raise ValueError(
            f"--checkpoint {path}: the network of this checkpoint ({type(agent.network).__name__}) does not fit 8x8 "
            "chess; only board-size independent networks (AlphaGateau) trained on Gardner chess play 8x8"
        )
    search = play_search(agent.search_config, simulations, overrides or {})
    return LoadedSearch(game, agent.network, agent.variables, search, f"{agent.name} ({type(agent.network).__name__})",
                        note)


def check_checkpoint(path: str | os.PathLike, step: int | None = None,
                     overrides: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The run config (its ``config.json``) of the checkpoint :func:`checkpoint_search` would load, after the checks
    it can make without loading the network (see the module docstring).

    Without ``overrides`` it reads directories and one JSON file and imports nothing, so that ``uciok`` follows at
    once (a GUI waits 10 s for it, a loaded machine takes that long to import JAX); overrides are checked by
    :meth:`zerolab.search.config.SearchConfig.with_overrides`, which imports JAX and mctx (about 1 s of CPU).
    Steps are the checkpoint directory's numbered entries (orbax's step directories); which of them can be read is
    the loader's business (:func:`zerolab.training.trained_variables.load_trained_variables`: the newest readable one).

    Raises:
      FileNotFoundError: no run or checkpoint step directory at ``path`` (as
        :func:`zerolab.training.checkpoint_paths.resolve_checkpoint` reads it), no checkpoint in it, or no step
        ``step``.
      ValueError: a run of another game than chess or Gardner chess, or a bad search override.
    """
    from zerolab.training.checkpoint_paths import resolve_checkpoint, step_directories  # pathlib alone

    path = pathlib.Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"--checkpoint {path}: no such run or checkpoint directory")
    try:
        directory, chosen = resolve_checkpoint(path, step)
    except FileNotFoundError as error:
        raise FileNotFoundError(f"--checkpoint {error}") from None
    run = directory.parent
    steps = step_directories(directory)
    if not steps:
        raise FileNotFoundError(f"--checkpoint {path}: no checkpoint in {directory}")
    if chosen is not None and chosen not in steps:
        raise FileNotFoundError(f"--step {chosen}: no checkpoint step {chosen} in {directory}; steps: "
                                f"{', '.join(map(str, steps))} (or leave --step out for the newest)")
    try:
        config = json.loads((run / "config.json").read_text())
    except (OSError, ValueError) as error:
        raise FileNotFoundError(f"--checkpoint {path}: the run's config {run / 'config.json'} cannot be read "
                                f"({type(error).__name__}: {error})") from None
    game = config.get("game", {}).get("name")
    if game not in CHESS_GAMES:
        raise ValueError(f"--checkpoint {path}: the run plays {game}; a UCI engine plays 8x8 chess: give a run of "
                         f"{' or '.join(CHESS_GAMES)}" + (" (Go runs play through python -m zerolab gtp)"
                                                          if game == "go" else ""))
    model = config.get("model", {}).get("name", "resnet")
    if game == "gardner_chess" and model == "resnet":
        raise ValueError(f"--checkpoint {path}: a ResNet trained on Gardner chess cannot play 8x8 chess (its policy "
                         f"head is sized for 5x5's 1,225 moves, 8x8 has 4,672): give an 8x8 run, or an AlphaGateau "
                         f"run, whose graph network plays either board")
    if overrides:
        from zerolab.search.config import SearchConfig

        try:
            search = SearchConfig.from_config(config.get("search", {}))
        except (TypeError, ValueError) as error:
            raise ValueError(f"--checkpoint {path}: its search config cannot be read: {error}") from None
        play_search(search, None, dict(overrides)).make_rules()
    return config


def quiet_closed_event_loop_errors() -> None:
    """Drops the ``RuntimeError: Event loop is closed`` that orbax's reads still under way raise (each printed as a
    traceback, hundreds of them) after one read of an unreadable checkpoint failed; the checkpoint itself is reported
    in one log line by :meth:`zerolab.training.checkpoint.Checkpointer.restore_newest`.  Every other unraisable
    exception goes to the hook installed before.  Installed once per process."""
    previous = sys.unraisablehook
    if getattr(previous, "drops_closed_event_loop_errors", False):
        return

    def hook(unraisable: Any) -> None:
        error = unraisable.exc_value
        if isinstance(error, RuntimeError) and str(error) == "Event loop is closed":
            return
        previous(unraisable)

    hook.drops_closed_event_loop_errors = True
    sys.unraisablehook = hook


#: Where ``python -m zerolab uci`` keeps its compiled searches by default (per user; the experiments' configs use it).
DEFAULT_COMPILATION_CACHE = "~/.cache/zerolab/jax-compilation"


def with_compilation_cache(load: Callable[[], LoadedSearch], directory: str) -> Callable[[], LoadedSearch]:
    """``load`` that first points JAX's persistent compilation cache at ``directory`` (``~`` expanded, created),
    unless JAX already has one (e.g. from ``JAX_COMPILATION_CACHE_DIR``)."""

    def load_with_cache() -> LoadedSearch:
        from zerolab.devices import use_compilation_cache

        use_compilation_cache(directory, min_compile_seconds=0.0)
        return load()

    return load_with_cache


__all__ = ["CHESS_GAMES", "DEFAULT_COMPILATION_CACHE", "LoadedSearch", "PLAY_SEARCH_DEFAULTS", "check_checkpoint",
           "checkpoint_search", "play_search", "quiet_closed_event_loop_errors", "with_compilation_cache"]
