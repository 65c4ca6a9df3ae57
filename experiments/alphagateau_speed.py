"""Learning speed: AlphaGateau against the AlphaZero ResNet under identical training budgets (the paper's Figure 5).

``run(config, workdir)``:

1. trains each network of ``config.models`` with zerolab's loop in ``workdir/<model>`` — same game, search,
   self-play, frame window and optimiser for both; rerunning resumes each sub-run where it stopped;
2. rates the kept checkpoints of both runs together (:func:`zerolab.evaluation.rating.rate_contestants`): iteration 0, every
   ``checkpoint.keep_period``-th iteration and the last, in iteration order, each with the paper's Algorithm 2
   (:func:`zerolab.evaluation.matchmaking.rate_new_player`: five matches against the closest-rated players, the ratings refitted
   after each) starting from the previous checkpoint's rating; one Elo book (WLS, ±2σ) for all of them;
3. writes ``elo.json`` (the book), ``elo.txt`` (the table), ``figures/alphagateau_speed.png`` (Elo against
   iteration and against training wall-clock, two panels) and ``summary.json``.

The rating is resumable too: a checkpoint already in ``elo.json`` with games is not played again (delete
``elo.json`` to rate from scratch, e.g. after changing ``evaluation``).

The rating machinery is :mod:`zerolab.evaluation.rating` (shared with :mod:`experiments.alphagateau_finetune`).
"""

from __future__ import annotations

import json
import logging
import pathlib
import time
from typing import Any

import jax
import ml_collections

from zerolab.training import train
from zerolab.frontends.experiment_setup import prepare_experiment, training_config
from zerolab.games import make_game
from zerolab.evaluation.plots import new_figure, plot_elo_curves, save_figure
from zerolab.evaluation.rating import (
    Contestant,
    EvaluationConfig,
    checkpoint_agent,
    checkpoint_steps,
    elo_series,
    rate_contestants,
    rated_steps,
    ratings_summary,
    run_statistics,
    training_wall_seconds,
)

logger = logging.getLogger(__name__)

SERIES_LABELS = {"alphagateau": "AlphaGateau", "resnet": "AlphaZero ResNet"}


# --- the experiment -----------------------------------------------------------------------------------------------


def model_label(name: str, parameters: int) -> str:
    return f"{SERIES_LABELS.get(name, name)} ({parameters / 1000:.0f}k parameters)"


def training_configs(config: ml_collections.ConfigDict) -> dict[str, ml_collections.ConfigDict]:
    """The training config of each network of ``config.models`` (for ``run`` and ``python -m experiments plan``)."""
    return {name: training_config(config, config.models[name]) for name in config.models.keys()}


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict:
    started = time.perf_counter()
    workdir = prepare_experiment(config, workdir)

    model_names = list(config.models.keys())
    run_directories = {name: workdir / name for name in model_names}
    for name in model_names:
        logger.info("training %s in %s", name, run_directories[name])
        train.run(training_configs(config)[name], run_directories[name])
    statistics_by_model = {name: run_statistics(run_directories[name]) for name in model_names}

    rating_started = time.perf_counter()
    game = make_game(config.game.name, go_size=config.game.go_size, komi=config.game.komi)
    evaluation = EvaluationConfig.from_config(config.evaluation)
    steps = {name: rated_steps(checkpoint_steps(run_directories[name]), int(config.checkpoint.keep_period))
             for name in model_names}
    walls = {name: training_wall_seconds(run_directories[name]) for name in model_names}
    contestants = [
        Contestant(
            name=f"{name}@{step}",
            series=model_label(name, statistics_by_model[name]["parameters"]),
            iteration=step,
            wall_seconds=walls[name].get(step, float("nan")),
            load=lambda name=name, step=step: checkpoint_agent(run_directories[name], step, game, evaluation,
                                                               f"{name}@{step}"),
        )
        for step in sorted(set().union(*steps.values()))
        for name in model_names
        if step in steps[name]
    ]
    book, matches = rate_contestants(contestants, game, evaluation, workdir / "elo.json", workdir / "games",
                                     seed=int(config.seed) + 1, show_progress=bool(config.progress))
    rating_seconds = time.perf_counter() - rating_started
    table = book.format_table()  # rate_contestants wrote elo.txt and figures/elo.png
    print(table)

    figure, axes = new_figure(columns=2)
    plot_elo_curves(axes[0, 0], elo_series(book, contestants, "iteration"), "iteration")
    minutes = {series: [(x / 60, r, s) for x, r, s in points]
               for series, points in elo_series(book, contestants, "wall_seconds").items()}
    plot_elo_curves(axes[0, 1], minutes, "training wall-clock (minutes, compilation included)")
    axes[0, 0].set_title(f"{config.game.name}: Elo against iteration")
    axes[0, 1].set_title(f"{config.game.name}: Elo against training time ({jax.devices()[0].platform})")
    figure_path = save_figure(figure, workdir / "figures" / "alphagateau_speed.png")

    ratings = book.ratings()
    for name in model_names:
        final = f"{name}@{steps[name][-1]}"
        statistics_by_model[name]["final_checkpoint"] = final
        statistics_by_model[name]["final_rating"], statistics_by_model[name]["final_sigma"] = ratings[final]
    summary: dict[str, Any] = {
        "game": config.game.name,
        "iterations": int(config.iterations),
        "models": statistics_by_model,
        "elo": ratings_summary(book),
        "elo_table": table,
        "matches_played_now": matches,
        "evaluation": config.evaluation.to_dict(),
        "rating_wall_s": rating_seconds,
        "figure": str(figure_path),
        "device": f"{jax.devices()[0].platform} × {jax.device_count()}",
        "wall_s": time.perf_counter() - started,
    }
    if len(model_names) == 2:
        first, second = (statistics_by_model[name]["final_checkpoint"] for name in model_names)
        difference, sigma = book.fit().difference(first, second)
        summary["final_difference"] = {"players": [first, second], "elo": difference, "sigma": sigma}
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
