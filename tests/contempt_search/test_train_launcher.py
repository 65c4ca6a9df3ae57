"""contempt-train end to end at toy sizes through ``python -m experiments run``'s entry point (in this process): two
2-iteration Gardner runs from one initial network, PUCT and search-contempt (N_scl 1) self-play, their checkpoints
rated together, the final networks' head-to-head, and a rerun on the same directory that trains and plays nothing.

At these sizes both arms happen to train on the same frames (with 4 simulations of an untrained network, the
sampled opponent visits do not change the root's visit counts), so the arms are told apart by their saved configs and
by contempt's ``sampled_visit_fraction``, not by their final parameters."""

from __future__ import annotations

import json
import logging

import jax
import numpy as np
import pytest

from contempt_search.experiment import CONTEMPT_RULES, PLAIN_RULES
from experiments.__main__ import main
from zerolab.evaluation.book import EloBook
from zerolab.evaluation.pairings import read_pairing_records
from zerolab.training.metrics import MetricsLog
from zerolab.training.trained_variables import load_trained_variables

#: 2 iterations of 4 games × 4 plies at 4 simulations with a 4-channel ResNet; checkpoints 0 and 2 rated at 2
#: simulations, 2 games a match, one opponent each; 2 final games.
TOY = ["model.channels=4", "model.num_blocks=1", "iterations=2", "checkpoint.keep_period=2", "sc_limit=1",
       "search.num_simulations=4", "selfplay.num_games=4", "selfplay.plies_per_iteration=4",
       "selfplay.max_game_plies=8", "train.batch_size=8", "evaluation.games=2", "evaluation.search.num_simulations=2",
       "evaluation.max_game_plies=6", "evaluation.num_opponents=1", "final_games=2", "progress=False"]


def parameters(run, step: int) -> list[np.ndarray]:
    """The leaves of a run's parameters at checkpoint ``step``."""
    return [np.asarray(leaf) for leaf in jax.tree.leaves(load_trained_variables(run, step).variables["params"])]


