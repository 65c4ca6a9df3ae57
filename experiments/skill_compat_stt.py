"""skill-compat-stt: the focal seniors against Stockfish's team in stochastic tag team (see
:mod:`experiments.common.skill_compat`); rerunning on the same directory plays only the missing games."""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.common.experiment import Experiment
from experiments.common.skill_compat import FRAMEWORK_GROWING_LEAVES as GROWING_LEAVES
from experiments.common.skill_compat import framework_results as results
from experiments.common.skill_compat import run_framework_experiment
from experiments.configs.skill_compat_stt import SttConfig, read_config
from skill_compat.experiment import check_config as check_framework_config

if TYPE_CHECKING:
    from zerolab import ProgramSection


def run(config, workdir) -> dict:
    """The matchups and plain chess in ``workdir`` (:func:`experiments.common.skill_compat.run_framework_experiment`,
    the config read as :class:`~skill_compat.configs.SttConfig`)."""
    return run_framework_experiment(config, workdir, SttConfig)


def check_config(config) -> None:
    """Every key, before the run directory is made (:func:`skill_compat.experiment.check_config`)."""
    check_framework_config(read_config(config, SttConfig))


def programs(config) -> list[ProgramSection]:
    """The sections of ``python -m experiments plan skill-compat-stt``, declared (the command formats them): the
    framework games' JAX programs and their calls (upper bounds)."""
    from skill_compat.plan import framework_plan

    return [framework_plan(read_config(config, SttConfig), "skill-compat-stt")]


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, programs=programs, results=results,
                        growing_leaves=GROWING_LEAVES)
