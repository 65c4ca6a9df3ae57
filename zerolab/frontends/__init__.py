"""Front ends: the UCI and GTP servers, the command lines, benchmarks and experiment set-up.

Method packages import this layer's names from here (``from zerolab.frontends import GTPServer``), as listed in
``__all__`` (the rule: :mod:`zerolab`); they resolve lazily (:mod:`zerolab.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_surface

if TYPE_CHECKING:
    from zerolab.frontends.bench import BenchCase, interleaved_best_times, selfplay_program, training_program
    from zerolab.frontends.gtp import GTPError, GTPServer
    from zerolab.frontends.lc0_convert import convert_to_run, converted_run_config
    from zerolab.frontends.uci import UCIServer, main_loop
    from zerolab.frontends.uci_options import UCIOption
    from zerolab.frontends.uci_protocol import MoveChoice, SearchBudget
    from zerolab.frontends.loaded_search import (
        DEFAULT_COMPILATION_CACHE, LoadedSearch, check_checkpoint, checkpoint_search, play_search,
    )
    from zerolab.frontends.uci_search import serve_search_engine
    from zerolab.frontends.cli import (
        add_allow_config_change_argument, add_distributed_arguments, add_host_devices_argument, search_overrides,
        split_overrides, start_distributed, start_host_devices,
    )
    from zerolab.frontends.experiment_setup import prepare_experiment, training_config

__all__ = [
    "BenchCase", "DEFAULT_COMPILATION_CACHE", "GTPError", "GTPServer", "LoadedSearch", "MoveChoice", "SearchBudget",
    "UCIOption", "UCIServer", "add_allow_config_change_argument", "add_distributed_arguments",
    "add_host_devices_argument", "check_checkpoint", "checkpoint_search", "convert_to_run", "converted_run_config",
    "interleaved_best_times", "main_loop", "play_search", "prepare_experiment", "search_overrides", "selfplay_program",
    "serve_search_engine", "split_overrides", "start_distributed", "start_host_devices", "training_config",
    "training_program"
]
__getattr__, __dir__ = lazy_surface(__name__)
