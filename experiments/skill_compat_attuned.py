"""skill-compat-attuned: train the attuned senior, then evaluate it (see :mod:`skill_compat.attuned_experiment`);
rerunning on the same directory resumes training and plays only the missing games."""

from skill_compat.attuned_experiment import run_attuned_experiment


def run(config, workdir):
    return run_attuned_experiment(config, workdir)
