"""``python -m experiments run NAME [--preset tiny|paper] [--workdir DIR] [key=value ...]``.

``python -m experiments report [--check]`` builds the READMEs' result tables from the committed ``results/``
(:mod:`experiments.common.report`); ``python -m experiments collect NAME WORKDIR`` copies a run's results.json, summary and
figures into ``results/NAME/`` to be committed.

``python -m experiments plan NAME [--preset paper] [--devices N] [--device-memory-gib GIB] [key=value ...]`` compiles
an experiment's programs ahead of time and prints what they cost (the sections its launcher declares, formatted
here); with ``--devices N`` on N emulated CPU devices (a pod's shape: memory a device, the chunk a device's self-play
games would be played in under the budget, or "does not fit").

On several hosts, start ``run`` once per process with ``--coordinator HOST:PORT --num-processes N --process-id I``
(or ``--distributed``), as for ``python -m zerolab train``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import pathlib
import pkgutil
import re
import subprocess
import sys
from typing import TYPE_CHECKING

from experiments.common.experiment import experiment
from experiments.configs import OPTIONAL_PRESETS, PRESETS, config_module_name, load_config
from zerolab import configure_logging
from zerolab.frontends import (
    add_allow_config_change_argument, add_distributed_arguments, add_host_devices_argument, split_overrides,
    start_distributed, start_host_devices,
)
from zerolab.training import (
    RunDirectoryError,
    RunDirectoryOwner,
    TrainingInterrupted,
    check_run_config,
    check_run_directory,
    config_changes_allowed,
    file_system_error,
    growing_leaves,
    interrupt_on_sigterm,
    interruption_report,
)

if TYPE_CHECKING:
    from zerolab import ProgramSection
    from zerolab.training import RunPlan


def available_experiments() -> list[str]:
    import experiments

    return sorted(
        module.name.replace("_", "-")
        for module in pkgutil.iter_modules(experiments.__path__)
        if not module.name.startswith("_") and module.name != "configs"
        and importlib.util.find_spec(config_module_name(module.name)) is not None
    )


def experiment_summary(name: str) -> str:
    """The first sentence of experiment ``name``'s config docstring (what it runs), read without importing JAX."""
    module = importlib.import_module(config_module_name(name))
    text = " ".join((module.__doc__ or "").split())
    text = re.sub(rf"^(Config of ``python -m experiments run {name}``|{name}\b)\s*:?\s*", "", text)
    first = re.split(r"(?<=[a-z0-9)])\.\s+(?=[A-Z`])", text)[0].rstrip(".")
    return (first[:117] + "…" if len(first) > 118 else first + ".") if first else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run one experiment end to end")
    run.add_argument("name", help="experiment name (see `python -m experiments list`)")
    run.add_argument("--preset", default="tiny", choices=PRESETS + OPTIONAL_PRESETS)
    run.add_argument("--workdir", default=None, help="run directory (default runs/NAME); rerunning resumes")
    run.add_argument("overrides", nargs="*", help="config overrides key=value")
    add_allow_config_change_argument(run)
    add_distributed_arguments(run)
    add_host_devices_argument(run)
    plan = commands.add_parser("plan", help="compile an experiment's training programs and print what they cost")
    plan.add_argument("name", help="experiment name (see `python -m experiments list`)")
    plan.add_argument("--preset", default="paper", choices=PRESETS + OPTIONAL_PRESETS)
    plan.add_argument("--accelerator", default="h100", help="accelerator of the time estimates (default h100)")
    plan.add_argument("--devices", type=int, default=None,
                      help="compile at a pod shape: sharded over N emulated CPU devices (memory is then a device's)")
    plan.add_argument("--device-memory-gib", type=float, default=None,
                      help="a device's memory budget: the self-play chunk is chosen under it, and a program over it "
                           "does not fit (default: selfplay.device_memory_gib, else 80)")
    plan.add_argument("overrides", nargs="*", help="config overrides key=value")
    commands.add_parser("list", help="list the experiments")
    report = commands.add_parser("report", help="build the READMEs' result tables from the committed results/")
    report.add_argument("--check", action="store_true",
                        help="write nothing; list the tables that differ from the generated ones (exit status 1)")
    collect = commands.add_parser("collect", help="copy a run's results.json, summary and figures into results/NAME")
    collect.add_argument("name", help="experiment name, or NAME.RUN: one of several runs of it kept side by side "
                                      "(results/NAME.RUN/, named so in results/tables.toml)")
    collect.add_argument("workdir", help="the run directory")
    args, extra = parser.parse_known_args(argv)
    if args.command == "plan":
        args.overrides = args.overrides + extra
    else:
        args.overrides = split_overrides(parser, args, extra)
    configure_logging()

    if args.command == "list":
        names = available_experiments()
        width = max(map(len, names))
        for name in names:
            print(f"{name:<{width}}  {experiment_summary(name)}")
        return 0
    if args.command in ("report", "collect"):
        from experiments.common import report, results

        try:
            if args.command == "report":
                return report.report(check=args.check)
            collected = args.name.partition(".")[0]
            if collected not in available_experiments():
                raise ValueError(f"unknown experiment {collected!r}; `python -m experiments list` names them")
            for path in results.collect(args.workdir, report.RESULTS_DIRECTORY / args.name, collected):
                print(f"kept {path.relative_to(results.ROOT)}")
            return 0
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    if args.command == "plan":
        if args.devices is not None:
            if args.devices < 1:
                print(f"error: --devices must be at least 1, got {args.devices}", file=sys.stderr)
                return 2
            status = emulate_cpu_devices(args.devices, sys.argv[1:] if argv is None else list(argv))
            if status is not None:
                return status
        return plan_experiment(args.name, args.preset, args.overrides, args.accelerator, args.devices,
                               args.device_memory_gib)
    workdir = pathlib.Path(args.workdir or pathlib.Path("runs") / args.name)
    interrupt_on_sigterm()  # a scheduler's SIGTERM ends the run as Ctrl-C does: one line on how to resume
    with contextlib.ExitStack() as held:
        try:
            start_distributed(args)
            start_host_devices(args)
            config = load_config(args.name, args.preset, args.overrides)
            check_experiment_config(args.name, config)
            check_run_directory(workdir, "--workdir")
            # one owner per run directory (process 0 of several): a busy one is refused before anything is written
            owner = RunDirectoryOwner(workdir, "--workdir") if is_first_process() else None
            if owner is not None:
                held.enter_context(owner.claim(create=False))
            declared = experiment(args.name)
            with growing_leaves(declared.growing_leaves):  # the experiment's own counts a rerun may raise
                record = check_run_config(workdir, config, args.allow_config_change)
        except (ValueError, FileNotFoundError) as error:  # a ConfigError, a RunDirectoryError, a missing input run
            print(f"error: {error}", file=sys.stderr)
            return 2
        command = ["python", "-m", "experiments", *(sys.argv[1:] if argv is None else argv)]
        return run_experiment(args.name, config, workdir, record, owner, args.allow_config_change, command,
                              args.preset)