def flat(section: dict, prefix: str = "") -> dict:
    """A nested config as ``{"section.key": value}``."""
    items = {}
    for key, value in section.items():
        items.update(flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return items


def same(first: list[np.ndarray], second: list[np.ndarray]) -> bool:
    return len(first) == len(second) and all(np.array_equal(a, b) for a, b in zip(first, second))


def files_state(workdir) -> dict:
    """Modification times of every file of the two runs' checkpoints and replay windows, of the rating games and of
    the final match's record and games (``metrics.jsonl`` and ``elo.json`` are rewritten by every run: their contents
    are compared)."""
    paths = [path for arm in ("puct", "contempt") for folder in ("checkpoints", "replay")
             for path in (workdir / arm / folder).rglob("*") if path.is_file()]
    paths += [*(workdir / "games").glob("*.pgn"), workdir / "final" / "matches.json",
              workdir / "final" / "games" / "final.pgn"]
    return {path: path.stat().st_mtime_ns for path in paths}


@pytest.mark.slow  # 49 s with a cold compilation cache (two self-play programs, one per arm), 18 s warm
def test_contempt_train_trains_both_arms_from_one_network_rates_them_and_a_rerun_does_nothing(tmp_path, capsys,
                                                                                               caplog):
    workdir = tmp_path / "train"
    command = ["run", "contempt-train", "--workdir", str(workdir), *TOY]
    capsys.readouterr()
    with caplog.at_level(logging.INFO):
        assert main(command) == 0
    summary = json.loads(capsys.readouterr().out)
    runs = {arm: workdir / arm for arm in ("puct", "contempt")}

    # The arms differ only in self-play (their saved configs: search rules and temperature schedule) and start from
    # one initial network; each trained its 2 iterations.
    configs = {arm: flat(json.loads((run / "config.json").read_text())) for arm, run in runs.items()}
    differing = {key for key in configs["puct"].keys() | configs["contempt"].keys()
                 if configs["puct"].get(key) != configs["contempt"].get(key)}
    assert {"search.rules", "search.rule_options.sc_limit", "selfplay.temperature"} <= differing
    assert all(key.startswith(("search.rule", "selfplay.temperature")) for key in differing), differing
    assert (configs["puct"]["search.rules"], configs["contempt"]["search.rules"]) == (PLAIN_RULES, CONTEMPT_RULES)
    assert configs["contempt"]["search.rule_options.sc_limit"] == 1
    initial = {arm: parameters(run, 0) for arm, run in runs.items()}
    assert same(initial["puct"], initial["contempt"]) and summary["shared_initial_network"] is True
    for arm, run in runs.items():
        assert not same(parameters(run, 2), initial[arm]), arm
        assert [record["iteration"] for record in MetricsLog(run).records()] == [1, 2], arm
        assert [row["iteration"] for row in summary["runs"][arm]["selfplay"]] == [1, 2], arm

    # Search-contempt sampled some opponent visits in every contempt iteration, and PUCT none.
    contempt_fractions = [row["sampled_visit_fraction"] for row in summary["runs"]["contempt"]["selfplay"]]
    assert all(fraction > 0 for fraction in contempt_fractions), contempt_fractions
    assert all(row["sampled_visit_fraction"] == 0 for row in summary["runs"]["puct"]["selfplay"])
    assert summary["sampled_visit_fraction"] == pytest.approx(np.mean(contempt_fractions))

    # Ratings: the shared initial network once, then both arms' checkpoint 2 (keep_period 2), one match each.
    players = {"initial", "puct@2", "contempt@2"}
    book = EloBook.load(workdir / "elo.json")
    assert set(book.ratings()) == players and set(summary["elo"]) == players
    assert summary["matches_played_now"] == len(book.results) == 2
    assert all(result.games == 2 for result in book.results)
    table = (workdir / "elo.txt").read_text()
    assert all(name in table for name in players)
    assert {arm: summary["runs"][arm]["final_checkpoint"] for arm in runs} == {"puct": "puct@2",
                                                                               "contempt": "contempt@2"}
    assert (workdir / "figures" / "contempt-train.png").stat().st_size > 0

    # The head-to-head of the final networks, contempt's first, in its own directory (its own two-player Elo book).
    final_match = summary["final_match"]
    record = read_pairing_records(workdir / "final" / "matches.json")["final"]
    assert record.result.players == ("final-contempt@2", "final-puct@2")
    difference, sigma = EloBook.load(workdir / "final" / "elo.json").fit().difference(*record.result.players)
    assert final_match == {**record.summary(), "elo_difference": difference, "elo_two_sigma": 2 * sigma}
    headline = json.loads((workdir / "results.json").read_text())["quantities"]  # written by python -m experiments
    assert (headline["final_score"]["value"], headline["final_score"]["n"]) == (final_match["score"],
                                                                                final_match["games"])
    assert (headline["final_elo"]["value"], headline["final_elo"]["error"]) == (difference, 2 * sigma)
    assert headline["puct_final_rating"]["error"] == 2 * summary["runs"]["puct"]["final_sigma"]
    assert final_match["wins"] + final_match["draws"] + final_match["losses"] == 2
    assert (workdir / "final" / "games" / "final.pgn").read_text().count("[Result ") == 2

    # A rerun resumes both runs at iteration 2 and trains, rates and plays nothing again.
    before = files_state(workdir)
    records = {arm: MetricsLog(run).records() for arm, run in runs.items()}
    caplog.clear()
    with caplog.at_level(logging.INFO):
        assert main(command) == 0
    rerun = json.loads(capsys.readouterr().out)
    for run in runs.values():
        assert f"resuming {run} at iteration 2" in caplog.text
    assert "self-play played" not in caplog.text
    assert rerun["matches_played_now"] == 0 and rerun["final_match"] == final_match
    assert rerun["runs"]["contempt"]["selfplay"] == summary["runs"]["contempt"]["selfplay"]
    assert files_state(workdir) == before
    assert {arm: MetricsLog(run).records() for arm, run in runs.items()} == records
    assert EloBook.load(workdir / "elo.json").results == book.results
