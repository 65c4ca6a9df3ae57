"""Training: methods, the replay window and its checkpoints, runs, the training loop, metrics, plans.

Method packages import this layer's names from here (``from zerolab.training import MetricsLog``), as listed in
``__all__`` (the rule: :mod:`zerolab`); they resolve lazily (:mod:`zerolab.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_surface

if TYPE_CHECKING:
    from zerolab.training.checkpoint import Checkpointer
    from zerolab.training.checkpoint_paths import resolve_checkpoint, step_directories
    from zerolab.training.method import Method, alphazero_loss
    from zerolab.training.interrupt import TrainingInterrupted, interrupt_on_sigterm, interruption_report
    from zerolab.training.metrics import MetricsLog
    from zerolab.training.plan import RunPlan, format_plan, plan_training_run
    from zerolab.training.program_cost import (
        PlannedProgram, ProgramSection, abstract_states, compile_cost, evaluation_flops, evaluations_per_search,
        format_programs,
    )
    from zerolab.training.rates import check_accelerator
    from zerolab.training.runs import RunConfig, check_training_config, default_config
    from zerolab.training.trained_variables import load_trained_variables
    from zerolab.training import train
    from zerolab.training.replay import FrameWindow
    from zerolab.training.replay_checkpoints import read_window
    from zerolab.training.file_system import RunDirectoryError, check_run_directory, file_system_error
    from zerolab.training.run_directory import (
        ConfigConflictError, check_run_config, config_changes_allowed, growing_leaves, record_run_config,
    )
    from zerolab.training.run_owner import RunDirectoryBusyError, RunDirectoryOwner

__all__ = [
    "Checkpointer", "ConfigConflictError", "FrameWindow", "Method", "MetricsLog", "PlannedProgram", "ProgramSection",
    "RunConfig", "RunDirectoryBusyError", "RunDirectoryError", "RunDirectoryOwner", "RunPlan", "TrainingInterrupted",
    "abstract_states", "alphazero_loss", "check_accelerator", "check_run_config", "check_run_directory",
    "check_training_config", "compile_cost", "config_changes_allowed", "default_config", "evaluation_flops",
    "evaluations_per_search", "file_system_error", "format_plan", "format_programs", "growing_leaves",
    "interrupt_on_sigterm", "interruption_report", "load_trained_variables", "plan_training_run", "read_window",
    "record_run_config", "resolve_checkpoint", "step_directories", "train"
]
__getattr__, __dir__ = lazy_surface(__name__)
