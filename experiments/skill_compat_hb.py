"""skill-compat-hb: the focal brains against Stockfish's team in hand and brain (see
:mod:`experiments.common.skill_compat`); rerunning on the same directory plays only the missing games."""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.common.experiment import Experiment
from experiments.common.skill_compat import FRAMEWORK_GROWING_LEAVES as GROWING_LEAVES
from experiments.common.skill_compat import framework_results as results
from experiments.common.skill_compat import run_framework_experiment
from experiments.configs.skill_compat_hb import HbConfig, read_config
from skill_compat.experiment import check_config as check_framework_config

if TYPE_CHECKING:
    from zerolab import ProgramSection


def run(config, workdir) -> dict:
    """The matchups and plain chess in ``workdir`` (:func:`experiments.common.skill_compat.run_framework_experiment`,
    the config read as :class:`~skill_compat.configs.HbConfig`)."""
    return run_framework_experiment(config, workdir, HbConfig)


def check_config(config) -> None:
    """Every key, before the run directory is made (:func:`skill_compat.experiment.check_config`)."""
    check_framework_config(read_config(config, HbConfig))


def programs(config) -> list[ProgramSection]:
    """The sections of ``python -m experiments plan skill-compat-hb``, declared (the command formats them): the
    framework games' JAX programs and their calls (upper bounds)."""
    from skill_compat.plan import framework_plan

    return [framework_plan(read_config(config, HbConfig), "skill-compat-hb")]


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, programs=programs, results=results,
                        growing_leaves=GROWING_LEAVES)
