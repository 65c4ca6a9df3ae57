"""The launchers' shared recipes: compare training runs, and train then rate.

* **Compare runs** (:class:`RunComparison`; alphagateau-speed, alphagateau-finetune, contempt-train): train several
  runs with the core's loop in ``workdir/<name>`` (:meth:`RunComparison.train`, each a :class:`TrainedRun`), rate
  their kept checkpoints together in one Elo book (:meth:`RunComparison.rate`: :func:`~zerolab.evaluation.rating.
  rate_contestants`, Algorithm 2 or a round robin, into ``elo.json``/``elo.txt``/``figures/elo.png`` and
  ``games/``), draw Elo against iteration and against training wall-clock (:meth:`RunComparison.plot`, one
  :class:`EloPanel` a column) and write ``summary.json`` (:meth:`RunComparison.write_summary`).  The launcher says
  which runs, which checkpoints are contestants (:meth:`RunComparison.contestant`, in the order they are rated) and
  what its summary adds.
* **Train then rate** (:func:`train_then_rate`; quickstart, sai-go): train one run, then play a fixed schedule of
  pairings between its kept checkpoints and references (:func:`~zerolab.evaluation.pairings.play_pairings` in the run
  directory: ``matches.json``, ``elo.json``, ``games/``); :meth:`RatedTraining.plot` draws the checkpoints' Elo curve
  beside training curves and :meth:`RatedTraining.write_summary` writes ``summary.json``.

Both resume: training where it stopped, the rating from the book (or ``matches.json``) it already holds.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import pathlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax

from zerolab.evaluation.book import EloBook
from zerolab.evaluation.pairings import Pairing, PairingRecord, play_pairings
from zerolab.evaluation.plots import EloPoint, new_figure, plot_elo_curves, plot_training_curves, save_figure
from zerolab.evaluation.checkpoints import (
    checkpoint_agent, checkpoint_steps, rated_steps, run_statistics, training_wall_seconds,
)
from zerolab.evaluation.rating import Contestant, EvaluationConfig, elo_series, rate_contestants, ratings_summary
from zerolab.games import Game
from zerolab.play.agents import AgentLoader
from zerolab.play.search_agents import SearchAgent
from zerolab.training import train
from zerolab.training.metrics import MetricsLog
from zerolab.training.runs import RunConfig

logger = logging.getLogger(__name__)

#: x label of an "Elo against training wall-clock" panel (:meth:`EloPanel.wall_clock`).
WALL_CLOCK_LABEL = "training wall-clock (minutes, compilation included)"

EloSeries = Mapping[str, Sequence[EloPoint]]


def device_description() -> str:
    """``"<platform> × <device count>"``, as summaries record the device."""
    return f"{jax.devices()[0].platform} × {jax.device_count()}"


# --- compare runs --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TrainedRun:
    """A training run of a comparison, read back from its directory.

    Attributes:
      name: the run's name (its directory's, and its checkpoints' ``<name>@<step>`` by default).
      directory: the run directory.
      steps: the checkpoint steps to rate: 0, every ``checkpoint.keep_period``-th and the last
        (:func:`~zerolab.evaluation.checkpoints.rated_steps`).
      wall_seconds: cumulative training wall-clock per iteration (0 → 0.0).
    """

    name: str
    directory: pathlib.Path
    steps: tuple[int, ...]
    wall_seconds: Mapping[int, float]

    @classmethod
    def read(cls, name: str, directory: str | pathlib.Path, keep_period: int) -> TrainedRun:
        directory = pathlib.Path(directory)
        return cls(name, directory, tuple(rated_steps(checkpoint_steps(directory), keep_period)),
                   training_wall_seconds(directory))

    @property
    def last_step(self) -> int:
        return self.steps[-1]

    def statistics(self) -> dict[str, Any]:
        """Parameters and training costs (:func:`~zerolab.evaluation.checkpoints.run_statistics`)."""
        return run_statistics(self.directory)


@dataclasses.dataclass(frozen=True)
class EloPanel:
    """One column of a comparison's figure: Elo curves with ±2σ bands.

    Attributes:
      series: ``{curve: [(x, rating, sigma)]}``.
      xlabel: the x axis.
      title: the panel's title.
      references: players drawn as horizontal lines (``{name: (rating, sigma)}``).
      mark_x: an x drawn as a dotted vertical line (where a stage starts), or None.
    """

    series: EloSeries
    xlabel: str
    title: str
    references: Mapping[str, tuple[float, float]] | None = None
    mark_x: float | None = None

    @classmethod
    def wall_clock(cls, series: EloSeries, title: str, references: Mapping[str, tuple[float, float]] | None = None,
                   mark_seconds: float | None = None) -> EloPanel:
        """Elo against cumulative training wall-clock: ``series``' x (seconds) drawn in minutes, the title followed by
        the device's platform, ``mark_seconds`` (seconds) as the dotted line."""
        return cls({name: [(x / 60, rating, sigma) for x, rating, sigma in points] for name, points in series.items()},
                   WALL_CLOCK_LABEL, f"{title} ({jax.devices()[0].platform})", references,
                   None if mark_seconds is None else mark_seconds / 60)


