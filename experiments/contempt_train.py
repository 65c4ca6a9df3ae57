"""contempt-train (search-contempt's efficiency claim): does self-play with search-contempt train a better network
for the same budget than self-play with a high-temperature PUCT?

``run(config, workdir)``:

1. trains two runs, ``workdir/puct`` and ``workdir/contempt``, with one training config that differs only in
   self-play: PUCT with the ``puct_temperature`` schedule (τ2) against search-contempt (N_scl = ``sc_limit``) with
   the ``contempt_temperature`` schedule (τ1).  Same game, network, seed (so the same initial network), simulations,
   root noise, games, plies, frame window and optimiser; rerunning resumes each;
2. rates the kept checkpoints of both runs together with Algorithm 2 (:class:`zerolab.evaluation.RunComparison`) under
   one plain-PUCT search (``evaluation.search.num_simulations``, the training's PUCT rule ``search.selection``, no
   contempt, the training's root noise, so that games differ), the shared initial network once, then both runs'
   checkpoints in iteration order;
3. plays the two final networks against each other (``final_games``, the same search): a pairing of
   :func:`zerolab.evaluation.play_pairings` in ``final/`` (its ``matches.json``, its two-player
   ``elo.json``/``elo.txt`` and ``games/final.pgn``; a rerun does not play it again);
4. writes ``elo.json``/``elo.txt`` (the ratings of step 2), ``figures/contempt-train.png`` (Elo against self-play
   games and against training wall-clock) and ``summary.json`` (each run's self-play (w+l)/d per iteration,
   ``sampled_visit_fraction``, costs, ratings, the final match with its Elo difference ± 2σ, ``wall_s``).

``init_from`` (a run directory, e.g. maia-1900 converted with ``python -m zerolab lc0 convert``) starts both runs from
that network instead of from scratch; its game and model sections are then used.  Not built: re-tuning N_scl during
training (the paper's Figure 6).
"""

from __future__ import annotations

import functools
import json
import pathlib

import jax
import ml_collections
import numpy as np

from contempt_search.experiment import CONTEMPT_RULES, PLAIN_RULES, temperature_settings
from contempt_search.statistics import decisive_ratio
from experiments.common.experiment import Experiment
from experiments.common.results import Quantity, score_quantity
from experiments.configs.contempt_train import read_config
from zerolab import make_game
from zerolab.evaluation import (
    EloPanel, EvaluationConfig, Pairing, RunComparison, check_game_count, interleaved_steps, play_pairings,
)
from zerolab.frontends import prepare_experiment, training_config
from zerolab.training import MetricsLog, RunConfig, load_trained_variables

ARMS = ("puct", "contempt")
#: Sections of an experiment config that are not training keys.
EXPERIMENT_KEYS = ("tau1", "tau2", "puct_temperature", "contempt_temperature", "sc_limit", "evaluation",
                   "final_games", "compilation_cache", "from_scratch")


def check_config(config: ml_collections.ConfigDict) -> None:
    """The rating section and the final match, before the run directory is made; the arms' training runs are the
    core's to check."""
    own = read_config(config)
    EvaluationConfig.from_config(config.evaluation)
    check_game_count("final_games", own.final_games)


def arm_config(config: ml_collections.ConfigDict, arm: str) -> ml_collections.ConfigDict:
    """The training config of one arm: the shared sections with the arm's self-play rules and temperature."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    own, init_from = read_config(config), RunConfig.from_config(config).init_from
    if not own.from_scratch and not init_from:
        raise ValueError("this experiment needs init_from=RUN: the paper preset starts from maia-1900 converted to a "
                         "zerolab run (python -m zerolab lc0 convert --workdir RUN)")
    sections = config.to_dict()
    for key in EXPERIMENT_KEYS:
        sections.pop(key, None)
    if init_from:
        run_config = json.loads((pathlib.Path(init_from) / "config.json").read_text())
        sections["game"], sections["model"] = run_config["game"], run_config["model"]
    temperature = own.contempt_temperature if arm == "contempt" else own.puct_temperature
    sections["selfplay"].update(temperature_schedule="moves", temperature_plies=0,
                                **temperature_settings(own, temperature))
    if arm == "contempt":
        sections["search"].update(rules=CONTEMPT_RULES, rule_options={"sc_limit": own.sc_limit})
    else:
        sections["search"].update(rules=PLAIN_RULES, rule_options={})
    model = sections.pop("model")
    return training_config(ml_collections.ConfigDict(sections), model)


def training_configs(config: ml_collections.ConfigDict) -> dict[str, ml_collections.ConfigDict]:
    """Each arm's training config (for ``python -m experiments plan``)."""
    return {arm: arm_config(config, arm) for arm in ARMS}