def run_experiment(name: str, config, workdir: pathlib.Path, record, owner, allow_config_change: bool,
                   command: list[str] | None = None, preset: str = "tiny") -> int:
    """Runs the checked experiment ``name`` in ``workdir`` (held by ``owner``, where this process writes the record)
    and prints its summary; the exit status.  An experiment that declares ``results`` has its headline quantities
    written to ``workdir/results.json`` (:func:`experiments.common.results.write_results`) by the first process."""
    declared = experiment(name)
    try:
        with config_changes_allowed(allow_config_change), growing_leaves(declared.growing_leaves):
            if owner is not None:
                workdir.mkdir(parents=True, exist_ok=True)
                owner.take()
                record.write()
            summary = declared.run(config, workdir)
            if owner is not None and declared.results is not None:
                from experiments.common.results import write_results

                write_results(workdir, name, declared.results(summary, config), command or [], preset)
    except (TrainingInterrupted, KeyboardInterrupt) as error:  # a signal: one line on how to resume
        line, status = interruption_report(error, str(workdir))
        print(line, file=sys.stderr)
        return status
    except RunDirectoryError as error:  # one of the experiment's training runs records other settings
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - a file-system failure mid-run is reported in one line
        message = file_system_error(error, workdir)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2, default=str))
    return 0


