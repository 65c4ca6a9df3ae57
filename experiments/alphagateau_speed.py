"""Learning speed: AlphaGateau against the AlphaZero ResNet under identical training budgets (the paper's Figure 5).

``run(config, workdir)``:

1. trains each network of ``config.models`` with zerolab's loop in ``workdir/<model>`` — same game, search,
   self-play, frame window and optimiser for both; rerunning resumes each sub-run where it stopped;
2. rates the kept checkpoints of both runs together (:class:`zerolab.evaluation.RunComparison`, the "compare runs"
   recipe): iteration 0, every ``checkpoint.keep_period``-th iteration and the last, in iteration order, each with the
   paper's Algorithm 2 (five matches against the closest-rated players, the ratings refitted after each) starting from
   the previous checkpoint's rating; one Elo book (WLS, ±2σ) for all of them;
3. writes ``elo.json`` (the book), ``elo.txt`` (the table), ``figures/alphagateau_speed.png`` (Elo against
   iteration and against training wall-clock, two panels) and ``summary.json``.

The rating is resumable too: a checkpoint already in ``elo.json`` with games is not played again (delete
``elo.json`` to rate from scratch, e.g. after changing ``evaluation``).
"""

from __future__ import annotations

import pathlib
from typing import Any

import ml_collections

from zerolab import make_game
from zerolab.evaluation import EloPanel, EvaluationConfig, RunComparison, interleaved_steps
from zerolab.frontends import prepare_experiment, training_config
from experiments.common.experiment import Experiment
from experiments.common.results import Quantity

SERIES_LABELS = {"alphagateau": "AlphaGateau", "resnet": "AlphaZero ResNet"}


# --- the experiment -----------------------------------------------------------------------------------------------


def model_label(name: str, parameters: int) -> str:
    return f"{SERIES_LABELS.get(name, name)} ({parameters / 1000:.0f}k parameters)"


def training_configs(config: ml_collections.ConfigDict) -> dict[str, ml_collections.ConfigDict]:
    """The training config of each network of ``config.models`` (for ``run`` and ``python -m experiments plan``)."""
    return {name: training_config(config, config.models[name]) for name in config.models.keys()}


def check_config(config: ml_collections.ConfigDict) -> None:
    """The rating section, before the run directory is made; the training runs are the core's to check."""
    EvaluationConfig.from_config(config.evaluation)


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict:
    comparison = RunComparison(config, prepare_experiment(config, workdir),
                               make_game(config.game.name, go_size=config.game.go_size, komi=config.game.komi))
    runs = [comparison.train(name, run_config) for name, run_config in training_configs(config).items()]
    statistics_by_model = {run.name: run.statistics() for run in runs}
    labels = {run.name: model_label(run.name, statistics_by_model[run.name]["parameters"]) for run in runs}
    book = comparison.rate([comparison.contestant(run, step, labels[run.name])
                            for run, step in interleaved_steps(runs)])
    print(book.format_table())

    figure_path = comparison.plot("alphagateau_speed.png", [
        EloPanel(comparison.series("iteration"), "iteration", f"{config.game.name}: Elo against iteration"),
        EloPanel.wall_clock(comparison.series("wall_seconds"), f"{config.game.name}: Elo against training time")])
    ratings = book.ratings()
    for run in runs:
        final = f"{run.name}@{run.last_step}"
        statistics_by_model[run.name]["final_checkpoint"] = final
        statistics_by_model[run.name]["final_rating"], statistics_by_model[run.name]["final_sigma"] = ratings[final]
    fields: dict[str, Any] = {"game": config.game.name, "iterations": config.iterations,
                              "models": statistics_by_model, "evaluation": config.evaluation.to_dict()}
    if len(runs) == 2:
        first, second = (statistics_by_model[run.name]["final_checkpoint"] for run in runs)
        difference, sigma = book.fit().difference(first, second)
        fields["final_difference"] = {"players": [first, second], "elo": difference, "sigma": sigma}
    return comparison.write_summary(fields, figure_path)


def results(summary: dict, config: ml_collections.ConfigDict) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): each network's final rating in the one Algorithm 2 pool (± 2σ)
    and its training wall time, and the final difference between the two (± 2σ of the fitted difference)."""
    del config
    quantities: dict[str, Quantity] = {}
    for name, statistics in summary["models"].items():
        final = statistics["final_checkpoint"]
        quantities[f"rating_{name}"] = Quantity(f"{final}, rating (one pool)", statistics["final_rating"],
                                                2 * statistics["final_sigma"], "2σ", "rating games",
                                                int(summary["elo"][final]["games"]), unit="rating", digits=0)
        quantities[f"training_wall_s_{name}"] = Quantity(f"{name}, training wall time",
                                                         statistics["training_wall_s"], unit="s", digits=0)
    if "final_difference" in summary:
        difference = summary["final_difference"]
        first, second = difference["players"]
        games = int(summary["elo"][first]["games"] + summary["elo"][second]["games"])
        quantities["final_difference"] = Quantity(f"{first} − {second}, Elo (fitted in the pool)", difference["elo"],
                                                  2 * difference["sigma"], "2σ", "rating games", games, unit="Elo",
                                                  digits=0)
    return quantities


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, training_configs=training_configs, results=results)