def selfplay_statistics(run_directory: pathlib.Path) -> list[dict]:
    """Per iteration: cumulative self-play games, the iteration's W/D/L from the first player's side, its (w+l)/d,
    ``sampled_visit_fraction`` (0 without contempt) and the cumulative training wall-clock."""
    rows, games = [], 0
    for record in MetricsLog(run_directory).records():
        games += int(record["games_finished"])
        wins, draws, losses = (int(record[key]) for key in ("first_player_wins", "draws", "first_player_losses"))
        rows.append({"iteration": int(record["iteration"]), "games": games, "wins": wins, "draws": draws,
                     "losses": losses, "ratio": decisive_ratio(wins, losses, draws),
                     "sampled_visit_fraction": float(record.get("sampled_visit_fraction", 0.0)),
                     "wall_s": float(record["wall_s"])})
    return rows


def same_initial_network(first: pathlib.Path, second: pathlib.Path) -> bool:
    """Whether two runs' step-0 checkpoints hold the same parameters."""
    leaves = [jax.tree.leaves(load_trained_variables(run, 0).variables) for run in (first, second)]
    return len(leaves[0]) == len(leaves[1]) and all(np.array_equal(a, b) for a, b in zip(*leaves))


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict:
    own, run_config = read_config(config), RunConfig.from_config(config)
    game = make_game(arm_config(config, "puct").game.name)
    comparison = RunComparison(config, prepare_experiment(config, workdir), game, search_options={
        "kind": "muzero", "selection": config.search.selection, "rules": PLAIN_RULES})
    runs = {arm: comparison.train(arm, arm_config(config, arm)) for arm in ARMS}
    evaluation = comparison.evaluation
    statistics = {arm: selfplay_statistics(runs[arm].directory) for arm in ARMS}
    games_at = {arm: {0: 0, **{row["iteration"]: row["games"] for row in statistics[arm]}} for arm in ARMS}
    shared_start = same_initial_network(runs["puct"].directory, runs["contempt"].directory)
    initial = [comparison.contestant(runs["puct"], 0, "initial", "initial")] if shared_start else []
    book = comparison.rate(initial + [comparison.contestant(run, step, run.name) for run, step
                                      in interleaved_steps(list(runs.values())) if not (shared_start and step == 0)])

    finals = {arm: f"{arm}@{runs[arm].last_step}" for arm in ARMS}
    names = {arm: f"final-{finals[arm]}" for arm in ARMS}
    final_book, final_records = play_pairings(
        [Pairing(names["contempt"], names["puct"], own.final_games, label="final")],
        {name: functools.partial(comparison.agent, runs[arm], runs[arm].last_step, name)
         for arm, name in names.items()},
        game, comparison.workdir / "final", max_game_plies=evaluation.max_game_plies, seed=run_config.seed + 2,
        show_progress=run_config.progress, event="contempt-train final networks")
    difference, sigma = final_book.fit().difference(names["contempt"], names["puct"])
    final = {**final_records["final"].summary(), "elo_difference": difference, "elo_two_sigma": 2 * sigma}

    ratings = book.ratings()
    start = [(0.0, *ratings["initial"])] if shared_start else []
    by_games = {arm: start + [(games_at[arm].get(iteration, np.nan), rating, sigma)
                              for iteration, rating, sigma in points]
                for arm, points in comparison.series("iteration").items() if arm in ARMS}
    by_seconds = {arm: start + points for arm, points in comparison.series("wall_seconds").items() if arm in ARMS}
    simulations = evaluation.search.get("num_simulations")
    figure_path = comparison.plot("contempt-train.png", [
        EloPanel(by_games, "self-play games",
                 f"{game.name}: Elo against self-play games (plain PUCT, {simulations} sims)"),
        EloPanel.wall_clock(by_seconds, f"{game.name}: Elo against training time")])

    return comparison.write_summary({
        "settings": config.to_dict(),
        "runs": {arm: {**runs[arm].statistics(), "final_checkpoint": finals[arm],
                       "final_rating": ratings[finals[arm]][0], "final_sigma": ratings[finals[arm]][1],
                       "selfplay": statistics[arm]} for arm in ARMS},
        "sampled_visit_fraction": float(np.mean([row["sampled_visit_fraction"] for row in statistics["contempt"]])),
        "shared_initial_network": shared_start,
        "final_match": final,
    }, figure_path)


def results(summary: dict, config: ml_collections.ConfigDict) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): the final networks' head-to-head, contempt's score (se over its
    games) and Elo difference (2σ of the fit), and each arm's final rating in the one pool (± 2σ)."""
    del config
    final = summary["final_match"]
    contempt, puct = final["player_a"], final["player_b"]
    quantities = {
        "final_score": score_quantity(f"score, {contempt} vs {puct}", final["wins"], final["draws"],
                                      final["losses"]),
        "final_elo": Quantity(f"Elo, {contempt} − {puct}", final["elo_difference"], final["elo_two_sigma"], "2σ",
                              "games", final["games"], unit="Elo", digits=0),
    }
    for arm, run in summary["runs"].items():
        quantities[f"{arm}_final_rating"] = Quantity(f"{run['final_checkpoint']}, rating", run["final_rating"],
                                                     2 * run["final_sigma"], "2σ", "games", 0, unit="rating",
                                                     digits=0)
    return quantities


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, training_configs=training_configs, results=results)
