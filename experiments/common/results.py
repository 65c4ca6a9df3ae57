"""An experiment's headline numbers as a file: ``results.json``, written by ``python -m experiments run``.

A runner that has headline numbers defines ``results(summary, config) -> dict[str, Quantity]``; after its run the
launcher writes them to ``<workdir>/results.json`` with where they come from (:func:`provenance`: the command, the
commit, the date, the machine) and the figures the run drew.  The runs behind the READMEs' rows are kept in the
repository under ``results/<experiment>/`` (``python -m experiments collect``: results.json, the summary, the Elo table
and the figures, never checkpoints), and ``python -m experiments report`` builds the READMEs' tables from them
(:mod:`experiments.common.report`).

Every ± says what it is: :class:`Quantity` carries the error's kind (one standard error or two σ), what it is over
(games, seeds, boards, …), whether the two arms it compares were paired, and n.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import os
import pathlib
import platform
import shlex
import subprocess
from typing import Any, Mapping, Sequence

RESULTS_FILE = "results.json"
#: The small files of a run that ``collect`` keeps beside its results.json (figures: every ``figures/*.png``).
KEPT_FILES = ("results.json", "summary.json", "elo.txt")
#: What a ± can be: one standard error, or two standard deviations of the estimate (a ~95 % interval).
ERROR_KINDS = ("se", "2σ")
#: Units of a difference between two arms: printed with their sign.
SIGNED_UNITS = ("Elo", "win points", "score difference", "difference")
ROOT = pathlib.Path(__file__).resolve().parents[2]  # the repository


@dataclasses.dataclass(frozen=True)
class Quantity:
    """One headline number of a run.

    Attributes:
      label: what it is, as a table row names it ("5×5-trained vs untrained on 8×8, score").
      value: the estimate.
      error: its ± (``None`` for a count or a time: no error).
      error_kind: ``"se"`` (one standard error) or ``"2σ"``; ignored without ``error``.
      over: the unit of replication the error is over: ``"games"``, ``"seeds"``, ``"boards"``, ``"positions"``…
      n: how many of them.
      paired: whether the ± is of a paired difference (both arms on the same boards, openings, seeds or bitstrings).
      unit: how to read ``value``: ``"score"``, ``"Elo"`` (a difference, signed), ``"rating"`` (an Elo rating),
        ``"accuracy"``, ``"s"``, ``"win points"``, ``"score difference"`` and ``"difference"`` (differences, signed)…
      digits: decimals to print.
    """

    label: str
    value: float
    error: float | None = None
    error_kind: str = "se"
    over: str = "games"
    n: int = 0
    paired: bool = False
    unit: str = ""
    digits: int = 3

    def __post_init__(self):
        if self.error is not None and self.error_kind not in ERROR_KINDS:
            raise ValueError(f"{self.label}: error_kind must be one of {ERROR_KINDS}, got {self.error_kind!r}")
        if self.n < 0:
            raise ValueError(f"{self.label}: n must be >= 0, got {self.n}")

    def describe_error(self) -> str:
        """What the ± is, in words: "se over 128 games", "2σ, paired, over 4,452 boards"."""
        if self.error is None:
            return ""
        paired = ", paired," if self.paired else ""
        return f"{self.error_kind}{paired} over {self.n:,} {self.over}"

    def format(self) -> str:
        """``value ± error (what the ± is)``, signed where the unit is a difference (Elo)."""
        sign = "+" if self.unit in SIGNED_UNITS else ""
        text = f"{self.value:{sign},.{self.digits}f}"
        if self.error is not None and math.isfinite(self.error):
            text += f" ± {self.error:,.{self.digits}f}"
        unit = f" {self.unit}" if self.unit in ("Elo", "s", "%", "win points") else ""
        described = self.describe_error()
        return f"{text}{unit}" + (f" ({described})" if described else "")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "") -> Quantity:
        unknown = sorted(set(data) - {field.name for field in dataclasses.fields(cls)})
        if unknown or "label" not in data or "value" not in data:
            raise ValueError(f"{where}: a quantity needs 'label' and 'value' and knows "
                             f"{[field.name for field in dataclasses.fields(cls)]}; got {sorted(data)}")
        return cls(**data)


def score_quantity(label: str, wins: int, draws: int, losses: int) -> Quantity:
    """A match's score from its first player's side, ``(wins + draws / 2) / games``, ± one se over its games
    (:func:`zerolab.evaluation.score_standard_error`)."""
    from zerolab.evaluation import score_standard_error

    games = wins + draws + losses
    if games <= 0:
        raise ValueError(f"{label}: a score needs at least one game, got W/D/L {wins}/{draws}/{losses}")
    return Quantity(label, (wins + draws / 2) / games, score_standard_error(wins, draws, losses), "se", "games", games,
                    unit="score")


def difference_quantity(label: str, first: Quantity, second: Quantity) -> Quantity:
    """``first − second`` of two runs' quantities, each estimated on its own games (or boards, seeds): the ± is
    √(first² + second²), the error of a difference of independent estimates, of the kind both errors are
    (``"se"`` or ``"2σ"``), over both runs' units, not paired.  Raises ValueError for quantities whose ± cannot be
    combined so (one without an error, errors of two kinds, other units)."""
    if first.error is None or second.error is None or first.error_kind != second.error_kind:
        raise ValueError(f"{label}: a difference needs both quantities with errors of one kind, got "
                         f"{first.format()!r} and {second.format()!r}")
    if (first.unit, first.over) != (second.unit, second.over):
        raise ValueError(f"{label}: {first.label!r} is in {first.unit or 'no unit'} over {first.over}, "
                         f"{second.label!r} in {second.unit or 'no unit'} over {second.over}")
    unit = first.unit if first.unit in SIGNED_UNITS else "score difference" if first.unit == "score" else "difference"
    return Quantity(label, first.value - second.value, math.hypot(first.error, second.error), first.error_kind,
                    f"{first.over} of two runs", first.n + second.n, False, unit, max(first.digits, second.digits))


@dataclasses.dataclass(frozen=True)
class Results:
    """A run's ``results.json``: its headline quantities and where they come from."""

    experiment: str
    quantities: Mapping[str, Quantity]
    provenance: Mapping[str, Any]
    figures: Sequence[str] = ()

    def to_json(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "provenance": dict(self.provenance), "figures": list(self.figures),
                "quantities": {key: quantity.to_json() for key, quantity in self.quantities.items()}}

    @classmethod
    def read(cls, path: str | pathlib.Path) -> Results:
        """``results.json`` at ``path``; a file that is not one is a ValueError naming it."""
        path = pathlib.Path(path)
        try:
            data = json.loads(path.read_text())
            quantities = {key: Quantity.from_json(value, f"{path}: {key}")
                          for key, value in data["quantities"].items()}
            return cls(data["experiment"], quantities, data["provenance"], tuple(data.get("figures", ())))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{path} is not an experiment's results.json ({type(error).__name__}: {error})") from None

    def write(self, path: str | pathlib.Path) -> pathlib.Path:
        path = pathlib.Path(path)
        path.write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n")
        return path


