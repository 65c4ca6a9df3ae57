"""Runs every launcher's ``tiny`` preset in two source trees and compares what the runs wrote, exactly.

``python scripts/compare_tiny_metrics.py --before TREE --after TREE [--root DIR] [--labels BEFORE AFTER]
[--override NAME:KEY=VALUE ...] [--ignore REGEX ...] [NAME ...]``

Each launcher (``python -m experiments list`` of the ``--after`` tree, or the NAMEs given) runs one at a time, in each
tree, as ``python -m experiments run NAME --preset tiny --workdir ROOT/LABEL/NAME`` (the tree as working
directory and ``PYTHONPATH``).  A run already finished under ``ROOT`` (its ``exit_status`` file) is not run again, so
an interrupted comparison resumes and a tree's runs serve several comparisons (label each tree by its commit; a
run resumed or reused must have been made with the same overrides).  ``--override NAME:KEY=VALUE`` adds a config
override to launcher NAME's runs in both trees (a smaller run on a loaded machine, e.g. ``quickstart:iterations=2``).  The two workdirs are then compared file by file:

* JSON and JSON-lines files (``metrics.jsonl``, ``summary.json``, ``matches.json``, ``elo.json``, ...): every value
  equal, floats bit for bit, after dropping what measures the machine rather than the run (keys ending in ``_s``,
  ``_per_s``, ``_seconds`` or ``_gib``, beginning with ``seconds_`` or holding ``_per_s_`` or ``_wall_s_`` (``training_wall_s_resnet``), ``device``) and writing each workdir's path as ``<workdir>``;
* text records (``.pgn``, ``.sgf``, ``.txt``, ``.csv``): every line equal but PGN/SGF dates;
* ``config.json`` is reported apart (a renamed config key changes it, not the run).

Checkpoints, replay windows and TensorBoard files (``checkpoints/``, ``replay/``, ``tb/``) are not compared: the
metrics the run logged from them are.  Differences whose line matches an ``--ignore`` regular expression are
counted apart, not shown: what is not reproducible by design, e.g. ``vs-engine|engine_result`` for games against
Stockfish or Fairy-Stockfish at a ``Skill Level`` below 20, whose move choice draws from a PRNG seeded by the clock
(two processes given the same position and node limit play different moves).  Prints one line a launcher:
``identical``, ``different`` with the first differences, or ``not run`` with the exit status; exits 1 when any
launcher differs or failed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import time
from collections.abc import Iterator

MACHINE_KEY = re.compile(r"(_s|_per_s|_seconds|_gib)$|^(device|seconds|wall_seconds)$|^seconds_|_per_s_|_wall_s_")
SKIPPED_DIRECTORIES = frozenset({"checkpoints", "replay", "tb"})
JSON_SUFFIXES = frozenset({".json", ".jsonl"})
TEXT_SUFFIXES = frozenset({".pgn", ".sgf", ".txt", ".csv"})
DATE_LINE = re.compile(r"^\[Date |DT\[")


def experiment_names(tree: pathlib.Path, python: str) -> list[str]:
    """The names ``python -m experiments list`` of ``tree`` prints (each line's first word; a description follows)."""
    output = subprocess.run([python, "-m", "experiments", "list"], cwd=tree, check=True, capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(tree)}).stdout
    return [line.split()[0] for line in output.splitlines() if line.strip()]


