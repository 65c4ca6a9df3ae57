"""A run's checkpoints for rating: which steps to rate (:func:`rated_steps`, :func:`checkpoint_steps`), their
cumulative training time (:func:`training_wall_seconds`), each one's search agent (:func:`checkpoint_agent`, loaded when it plays: :func:`checkpoint_loader`) and the
run's parameters and training costs (:func:`run_statistics`).
"""

from __future__ import annotations

import pathlib
import statistics
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from zerolab.evaluation.rating import EvaluationConfig
from zerolab.games import Game
from zerolab.networks.network import count_parameters
from zerolab.play.search_agents import SearchAgent, load_search_agent
from zerolab.training.checkpoint import Checkpointer
from zerolab.training.metrics import MetricsLog
from zerolab.training.trained_variables import load_trained_variables


def rated_steps(steps: Iterable[int], keep_period: int) -> list[int]:
    """The checkpoint steps to rate: 0, the multiples of ``keep_period`` and the last one (all when it is 0)."""
    steps = sorted(steps)
    if not steps:
        return []
    if keep_period <= 0:
        return steps
    return [step for step in steps if step % keep_period == 0 or step == steps[-1]]


def checkpoint_steps(run_directory: str | pathlib.Path) -> list[int]:
    return Checkpointer(pathlib.Path(run_directory) / "checkpoints").steps()


def training_wall_seconds(run_directory: str | pathlib.Path) -> dict[int, float]:
    """Cumulative training wall-clock (``wall_s`` of ``metrics.jsonl``, compilation included) per iteration; 0 → 0."""
    records = MetricsLog(run_directory).records()
    return {0: 0.0, **{int(record["iteration"]): float(record["wall_s"]) for record in records}}


def checkpoint_agent(run_directory: str | pathlib.Path, step: int, game: Game, evaluation: EvaluationConfig,
                     name: str, search_options: Mapping[str, str] | None = None) -> SearchAgent:
    """The search agent of checkpoint ``step`` of a run playing ``game``, its run's search changed by
    ``evaluation.search`` (:func:`zerolab.play.search_agents.load_search_agent`; the game may differ from the run's
    own), then by ``search_options`` (a search's keys: ``{"kind": "muzero", "rules": ...}``)."""
    options = {"step": step, **(search_options or {}), "name": name}
    return load_search_agent(run_directory, options, game=game, search=evaluation.search)


def checkpoint_loader(run_directory: str | pathlib.Path, step: int, game: Game, evaluation: EvaluationConfig,
                      name: str, search_options: Mapping[str, Any] | None = None) -> Callable[[], SearchAgent]:
    """What loads :func:`checkpoint_agent` of these arguments when it is called: a match's agent, loaded when it first
    plays (:class:`~zerolab.evaluation.pairings.Pairing`'s agents)."""

    def load() -> SearchAgent:
        return checkpoint_agent(run_directory, step, game, evaluation, name, search_options)

    return load


def run_statistics(run_directory: str | pathlib.Path) -> dict[str, Any]:
    """Parameters and training costs of a run, from its step-0 checkpoint and ``metrics.jsonl``."""
    records = MetricsLog(run_directory).records()
    initial = load_trained_variables(run_directory, 0)
    later = [record["iteration_s"] for record in records[1:]]  # the first iteration includes compilation
    return {
        "parameters": count_parameters(initial.variables["params"]),
        "iterations": records[-1]["iteration"] if records else 0,
        "frames": records[-1]["frames"] if records else 0,
        "training_wall_s": records[-1]["wall_s"] if records else 0.0,
        "first_iteration_s": records[0]["iteration_s"] if records else None,
        "median_iteration_s": statistics.median(later) if later else None,
        "median_selfplay_s": statistics.median(r["selfplay_s"] for r in records[1:]) if later else None,
        "median_train_s": statistics.median(r["train_s"] for r in records[1:]) if later else None,
    }