def is_first_process() -> bool:
    """Whether this process writes the experiment's record: the only one, or process 0 of several."""
    if "jax" not in sys.modules:
        return True
    import jax

    return jax.process_index() == 0


def training_configs(name: str, config) -> dict:
    """The training runs of experiment ``name`` with the core's loop
    (:meth:`experiments.common.experiment.Experiment.runs_to_train`)."""
    return experiment(name).runs_to_train(config, name)


def check_experiment_config(name: str, config) -> None:
    """Experiment ``name``'s config read and checked before its run directory is made: every training run it runs
    with the core's loop (:func:`zerolab.training.check_training_config`), then its declared ``check_config``
    (sections only it reads).  A value out of range or an unknown name is a ValueError naming the key (the caller
    prints it, exit status 2)."""
    from zerolab.training import check_training_config

    declared = experiment(name)
    for run_config in declared.runs_to_train(config, name).values():
        check_training_config(run_config)
    if declared.check_config is not None:
        declared.check_config(config)


def emulate_cpu_devices(count: int, argv: list[str]) -> int | None:
    """Gives this command ``count`` CPU devices (:func:`zerolab.devices.request_host_devices`): where JAX's backend
    has not started yet (``python -m experiments`` starts it only to plan) the plan goes on in this process
    (``None``).  Where a program whose backend has started calls :func:`main` (a test), unless it has ``count`` CPU
    devices the command runs again in a child process with the flag, and its exit status is returned."""
    from zerolab import request_host_devices

    if request_host_devices(count) >= count:
        return None
    root = str(pathlib.Path(__file__).resolve().parents[1])
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "experiments", *argv], env=environment).returncode


def format_section(section: RunPlan | ProgramSection, accelerator: str) -> str:
    """One section of a plan as text: a core training run's plan (a :class:`zerolab.training.RunPlan`, its time
    estimates on ``accelerator``) or an experiment's own programs (a :class:`zerolab.ProgramSection`)."""
    from zerolab.training import RunPlan, format_plan, format_programs

    return format_plan(section, accelerator) if isinstance(section, RunPlan) else format_programs(section)


def plan_experiment(name: str, preset: str, overrides: list[str], accelerator: str, num_devices: int | None = None,
                    device_memory_gib: float | None = None) -> int:
    """``python -m experiments plan NAME``: the sections the experiment declares (its ``programs``: experiments whose
    programs are not the core's training loop; on one device, unless it ``plans_pod_shape``: then at ``num_devices``
    and ``device_memory_gib`` as well), else each training run's programs (:func:`zerolab.training.plan_training_run`:
    on ``num_devices`` CPU devices where given, under a budget of ``device_memory_gib`` a device), compiled, formatted
    (:func:`format_section`) and printed."""
    from zerolab.training import check_accelerator, plan_training_run

    try:
        check_accelerator(accelerator)
        config = load_config(name, preset, overrides)
        declared = experiment(name)
        if declared.programs is not None:  # an experiment of other programs than the core's training loop
            if declared.plans_pod_shape:  # it plans a core training run too
                sections = declared.programs(config, num_devices=num_devices, device_memory_gib=device_memory_gib)
            else:
                if num_devices is not None or device_memory_gib is not None:
                    print(f"(--devices and --device-memory-gib plan the core's training runs; {name} plans its own "
                          f"programs, on one device)", flush=True)
                sections = declared.programs(config)
            print("\n\n".join(format_section(section, accelerator) for section in sections), flush=True)
            return 0
        runs = declared.runs_to_train(config, name)
        if not runs:
            print(f"{name} trains no network with the core's loop: its {preset} preset has no training programs to "
                  f"plan")
            return 1
        for label, run_config in runs.items():
            print(format_section(plan_training_run(run_config, label, num_devices, device_memory_gib), accelerator),
                  flush=True)
    except ValueError as error:  # a ConfigError too
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
