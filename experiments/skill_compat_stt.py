"""skill-compat-stt: the focal seniors against Stockfish's team in stochastic tag team (see
:mod:`experiments.common.skill_compat`); rerunning on the same directory plays only the missing games."""

from experiments.common.skill_compat import framework_experiment
from experiments.configs.skill_compat_stt import SttConfig

#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = framework_experiment(SttConfig, "skill-compat-stt")
