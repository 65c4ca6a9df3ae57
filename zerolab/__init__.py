"""zerolab: a JAX stack for game-playing research, in layers over a foundation.

The foundation modules (``config``, ``devices``, ``progress``, ``logs``) are under the layers ``games``, ``networks``,
``search``, ``selfplay``, ``training``, ``engines``, ``play``, ``evaluation``, ``frontends``; each layer imports only
those before it (zerolab/README.md, "Layers").

This package is the core's public surface for the method packages (``alphagateau``, ``distill``,
``contempt_search``, ``sai_go``, ``skill_compat``) and the launchers (``experiments/``, ``scripts/``).  ``__all__``
(at most 60 names) holds the names the methods share: every name that two or more of their modules import, and the
foundation's names methods and launchers use.  Any other public name comes from its layer package, where that
package's ``__all__`` declares it (``from zerolab.selfplay import Lanes``).  A method package or a launcher imports
from these two places only, never from a module inside a layer (``zerolab.search.mcts``);
``tests/zerolab/test_layers.py`` holds it to that.

Names resolve lazily (PEP 562, :mod:`zerolab.lazy`): importing one imports only the module that defines it, so a
JAX-free name (FEN validation, UCI engines, configs, progress bars) does not pull in JAX or pgx.  The ``if
TYPE_CHECKING:`` block below names every one for type checkers and IDEs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_names

__getattr__, __dir__ = lazy_names(__name__, {
    "zerolab.config": ("OPTIONAL_PRESETS", "PRESETS", "check_at_least", "check_choice", "default_config", "from_json",
                       "load_config", "to_json"),
    "zerolab.devices": ("check_divisible", "jit_step", "make_mesh", "replicate", "replicated", "request_host_devices",
                        "shard_host_batch"),
    "zerolab.logs": ("configure_logging",),
    "zerolab.progress": ("progress_bar",),
    "zerolab.games": ("ChessGame", "GameBoards", "GameRecord", "GoGame", "make_game", "validate_fen"),
    "zerolab.networks": ("AlphaZeroResNet", "NetworkInputs", "NetworkOutput", "abstract_variables", "init_variables",
                         "load_lc0_weights", "make_network"),
    "zerolab.search": ("SearchConfig", "SearchRules", "Tree", "masked_logits", "run_search"),
    "zerolab.selfplay": ("Frames", "MoveRule", "PlyDecision", "SelfPlayConfig", "make_play_fn", "standard_lane_rule"),
    "zerolab.training": ("Checkpointer", "Method", "PlannedProgram", "abstract_states", "compile_cost",
                         "format_programs", "train"),
    "zerolab.engines": ("EngineError", "UCIEngine", "find_engine"),
    "zerolab.play": ("Agent", "PolicyAgent", "SearchAgent", "lanes_to_answer"),
    "zerolab.frontends": ("UCIOption", "check_checkpoint", "checkpoint_search", "interleaved_best_times",
                          "serve_search_engine"),
})

__all__ = [
    "Agent", "AlphaZeroResNet", "Checkpointer", "ChessGame", "EngineError", "Frames", "GameBoards", "GameRecord",
    "GoGame", "Method", "MoveRule", "NetworkInputs", "NetworkOutput", "OPTIONAL_PRESETS", "PRESETS", "PlannedProgram",
    "PlyDecision", "PolicyAgent", "SearchAgent", "SearchConfig", "SearchRules", "SelfPlayConfig", "Tree", "UCIEngine",
    "UCIOption", "abstract_states", "abstract_variables", "check_at_least", "check_checkpoint", "check_choice",
    "check_divisible", "checkpoint_search", "compile_cost", "configure_logging", "default_config",
    "find_engine", "format_programs", "from_json", "init_variables", "interleaved_best_times", "jit_step",
    "lanes_to_answer", "load_config", "load_lc0_weights", "make_game", "make_mesh", "make_network", "make_play_fn",
    "masked_logits", "progress_bar", "replicate", "replicated", "request_host_devices", "run_search",
    "serve_search_engine", "shard_host_batch", "standard_lane_rule", "to_json", "train", "validate_fen",
]

if TYPE_CHECKING:
    from zerolab.config import (
        OPTIONAL_PRESETS, PRESETS, check_at_least, check_choice, default_config, from_json, load_config, to_json,
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
    from zerolab.search import SearchConfig, SearchRules, Tree, masked_logits, run_search
    from zerolab.selfplay import Frames, MoveRule, PlyDecision, SelfPlayConfig, make_play_fn, standard_lane_rule
    from zerolab.training import (
        Checkpointer, Method, PlannedProgram, abstract_states, compile_cost, format_programs, train,
    )
    from zerolab.engines import EngineError, UCIEngine, find_engine
    from zerolab.play import Agent, PolicyAgent, SearchAgent, lanes_to_answer
    from zerolab.frontends import (
        UCIOption, check_checkpoint, checkpoint_search, interleaved_best_times, serve_search_engine,
    )
