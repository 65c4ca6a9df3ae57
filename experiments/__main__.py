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

from zerolab.config import ConfigError, PRESETS, load_config
from zerolab.cli import add_distributed_arguments, split_overrides, start_distributed
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
    run.add_argument("--preset", default="tiny", choices=PRESETS)
    run.add_argument("--workdir", default=None, help="run directory (default runs/NAME); rerunning resumes")
    run.add_argument("overrides", nargs="*", help="config overrides key=value")
    add_distributed_arguments(run)
    commands.add_parser("list", help="list the experiments")
    args, extra = parser.parse_known_args(argv)
    args.overrides = split_overrides(parser, args, extra)
    configure_logging()

    if args.command == "list":
        print("\n".join(available_experiments()))
        return 0
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


if __name__ == "__main__":
    sys.exit(main())
