"""zerolab: a JAX stack for game-playing research, in layers over a foundation.

The foundation modules (``config``, ``devices``, ``progress``, ``logs``) are under the layers ``games``, ``networks``,
``search``, ``selfplay``, ``training``, ``engines``, ``play``, ``evaluation``, ``frontends``; each layer imports only
those before it (zerolab/README.md, "Layers").

This package is the core's public surface for the method packages (``alphagateau``, ``distill``,
``contempt_search``, ``sai_go``, ``skill_compat``) and the launchers (``experiments/``, ``scripts/``).  ``__all__``
holds the vocabulary methods are written in — each name a method package imports from here — and the foundation's
names launchers use.  Any other public name comes from its layer package, where that package's ``__all__`` declares it
(``from zerolab.selfplay import Lanes``).  A method package or a launcher imports from these two places only, never
from a module inside a layer (``zerolab.search.mcts``), and a name that is here is imported from here (one spelling
each); ``tests/zerolab/test_layers.py`` holds it to that.

Where each name comes from is written once, as the imports of the ``if TYPE_CHECKING:`` block below (what type
checkers and IDEs read), and ``__all__`` lists the names (what static readers read; :func:`zerolab.lazy.lazy_surface`
refuses an ``__all__`` that differs from the block); ``lazy_surface`` reads the block to resolve each name lazily
(PEP 562): importing one imports only the module that defines it, so a JAX-free name (FEN validation, UCI engines,
configs, progress bars) does not pull in JAX or pgx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_surface

if TYPE_CHECKING:
    from zerolab.config import (
        ConfigError, apply_overrides, check_at_least, check_choice, from_json, section_dataclass, section_dict,
        to_json,
    )
    from zerolab.devices import (
        check_divisible, jit_step, make_mesh, replicate, replicated, request_host_devices, shard_host_batch,
    )
    from zerolab.logs import configure_logging
    from zerolab.progress import progress_bar
    from zerolab.games import ChessGame, GameBoards, GameRecord, GoGame, make_game, validate_fen
    from zerolab.networks import (
        AlphaZeroResNet, NetworkInputs, NetworkOutput, abstract_variables, init_variables, load_lc0_weights,
        make_network,
    )
    from zerolab.search import SearchChanges, SearchConfig, SearchRules, Tree, masked_logits, run_search
    from zerolab.selfplay import Frames, MoveRule, PlyDecision, SelfPlayConfig, make_play_fn, standard_lane_rule
    from zerolab.training import (
        Checkpointer, Method, PlannedProgram, ProgramSection, abstract_states, compile_cost, default_config, train,
    )
    from zerolab.engines import EngineError, UCIEngine, find_engine
    from zerolab.play import Agent, PolicyAgent, SearchAgent, lanes_to_answer
    from zerolab.frontends import (
        UCIOption, check_checkpoint, checkpoint_search, interleaved_best_times, serve_search_engine,
    )

__all__ = [
    "Agent", "AlphaZeroResNet", "Checkpointer", "ChessGame", "ConfigError", "EngineError", "Frames", "GameBoards",
    "GameRecord", "GoGame", "Method", "MoveRule", "NetworkInputs", "NetworkOutput", "PlannedProgram", "PlyDecision",
    "PolicyAgent", "ProgramSection", "SearchAgent", "SearchChanges", "SearchConfig", "SearchRules", "SelfPlayConfig",
    "Tree", "UCIEngine", "UCIOption", "abstract_states", "abstract_variables", "apply_overrides", "check_at_least",
    "check_checkpoint", "check_choice", "check_divisible", "checkpoint_search", "compile_cost", "configure_logging",
    "default_config", "find_engine", "from_json", "init_variables", "interleaved_best_times", "jit_step",
    "lanes_to_answer", "load_lc0_weights", "make_game", "make_mesh", "make_network", "make_play_fn", "masked_logits",
    "progress_bar", "replicate", "replicated", "request_host_devices", "run_search", "section_dataclass",
    "section_dict", "serve_search_engine", "shard_host_batch", "standard_lane_rule", "to_json", "train", "validate_fen"
]
__getattr__, __dir__ = lazy_surface(__name__)
