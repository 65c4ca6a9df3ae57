"""The runner the ``distill-bins``, ``distill-targets`` and ``distill-games`` launchers share: predictor variants
trained on the same data, compared board by board, then rated in a tournament (:func:`compare_variants`; its stages
are :mod:`distill.pipeline`'s), and the variants of ``config.predictors`` and ``config.ablations``
(:func:`predictor_variants`)."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time
from collections.abc import Mapping
from typing import Any

import ml_collections

from distill.engine import EngineOptions
from distill.evaluate import baseline_board_metrics, baseline_summaries, board_groups, compare_policies
from experiments.common.results import Quantity, score_quantity
from distill.pipeline import (
    cached,
    check_config,
    data_directory_of,
    equal_steps,
    evaluate_run,
    load_engine,
    prepare_data,
    records_fingerprint,
    test_records,
    tournament,
    train_predictor,
    training_settings,
)
from zerolab import check_at_least
from zerolab.training import record_run_config


def predictor_variants(config: ml_collections.ConfigDict) -> dict[str, dict[str, Any]]:
    """``config.train`` overrides of each variant: the predictors of ``config.predictors``, then one action-value
    variant ``action_value-<name>`` per entry of ``config.ablations`` (its overrides on top of the action value's)."""
    named = {name: variant_overrides(name) for name in config.predictors}
    for name, overrides in config.ablations.items():
        named[f"action_value-{name}"] = {**variant_overrides("action_value"), **overrides.to_dict()}
    return named


def variant_overrides(predictor: str) -> dict[str, Any]:
    """``config.train`` overrides of one predictor: the action-token options concern the action-value one only."""
    if predictor == "action_value":
        return {"predictor": predictor}
    return {"predictor": predictor, "action_embedding": "table", "mark_action_squares": False}


def check_comparison(config: ml_collections.ConfigDict, variants: Mapping[str, Mapping[str, Any]]) -> None:
    """What :func:`compare_variants` reads, checked before it writes anything: the pipeline's settings of every
    variant (:func:`distill.pipeline.check_config`), the equal-steps epochs and the tournament section."""
    check_config(config, variants)
    if (config.get("action_value_epochs") or 0.0) < 0:
        raise ValueError(f"action_value_epochs must be at least 0 (0: each variant trains train.num_steps), got "
                         f"{config.action_value_epochs!r}")
    unknown = [name for name in config.tournament.players if name not in variants]
    if unknown:
        raise ValueError(f"tournament.players: unknown variant(s) {unknown}; expected names among {list(variants)}")
    for key, minimum in (("games_per_pair", 0), ("max_game_plies", 1), ("temperature_full_moves", 0)):
        check_at_least(f"tournament.{key}", config.tournament[key], minimum)
    check_at_least("tournament.temperature", config.tournament.temperature, 0)


def compare_variants(config: ml_collections.ConfigDict, workdir: str | pathlib.Path,
                     variants: Mapping[str, Mapping[str, Any]], show_progress: bool = True) -> dict[str, Any]:
    """Train and evaluate one predictor per variant on the same data, compare them board by board, then rate them in
    a tournament.

    ``variants`` maps a name to overrides of ``config.train`` (``{"state_value": {"predictor": "state_value"}}``);
    each trains in ``workdir/<name>``.  Writes ``workdir/config.json`` and returns (and writes to
    ``workdir/summary.json``) the summary: ``positions``, ``baselines``, per-variant metrics (with the tournament's
    ``elo`` and ``elo_sigma``), ``comparisons`` (``distill.evaluate.compare_policies`` over the variants and both
    baselines on the same test boards: every pair's mean per-board difference ± its paired standard error, for all
    boards and split by whether Stockfish's best move is a capture) and the tournament between the variants named
    in ``config.tournament.players`` (all when empty), and ``equal_steps``.  With ``config.action_value_epochs`` > 0
    every variant trains :func:`distill.pipeline.equal_steps` steps (a variant's own ``num_steps`` override still
    wins); ``equal_steps`` is None otherwise (each trains ``train.num_steps``).  Every stage resumes: data and
    training as in :func:`distill.pipeline.prepare_data` and ``distill.train``, evaluations from
    ``workdir/<name>/evaluation.json`` and ``workdir/baselines.json`` (kept per checkpoint step and test boards),
    games from the Elo book.
    """
    started = time.perf_counter()
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    record_run_config(workdir, config)
    data = prepare_data(config, data_directory_of(config, workdir), show_progress=show_progress)
    records = test_records(data, config.evaluate.max_test_positions)
    boards_key = {"boards": len(records), "fingerprint": records_fingerprint(records)}
    results: dict[str, dict[str, Any]] = {}
    per_board: dict[str, Any] = {}
    steps = equal_steps(config, data)
    for name, overrides in variants.items():
        settings = training_settings(config, **{**({} if steps is None else {"num_steps": steps}), **overrides})
        training = train_predictor(settings, data, workdir / name, show_progress=show_progress)
        evaluation = cached(workdir / name / "evaluation.json",
                            {**boards_key, "step": training["step"], "puzzles": config.puzzles},
                            lambda name=name: dict(zip(("metrics", "per_board"),
                                                       evaluate_run(workdir / name, records, config.puzzles))))
        per_board[name] = evaluation["per_board"]
        results[name] = {"predictor": settings.predictor, "num_bins": settings.num_bins,
                         "num_parameters": training["num_parameters"], "training_steps": training["step"],
                         "train_seconds": training["seconds"], **evaluation["metrics"]}
    baselines = cached(workdir / "baselines.json", {**boards_key, "seed": config.seed},
                       lambda: baseline_board_metrics(records, config.seed))
    per_board.update(baselines)
    summary: dict[str, Any] = {"positions": data.positions, "dataset": data.description["counts"],
                               "equal_steps": steps,
                               "baselines": baseline_summaries(baselines, config.train.num_bins),
                               "variants": results,
                               "comparisons": compare_policies(per_board, board_groups(records))}
    players = config.tournament.players or list(variants)
    if config.tournament.games_per_pair > 0 and len(players) > 1:
        options = EngineOptions(temperature=config.tournament.temperature,
                                temperature_full_moves=config.tournament.temperature_full_moves,
                                decisive_engine=config.evaluate.decisive_engine or None)
        engines = {name: load_engine(workdir / name, dataclasses.replace(options), name=name) for name in players}
        try:
            summary["tournament"] = tournament(engines, workdir / "elo.json", config.tournament.games_per_pair,
                                               config.seed, config.tournament.max_game_plies, show_progress)
        finally:
            for engine in engines.values():
                engine.close()
        for name, rating in summary["tournament"]["ratings"].items():
            results[name].update({"elo": rating["elo"], "elo_sigma": rating["sigma"]})
    summary["seconds"] = {**data.seconds, "total": time.perf_counter() - started}
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def variant_results(summary: dict[str, Any], config: ml_collections.ConfigDict) -> dict[str, Quantity]:
    """The headline quantities of a comparison (``results.json`` of distill-games, -targets, -bins): on all test
    boards, each variant's action accuracy and Kendall τ (means over boards), each pair's difference of both paired
    over the same boards (se of the mean per-board difference; the baselines included), each variant's tournament
    rating ± 2σ (one pool), and each pair's score in its games against the other (se over those games, half of them
    with each colour)."""
    del config
    comparison = summary["comparisons"]["all"]
    boards = comparison["boards"]
    quantities: dict[str, Quantity] = {}
    for name, metrics in comparison["policies"].items():
        for metric, value in metrics.items():
            quantities[f"{name}_{metric}"] = Quantity(f"{name}, {metric.replace('_', ' ')}", value, over="boards",
                                                      n=boards)
    for pair, metrics in comparison["differences"].items():
        first, second = pair.split(" - ")
        for metric, difference in metrics.items():
            quantities[f"{first}_minus_{second}_{metric}"] = Quantity(
                f"{first} − {second}, {metric.replace('_', ' ')}", difference["difference"],
                difference["standard_error"], "se", "boards", difference["boards"], paired=True, unit="difference")
    tournament = summary.get("tournament", {})
    games = sum(result["wins"] + result["draws"] + result["losses"] for result in tournament.get("results", []))
    for result in tournament.get("results", []):
        first, second = result["player_a"], result["player_b"]
        quantities[f"{first}_vs_{second}_score"] = score_quantity(
            f"{first} vs {second}, {first}'s score", result["wins"], result["draws"], result["losses"])
    for name, rating in tournament.get("ratings", {}).items():
        quantities[f"{name}_rating"] = Quantity(f"{name}, tournament rating", rating["elo"], 2 * rating["sigma"], "2σ",
                                                "games", games, unit="rating", digits=0)
    return quantities
