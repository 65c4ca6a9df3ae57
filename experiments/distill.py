"""``python -m experiments run distill``: searchless chess end to end — data, action-value model, evaluation.

Writes into WORKDIR: ``config.json``, ``data/`` (games, annotations, dataset; unless ``data.directory`` is set),
``checkpoints/``, ``metrics.jsonl`` (training steps, then one evaluation record) and ``summary.json``:
``positions`` (annotated boards), the test metrics ``action_accuracy``, ``kendall_tau``, ``log_loss`` (and
``kendall_tau_argsort``), ``baselines`` (the same for the uniform-random and material policies), ``comparisons``
(the predictor and both baselines board by board on the same test boards: each pair's mean per-board difference
± its paired standard error, :func:`distill.evaluate.compare_policies`), ``puzzle_accuracy`` when ``puzzles=PATH`` is
given, and the time each stage took.  ``results.json`` holds the headline: the accuracy and Kendall τ of the predictor
and of the material count, and their paired differences.  A rerun on the same WORKDIR resumes each stage.
"""

from __future__ import annotations

import json
import logging
import pathlib
import time
from typing import Any

import ml_collections

from distill.engine import EngineOptions
from distill.evaluate import baseline_board_metrics, baseline_summaries, board_groups, compare_policies
from experiments.common.experiment import Experiment
from experiments.common.results import Quantity
from distill.pipeline import (
    check_config as check_pipeline_config,
    data_directory_of,
    evaluate_run,
    plan_variants,
    prepare_data,
    test_records,
    train_predictor,
    training_settings,
)

from zerolab import ProgramSection
from zerolab.training import MetricsLog, record_run_config

logger = logging.getLogger(__name__)


def write_summary(workdir: pathlib.Path, summary: dict[str, Any]) -> dict[str, Any]:
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def check_config(config: ml_collections.ConfigDict) -> None:
    """The generation, annotation and training settings, before the run directory is made."""
    check_pipeline_config(config)


def programs(config: ml_collections.ConfigDict) -> list[ProgramSection]:
    """The sections of ``python -m experiments plan distill``, declared (the command formats them): the compiled
    training step and scoring pass of the predictor."""
    return [plan_variants(config, {config.train.predictor: {}}, "distill: one predictor, trained then evaluated")]


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict[str, Any]:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    started = time.perf_counter()
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    record_run_config(workdir, config)

    data = prepare_data(config, data_directory_of(config, workdir), show_progress=config.progress)
    settings = training_settings(config)
    training = train_predictor(settings, data, workdir, show_progress=config.progress)
    records = test_records(data, config.evaluate.max_test_positions)
    options = EngineOptions(decisive_engine=config.evaluate.decisive_engine or None)
    evaluation, per_board = evaluate_run(workdir, records, config.puzzles, options)
    baselines_per_board = baseline_board_metrics(records, config.seed)
    baselines = baseline_summaries(baselines_per_board, settings.num_bins)

    record = {"iteration": training["step"], "phase": "evaluation", **evaluation,
              **{f"{name}_{key}": value for name, metrics in baselines.items() for key, value in metrics.items()}}
    MetricsLog(workdir, tensorboard=False).append(record)
    summary = {
        "positions": data.positions,
        "dataset": data.description["counts"],
        "games_skipped": len(data.annotation_report["game_problems"]),
        "boards_skipped": data.description["skipped_positions"],
        "predictor": settings.predictor,
        "model_size": settings.model_size,
        "num_parameters": training["num_parameters"],
        "training_steps": training["step"],
        "final_training_loss": training.get("loss"),
        **{key: evaluation[key] for key in ("action_accuracy", "kendall_tau", "kendall_tau_argsort", "log_loss",
                                            "boards", "boards_with_tau")},
        "baselines": baselines,
        "comparisons": compare_policies({settings.predictor: per_board, **baselines_per_board}, board_groups(records)),
        "seconds": {**data.seconds, "train": training["seconds"], "evaluate": evaluation["seconds"],
                    "total": time.perf_counter() - started},
    }
    if config.puzzles:
        summary.update({key: evaluation[key] for key in ("puzzle_accuracy", "puzzles", "by_rating")})
    return write_summary(workdir, summary)


def results(summary: dict[str, Any], config: ml_collections.ConfigDict) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): on all test boards, the predictor's and the material count's
    action accuracy and Kendall τ (each a mean over boards, no ±), and the predictor − material difference of each,
    paired over the same boards (se of the mean per-board difference)."""
    del config
    predictor, comparison = summary["predictor"], summary["comparisons"]["all"]
    quantities: dict[str, Quantity] = {}
    for metric in ("action_accuracy", "kendall_tau"):
        words = metric.replace("_", " ")
        for policy in (predictor, "material"):
            quantities[f"{policy}_{metric}"] = Quantity(f"{policy}, {words}", comparison["policies"][policy][metric],
                                                        over="boards", n=comparison["boards"])
        difference = comparison["differences"][f"{predictor} - material"][metric]
        quantities[f"{metric}_over_material"] = Quantity(
            f"{predictor} − material count, {words}", difference["difference"], difference["standard_error"], "se",
            "boards", difference["boards"], paired=True, unit="difference")
    return quantities


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, programs=programs, results=results)
