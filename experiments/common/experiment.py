"""An experiment as one declared object: what ``python -m experiments`` runs, checks, plans and reports for a
launcher, declared once at the end of its module as ``EXPERIMENT = Experiment(...)``.

A launcher declares what it plans, it does not format it: its ``programs`` hook returns the sections of its plan
(a :class:`zerolab.ProgramSection`: its own programs and their calls; a :class:`zerolab.training.RunPlan`: a core
training run's), and ``python -m experiments plan`` formats and prints them.

``python -m experiments`` reads nothing else of a launcher (no attribute looked up by name): a launcher that
declares a hook with the wrong type fails when its module is imported, and one without a declaration is named in
the error (tests/experiments/test_validation.py holds every launcher to it).
"""

from __future__ import annotations

import dataclasses
import importlib
import pathlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import ml_collections

if TYPE_CHECKING:
    from zerolab import ProgramSection
    from zerolab.training import RunPlan

#: ``(config, workdir) -> summary``: the whole run, resumable in ``workdir``.
RunFn = Callable[[ml_collections.ConfigDict, pathlib.Path], Mapping[str, Any]]
#: ``(config) -> None``: the experiment's own sections checked before its run directory is made (a ValueError names
#: the key).
CheckFn = Callable[[ml_collections.ConfigDict], None]
#: ``(config) -> {label: training config}``: the runs the experiment trains with the core's loop.
TrainingConfigsFn = Callable[[ml_collections.ConfigDict], Mapping[str, ml_collections.ConfigDict]]
#: ``(config) -> [section, ...]`` (or, with ``Experiment.plans_pod_shape``, ``(config, num_devices,
#: device_memory_gib) -> [section, ...]``): the sections of the experiment's plan in the order they are printed, each
#: its own programs with their calls (a ``ProgramSection``) or a core training run's plan (a ``RunPlan``, what
#: ``zerolab.training.plan_training_run`` returns).
ProgramsFn = Callable[..., Sequence["ProgramSection | RunPlan"]]
#: ``(summary, config) -> {key: Quantity}``: the headline quantities written to ``results.json``.
ResultsFn = Callable[[Mapping[str, Any], ml_collections.ConfigDict], Mapping[str, Any]]

#: The sections of a config that the core's training loop reads: a config with all of them is a training run.
TRAINING_SECTIONS = ("model", "search", "selfplay", "replay", "train")


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A launcher's hooks for ``python -m experiments``.

    Attributes:
      run: runs the experiment (:data:`RunFn`).
      check_config: checks its own sections before the run directory is made (:data:`CheckFn`); the training runs
        of :attr:`training_configs` are checked by the core as well.
      training_configs: its training runs with the core's loop (:data:`TrainingConfigsFn`); ``None``: the config
        itself when it is a training config (:data:`TRAINING_SECTIONS`), else none.
      programs: the sections of its plan, declared, not formatted (:data:`ProgramsFn`); ``None``: each training
        run's plan.
      plans_pod_shape: whether :attr:`programs` takes ``num_devices`` and ``device_memory_gib`` (it plans a core
        training run at a pod's shape too).
      results: its headline quantities (:data:`ResultsFn`); ``None``: it writes no ``results.json``.
      growing_leaves: its own counts a rerun may raise (more games, more iterations), besides the core's.
    """

    run: RunFn
    check_config: CheckFn | None = None
    training_configs: TrainingConfigsFn | None = None
    programs: ProgramsFn | None = None
    plans_pod_shape: bool = False
    results: ResultsFn | None = None
    growing_leaves: tuple[str, ...] = ()

    def __post_init__(self):
        for field in ("run", "check_config", "training_configs", "programs", "results"):
            hook = getattr(self, field)
            if (hook is None and field != "run") or callable(hook):
                continue
            raise TypeError(f"Experiment.{field} must be a function, got {hook!r}")
        if isinstance(self.growing_leaves, str) or not all(isinstance(leaf, str) for leaf in self.growing_leaves):
            raise TypeError(f"Experiment.growing_leaves must be a tuple of config leaf names, got "
                            f"{self.growing_leaves!r}")
        object.__setattr__(self, "growing_leaves", tuple(self.growing_leaves))

    def runs_to_train(self, config: ml_collections.ConfigDict, name: str) -> dict[str, ml_collections.ConfigDict]:
        """The training runs of this experiment (named ``name``) at ``config``: :attr:`training_configs`' where it
        declares them, else ``{name: config}`` for a training config, else none."""
        if self.training_configs is not None:
            return dict(self.training_configs(config))
        if all(section in config for section in TRAINING_SECTIONS):
            return {name: config}
        return {}


def module_name(name: str) -> str:
    """The launcher module of experiment ``name`` (``-`` as ``_``)."""
    return "experiments." + name.replace("-", "_")


def experiment(name: str) -> Experiment:
    """The declaration of experiment ``name`` (its launcher's ``EXPERIMENT``); a ValueError names a launcher that
    declares none."""
    launcher = importlib.import_module(module_name(name))
    declared = vars(launcher).get("EXPERIMENT")
    if not isinstance(declared, Experiment):
        raise ValueError(f"{launcher.__name__} declares no EXPERIMENT = experiments.common.experiment.Experiment(...)")
    return declared


__all__ = ["Experiment", "TRAINING_SECTIONS", "experiment", "module_name"]