def git_commit(root: pathlib.Path = ROOT) -> str:
    """The commit the code ran at, ``+changes`` when tracked files differed from it; ``"unknown"`` outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                 capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+changes" if changed else "")


def machine_description() -> str:
    """The CPU model and its cores, and the accelerator JAX computes on (``"cpu × 1"``, ``"gpu × 8"``)."""
    model = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        import jax

        device = f"{jax.devices()[0].platform} × {jax.device_count()} ({jax.devices()[0].device_kind})"
    except Exception:  # noqa: BLE001 - a machine without a working JAX still has a CPU to name
        device = "no JAX device"
    return f"{model}, {cores} cores; {device}"


def provenance(command: Sequence[str], preset: str) -> dict[str, Any]:
    """Where a run's numbers come from: its command line, preset, commit, UTC date and machine."""
    return {"command": shlex.join(command), "preset": preset, "commit": git_commit(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine_description()}


def write_results(workdir: str | pathlib.Path, experiment: str, quantities: Mapping[str, Quantity],
                  command: Sequence[str], preset: str) -> pathlib.Path:
    """``<workdir>/results.json``: ``quantities`` with their provenance and the run's ``figures/*.png``."""
    workdir = pathlib.Path(workdir)
    figures = sorted(str(path.relative_to(workdir)) for path in (workdir / "figures").glob("*.png"))
    for key, quantity in quantities.items():
        if not isinstance(quantity, Quantity):
            raise TypeError(f"{experiment}'s results(): {key!r} is a {type(quantity).__name__}, not a Quantity")
    return Results(experiment, dict(quantities), provenance(command, preset), tuple(figures)).write(
        workdir / RESULTS_FILE)


def collect(workdir: str | pathlib.Path, destination: str | pathlib.Path,
            experiment: str | None = None) -> list[pathlib.Path]:
    """Copies a run's small files (:data:`KEPT_FILES` and ``figures/*.png``) from ``workdir`` to ``destination`` (the
    repository's ``results/<experiment>/``, or ``results/<experiment>.<run>/`` for one of several runs); a run
    without a results.json, or whose results.json is another experiment's than ``experiment``, is a ValueError."""
    workdir, destination = pathlib.Path(workdir), pathlib.Path(destination)
    found = Results.read(workdir / RESULTS_FILE)  # a run that wrote no results (or a broken one) is refused here
    if experiment is not None and found.experiment != experiment:
        raise ValueError(f"{workdir / RESULTS_FILE} holds the results of {found.experiment!r}, not {experiment!r}")
    sources = [workdir / name for name in KEPT_FILES if (workdir / name).is_file()]
    sources += sorted((workdir / "figures").glob("*.png"))
    copied = []
    for source in sources:
        target = destination / source.relative_to(workdir)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
        copied.append(target)
    return copied
