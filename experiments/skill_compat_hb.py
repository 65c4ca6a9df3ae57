"""skill-compat-hb: the focal brains against Stockfish's team in hand and brain (see
:mod:`experiments.common.skill_compat`); rerunning on the same directory plays only the missing games."""

from experiments.common.skill_compat import FRAMEWORK_GROWING_LEAVES, run_framework_experiment
from skill_compat.experiment import check_config as check_framework_config


GROWING_LEAVES = FRAMEWORK_GROWING_LEAVES  # raised on a rerun without --allow-config-change

def check_config(config) -> None:
    """Every key, before the run directory is made (:func:`skill_compat.experiment.check_config`)."""
    check_framework_config(config)


def plan(config) -> str:
    """``python -m experiments plan skill-compat-hb``: the framework games' JAX programs and their calls (upper bounds)."""
    from skill_compat.plan import framework_plan

    return framework_plan(config, "skill-compat-hb")


def run(config, workdir):
    return run_framework_experiment(config, workdir)
