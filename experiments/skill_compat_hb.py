"""skill-compat-hb: the focal brains against Stockfish's team in hand and brain (see
:mod:`experiments.common.skill_compat`); rerunning on the same directory plays only the missing games."""

from experiments.common.skill_compat import framework_experiment
from experiments.configs.skill_compat_hb import HbConfig

#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = framework_experiment(HbConfig, "skill-compat-hb")
