"""Training: methods, the replay window and its checkpoints, runs, the training loop, metrics, plans.

Method packages import this layer's names from here (``from zerolab.training import MetricsLog``), as listed in
``__all__`` (the rule: :mod:`zerolab`); they resolve lazily (:mod:`zerolab.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_names

__getattr__, __dir__ = lazy_names(__name__, {
    "zerolab.training.checkpoint": ("Checkpointer",),
    "zerolab.training.checkpoint_paths": ("resolve_checkpoint", "step_directories"),
    "zerolab.training.method": ("Method", "alphazero_loss"),
    "zerolab.training.interrupt": ("TrainingInterrupted", "interrupt_on_sigterm", "interruption_report"),
    "zerolab.training.metrics": ("MetricsLog",),
    "zerolab.training.plan": ("PlannedProgram", "abstract_states", "check_accelerator", "compile_cost",
                              "evaluation_flops", "evaluations_per_search", "format_plan", "format_programs",
                              "plan_training_run"),
    "zerolab.training.runs": ("check_training_config", "load_trained_variables"),
    "zerolab.training.train": ("default_config", "train"),
    "zerolab.training.replay": ("FrameWindow",),
    "zerolab.training.replay_checkpoints": ("read_window",),
    "zerolab.training.run_directory": ("ConfigConflictError", "RunDirectoryBusyError", "RunDirectoryError",
                                       "RunDirectoryOwner", "check_run_config",
                                       "check_run_directory", "config_changes_allowed", "file_system_error",
                                       "growing_leaves", "record_run_config"),
})

__all__ = [
    "Checkpointer", "ConfigConflictError", "FrameWindow", "Method", "MetricsLog", "PlannedProgram",
    "RunDirectoryBusyError", "RunDirectoryError", "RunDirectoryOwner", "TrainingInterrupted", "abstract_states",
    "alphazero_loss", "check_accelerator", "check_run_config", "check_run_directory", "check_training_config",
    "compile_cost", "config_changes_allowed", "default_config", "evaluation_flops", "evaluations_per_search",
    "file_system_error", "format_plan", "format_programs", "growing_leaves", "interrupt_on_sigterm",
    "interruption_report", "load_trained_variables", "plan_training_run", "read_window", "record_run_config",
    "resolve_checkpoint", "step_directories", "train",
]

if TYPE_CHECKING:
    from zerolab.training.checkpoint import Checkpointer
    from zerolab.training.checkpoint_paths import resolve_checkpoint, step_directories
    from zerolab.training.method import Method, alphazero_loss
    from zerolab.training.interrupt import TrainingInterrupted, interrupt_on_sigterm, interruption_report
    from zerolab.training.metrics import MetricsLog
    from zerolab.training.plan import (
        PlannedProgram, abstract_states, check_accelerator, compile_cost, evaluation_flops, evaluations_per_search,
        format_plan, format_programs, plan_training_run,
    )
    from zerolab.training.runs import check_training_config, load_trained_variables
    from zerolab.training import train
    from zerolab.training.train import default_config
    from zerolab.training.replay import FrameWindow
    from zerolab.training.replay_checkpoints import read_window
    from zerolab.training.run_directory import (
        ConfigConflictError, RunDirectoryBusyError, RunDirectoryError, RunDirectoryOwner, check_run_config,
        check_run_directory, config_changes_allowed, file_system_error, growing_leaves, record_run_config,
    )