def run_tiny(tree: pathlib.Path, name: str, workdir: pathlib.Path, python: str, timeout: float,
             overrides: list[str]) -> int:
    """Runs ``name``'s tiny preset from ``tree`` into ``workdir`` (once: a finished run's exit status is reused)."""
    status_file = workdir / "exit_status"
    if status_file.exists():
        return int(status_file.read_text())
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open(workdir / "run.log", "w") as log:
        try:
            status = subprocess.run(["nice", "-n", "10", python, "-m", "experiments", "run", name, "--preset", "tiny",
                                     "--workdir", str(workdir), *overrides], cwd=tree, stdout=log, stderr=subprocess.STDOUT,
                                    env={**os.environ, "PYTHONPATH": str(tree)}, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            status = 124
    (workdir / "wall_seconds").write_text(f"{time.perf_counter() - started:.1f}\n")
    status_file.write_text(f"{status}\n")
    return status


def normalised(value, workdir: str):
    """``value`` without machine measurements, ``workdir`` written as ``<workdir>``."""
    if isinstance(value, dict):
        return {key: normalised(item, workdir) for key, item in value.items() if not MACHINE_KEY.search(str(key))}
    if isinstance(value, list):
        return [normalised(item, workdir) for item in value]
    if isinstance(value, str):
        return value.replace(workdir, "<workdir>")
    return value


def differences(before, after, where: str, labelled: bool = True) -> Iterator[str]:
    """Where ``before`` and ``after`` differ (floats bit for bit; NaN equals NaN); entries of nested lists are named
    by :func:`entry_label` (``labelled``; a file's own records are not, or a pattern naming a field's value would
    match every line of a file)."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            if key not in before or key not in after:
                yield f"{where}.{key}: only {'after' if key in after else 'before'}"
            else:
                yield from differences(before[key], after[key], f"{where}.{key}")
    elif isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            yield f"{where}: {len(before)} entries before, {len(after)} after"
        for index, (left, right) in enumerate(zip(before, after)):
            yield from differences(left, right, f"{where}[{index}{entry_label(left) if labelled else ''}]")
    elif isinstance(before, float) and isinstance(after, float) and math.isnan(before) and math.isnan(after):
        return
    elif type(before) is not type(after) or before != after:
        yield f"{where}: {before!r} before, {after!r} after"


def entry_label(entry) -> str:
    """A list entry's text fields (`` fairy-stockfish:skill=-20|iteration-2``: the players of a result), so a
    difference names what it is about; empty for other entries."""
    texts = [value for value in entry.values() if isinstance(value, str)] if isinstance(entry, dict) else []
    return " " + "|".join(texts) if texts else ""


def read_records(path: pathlib.Path, workdir: pathlib.Path) -> list:
    """A JSON file as one record, a JSON-lines file as its lines; text files as their lines but dates."""
    text = path.read_text(errors="replace")
    if path.suffix == ".jsonl":
        return [normalised(json.loads(line), str(workdir)) for line in text.splitlines() if line.strip()]
    if path.suffix == ".json":
        return [normalised(json.loads(text), str(workdir))]
    return [line.replace(str(workdir), "<workdir>") for line in text.splitlines() if not DATE_LINE.match(line)]


def compared_files(workdir: pathlib.Path) -> dict[str, pathlib.Path]:
    """The files of a run compared, by path relative to ``workdir``."""
    files = {}
    for path in sorted(workdir.rglob("*")):
        relative = path.relative_to(workdir)
        if (path.is_file() and not SKIPPED_DIRECTORIES & set(relative.parts[:-1])
                and path.suffix in JSON_SUFFIXES | TEXT_SUFFIXES):
            files[str(relative)] = path
    return files


def compare_workdirs(before: pathlib.Path, after: pathlib.Path) -> tuple[list[str], list[str]]:
    """(differences in what the runs wrote, differences in ``config.json``) between two workdirs."""
    before_files, after_files = compared_files(before), compared_files(after)
    found, config = [], []
    for relative in sorted(set(before_files) | set(after_files)):
        if relative not in before_files or relative not in after_files:
            found.append(f"{relative}: only {'after' if relative in after_files else 'before'}")
            continue
        listed = config if pathlib.Path(relative).name == "config.json" else found
        listed.extend(differences(read_records(before_files[relative], before),
                                  read_records(after_files[relative], after), relative, labelled=False))
    return found, config


def launcher_overrides(items: list[str]) -> dict[str, list[str]]:
    """``['quickstart:iterations=2', ...]`` → ``{'quickstart': ['iterations=2'], ...}``."""
    overrides: dict[str, list[str]] = {}
    for item in items:
        name, separator, override = item.partition(":")
        if not separator or "=" not in override:
            raise SystemExit(f"--override {item!r}: expected NAME:KEY=VALUE")
        overrides.setdefault(name, []).append(override)
    return overrides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, type=pathlib.Path, help="the source tree before the change")
    parser.add_argument("--after", required=True, type=pathlib.Path, help="the source tree after the change")
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path("/tmp/tiny-metrics"),
                        help="where the runs go: ROOT/LABEL/NAME")
    parser.add_argument("--labels", nargs=2, default=("before", "after"), metavar=("BEFORE", "AFTER"),
                        help="the trees' directories under ROOT (e.g. their commits)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter the launchers run with")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds a run may take")
    parser.add_argument("--shown", type=int, default=8, help="differences shown a launcher")
    parser.add_argument("--override", action="append", default=[], metavar="NAME:KEY=VALUE",
                        help="a config override of launcher NAME's runs, in both trees (repeatable)")
    parser.add_argument("--ignore", action="append", default=[], metavar="REGEX",
                        help="differences matching REGEX are counted apart and do not fail (repeatable)")
    parser.add_argument("names", nargs="*", help="launchers to compare (default: every one the after tree lists)")
    args = parser.parse_args(argv)
    before_tree, after_tree = args.before.resolve(), args.after.resolve()
    names = args.names or experiment_names(after_tree, args.python)
    root, (before_label, after_label) = args.root.resolve(), args.labels
    overrides = launcher_overrides(args.override)
    failed = False
    for name in names:
        before, after = root / before_label / name, root / after_label / name
        statuses = [run_tiny(tree, name, workdir, args.python, args.timeout, overrides.get(name, []))
                    for tree, workdir in ((before_tree, before), (after_tree, after))]
        if any(statuses):
            print(f"{name}: not run (exit status before {statuses[0]}, after {statuses[1]})", flush=True)
            failed = True
            continue
        found, config = compare_workdirs(before, after)
        ignored = [line for line in found if any(re.search(pattern, line) for pattern in args.ignore)]
        found = [line for line in found if line not in ignored]
        note = f" (config.json: {len(config)} differences, e.g. {config[0]})" if config else ""
        note += f" ({len(ignored)} differences ignored by --ignore)" if ignored else ""
        if found:
            failed = True
            print(f"{name}: different, {len(found)} differences{note}", flush=True)
            for line in found[:args.shown]:
                print(f"    {line}", flush=True)
        else:
            print(f"{name}: identical{note}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