def interleaved_steps(runs: Sequence[TrainedRun]) -> list[tuple[TrainedRun, int]]:
    """``(run, step)`` of every run's rated checkpoints, by step, the runs in the given order at equal steps."""
    return [(run, step) for step in sorted(set().union(*(run.steps for run in runs)))
            for run in runs if step in run.steps]


class RunComparison:
    """Training runs compared by the Elo of their checkpoints (see the module docstring).

    ``config`` is the experiment's: its ``evaluation`` section (an
    :class:`~zerolab.evaluation.rating.EvaluationConfig`), ``seed`` (the rating's seed is ``seed + 1``) and ``progress``; ``workdir`` the experiment's directory (prepared);
    ``game`` the game the checkpoints are rated in; ``search_options`` (agent-spec text) change the rated agents'
    search beyond ``evaluation.search`` (:func:`~zerolab.evaluation.checkpoints.checkpoint_agent`).  Wall-clock
    counts from the comparison's creation.
    """

    def __init__(self, config: Any, workdir: str | pathlib.Path, game: Game,
                 search_options: Mapping[str, str] | None = None):
        self.started = time.perf_counter()
        self.config = config
        self.workdir = pathlib.Path(workdir)
        self.game = game
        self.evaluation = EvaluationConfig.from_config(config.evaluation)
        self.search_options = dict(search_options or {})
        self.contestants: list[Contestant] = []
        self.book: EloBook | None = None
        self.matches_played = 0
        self.rating_seconds = math.nan

    def train(self, name: str, training_config: Any) -> TrainedRun:
        """Trains ``training_config`` in ``workdir/<name>`` with the core's loop (resuming), and reads it back (its
        rated steps by the config's ``checkpoint.keep_period``)."""
        directory = self.workdir / name
        logger.info("training %s in %s", name, directory)
        train.run(training_config, directory)
        return TrainedRun.read(name, directory, RunConfig.from_config(training_config).checkpoint.keep_period)

    def agent(self, run: TrainedRun, step: int, name: str) -> SearchAgent:
        """Checkpoint ``step`` of ``run`` as a rated agent: ``evaluation.search``, then ``search_options``."""
        return checkpoint_agent(run.directory, step, self.game, self.evaluation, name, self.search_options)

    def contestant(self, run: TrainedRun, step: int, series: str, name: str | None = None, iteration_offset: int = 0,
                   wall_offset: float = 0.0) -> Contestant:
        """Checkpoint ``step`` of ``run`` as a contestant of the curve ``series``, named ``name`` (default
        ``<run>@<step>``), at x = ``iteration_offset + step`` and ``wall_offset`` + its training wall-clock."""
        name = name or f"{run.name}@{step}"
        return Contestant(name, series, iteration_offset + step,
                          wall_offset + run.wall_seconds.get(step, float("nan")),
                          lambda: self.agent(run, step, name))

    def rate(self, contestants: Sequence[Contestant]) -> EloBook:
        """Rates ``contestants`` in this order into ``workdir/elo.json`` (games in ``workdir/games``; the table in
        ``elo.txt``, the ladder in ``figures/elo.png``) and returns the book."""
        started = time.perf_counter()
        self.contestants = list(contestants)
        self.book, self.matches_played = rate_contestants(
            self.contestants, self.game, self.evaluation, self.workdir / "elo.json", self.workdir / "games",
            seed=int(self.config.seed) + 1, show_progress=bool(self.config.progress))
        self.rating_seconds = time.perf_counter() - started
        return self.book

    def series(self, x: str) -> dict[str, list[EloPoint]]:
        """``{series: [(x, rating, sigma)]}`` of the rated contestants, ``x`` their ``iteration`` or
        ``wall_seconds``."""
        return elo_series(self.book, self.contestants, x)

    def plot(self, filename: str, panels: Sequence[EloPanel]) -> pathlib.Path:
        """The panels side by side, saved as ``workdir/figures/<filename>``."""
        figure, axes = new_figure(columns=len(panels))
        for column, panel in enumerate(panels):
            plot_elo_curves(axes[0, column], panel.series, panel.xlabel, panel.references)
            if panel.mark_x is not None:
                axes[0, column].axvline(panel.mark_x, color="black", linestyle=":", linewidth=1)
            axes[0, column].set_title(panel.title)
        return save_figure(figure, self.workdir / "figures" / filename)

    def write_summary(self, fields: Mapping[str, Any], figure: pathlib.Path) -> dict[str, Any]:
        """``fields``, then the rating (``elo``, ``elo_table``, ``matches_played_now``, ``rating_wall_s``), ``figure``,
        ``device`` and ``wall_s``, written to ``workdir/summary.json``."""
        summary = {**fields, "elo": ratings_summary(self.book), "elo_table": self.book.format_table(),
                   "matches_played_now": self.matches_played, "rating_wall_s": self.rating_seconds,
                   "figure": str(figure), "device": device_description(),
                   "wall_s": time.perf_counter() - self.started}
        (self.workdir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
        return summary


# --- train then rate -----------------------------------------------------------------------------------------------

#: ``schedule(rated steps) -> (pairings, agents)``: the matches after training and their contestants' loaders.
Schedule = Callable[[list[int]], tuple[Sequence[Pairing], Mapping[str, AgentLoader]]]


@dataclasses.dataclass
class RatedTraining:
    """A run trained, then rated by a schedule of pairings (:func:`train_then_rate`).

    Attributes:
      workdir: the run directory (the pairings' ``matches.json``, ``elo.json`` and ``games/`` too).
      records: its ``metrics.jsonl`` records.
      steps: the rated checkpoint steps: 0, every ``checkpoint.keep_period``-th (or only the last) and the last.
      book: the Elo book of every recorded pairing.
      matches: the pairings' records by label.
      started: when the recipe started (``time.perf_counter``).
    """

    workdir: pathlib.Path
    records: list[dict[str, Any]]
    steps: list[int]
    book: EloBook
    matches: dict[str, PairingRecord]
    started: float

    @property
    def ratings(self) -> dict[str, tuple[float, float]]:
        return self.book.ratings()

    def curve(self, checkpoint_name: Callable[[int], str]) -> list[EloPoint]:
        """``(step, rating, sigma)`` of each rated checkpoint the book holds, by its player name."""
        ratings = self.ratings
        return [(step, *ratings[checkpoint_name(step)]) for step in self.steps if checkpoint_name(step) in ratings]

    def plot(self, filename: str, curves: EloSeries, references: Mapping[str, tuple[float, float]],
             training: Sequence[tuple[Sequence[str], str]] = ((("loss", "policy_loss", "value_loss"), "loss"),),
             title: str = "") -> pathlib.Path:
        """The checkpoints' Elo ``curves`` against iteration (``references`` as horizontal lines; ``title`` above),
        then one panel of training curves per ``(metrics keys, y label)`` of ``training``; saved as
        ``workdir/figures/<filename>``."""
        figure, axes = new_figure(columns=1 + len(training))
        plot_elo_curves(axes[0, 0], curves, "iteration", references)
        if title:
            axes[0, 0].set_title(title)
        for column, (keys, ylabel) in enumerate(training, 1):
            plot_training_curves(axes[0, column], self.records, keys, ylabel)
        return save_figure(figure, self.workdir / "figures" / filename)

    def write_summary(self, fields: Mapping[str, Any], figure: pathlib.Path) -> dict[str, Any]:
        """``iterations``, ``frames``, ``training_wall_s``, then ``fields``, ``elo``, ``figure`` and ``wall_s``, written
        to ``workdir/summary.json``."""
        records = self.records
        summary = {
            "iterations": self.steps[-1],
            "frames": records[-1]["frames"] if records else 0,
            "training_wall_s": records[-1]["wall_s"] if records else 0.0,
            **fields,
            "elo": {name: {"rating": rating, "sigma": sigma} for name, (rating, sigma) in self.ratings.items()},
            "figure": str(figure),
            "wall_s": time.perf_counter() - self.started,
        }
        (self.workdir / "summary.json").write_text(json.dumps(summary, indent=2))
        return summary


def train_then_rate(config: Any, workdir: str | pathlib.Path, game: Game, schedule: Schedule, *,
                    max_game_plies: int) -> RatedTraining:
    """Trains ``config`` in ``workdir`` with the core's loop (resuming), then plays ``schedule(steps)``'s pairings
    there (:func:`~zerolab.evaluation.pairings.play_pairings`, ``game``, ``max_game_plies``; a rerun plays only the
    missing ones) and prints the book's table.  ``steps``: checkpoint 0, every ``checkpoint.keep_period``-th (only the
    last when it is 0) and the last."""
    started = time.perf_counter()
    workdir = pathlib.Path(workdir)
    settings = RunConfig.from_config(config)
    train.run(config, workdir)
    records = MetricsLog(workdir).records()
    steps = checkpoint_steps(workdir)
    steps = rated_steps(steps, settings.checkpoint.keep_period or steps[-1])
    pairings, agents = schedule(steps)
    book, matches = play_pairings(pairings, agents, game, workdir, max_game_plies=max_game_plies,
                                  show_progress=settings.progress)
    print(book.format_table())
    return RatedTraining(workdir, records, steps, book, matches, started)
