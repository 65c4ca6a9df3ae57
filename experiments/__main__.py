"""``python -m experiments run NAME [--preset tiny|paper] [--workdir DIR] [key=value ...]``.

On several hosts, start ``run`` once per process with ``--coordinator HOST:PORT --num-processes N --process-id I``
(or ``--distributed``), as for ``python -m zerolab train``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pathlib
import pkgutil
import sys

from zerolab.config import OPTIONAL_PRESETS, PRESETS, ConfigError, load_config
from zerolab.frontends.cli import add_distributed_arguments, split_overrides, start_distributed
from zerolab.logs import configure_logging


def available_experiments() -> list[str]:
    import experiments

    return sorted(
        module.name.replace("_", "-")
        for module in pkgutil.iter_modules(experiments.__path__)
        if not module.name.startswith("_") and module.name != "configs"
        and importlib.util.find_spec(f"experiments.configs.{module.name}") is not None
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run one experiment end to end")
    run.add_argument("name", help="experiment name (see `python -m experiments list`)")
    run.add_argument("--preset", default="tiny", choices=PRESETS + OPTIONAL_PRESETS)
    run.add_argument("--workdir", default=None, help="run directory (default runs/NAME); rerunning resumes")
    run.add_argument("overrides", nargs="*", help="config overrides key=value")
    add_distributed_arguments(run)
    plan = commands.add_parser("plan", help="compile an experiment's training programs and print what they cost")
    plan.add_argument("name", help="experiment name (see `python -m experiments list`)")
    plan.add_argument("--preset", default="paper", choices=PRESETS + OPTIONAL_PRESETS)
    plan.add_argument("--accelerator", default="h100", help="accelerator of the time estimates (default h100)")
    plan.add_argument("overrides", nargs="*", help="config overrides key=value")
    commands.add_parser("list", help="list the experiments")
    args, extra = parser.parse_known_args(argv)
    if args.command == "plan":
        args.overrides = args.overrides + extra
    else:
        args.overrides = split_overrides(parser, args, extra)
    configure_logging()

    if args.command == "list":
        print("\n".join(available_experiments()))
        return 0
    if args.command == "plan":
        return plan_experiment(args.name, args.preset, args.overrides, args.accelerator)
    try:
        start_distributed(args)
        config = load_config(args.name, args.preset, args.overrides)
    except (ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    runner = importlib.import_module("experiments." + args.name.replace("-", "_"))
    workdir = pathlib.Path(args.workdir or pathlib.Path("runs") / args.name)
    summary = runner.run(config, workdir)
    print(json.dumps(summary, indent=2, default=str))
    return 0


TRAINING_SECTIONS = ("model", "search", "selfplay", "replay", "train")


def training_configs(name: str, config) -> dict:
    """The training runs of experiment ``name``: its runner's ``training_configs(config)`` where it has one (an
    experiment of several runs), else the config itself when it is a training config; ``{}`` for experiments that
    train nothing with the core's loop."""
    runner = importlib.import_module("experiments." + name.replace("-", "_"))
    if hasattr(runner, "training_configs"):
        return runner.training_configs(config)
    if all(section in config for section in TRAINING_SECTIONS):
        return {name: config}
    return {}


def plan_experiment(name: str, preset: str, overrides: list[str], accelerator: str) -> int:
    """``python -m experiments plan NAME``: the runner's own ``plan(config) -> str`` where it has one (experiments whose
    programs are not the core's training loop), else each training run's programs (:func:`zerolab.training.plan.plan_training_run`),
    compiled and printed."""
    from zerolab.training.plan import format_plan, plan_training_run

    try:
        config = load_config(name, preset, overrides)
        runner = importlib.import_module("experiments." + name.replace("-", "_"))
        if hasattr(runner, "plan"):  # an experiment of other programs than the core's training loop
            print(runner.plan(config), flush=True)
            return 0
        runs = training_configs(name, config)
    except (ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not runs:
        print(f"{name} trains no network with the core's loop: its {preset} preset has no training programs to plan")
        return 1
    for label, run_config in runs.items():
        print(format_plan(plan_training_run(run_config, label), accelerator), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
