"""sai-go-gnugo, sai-go-positions and sai-go-panel end to end at toy sizes, each a ``python -m experiments run``
process (with the SAI tests' XLA flags, :func:`tests.sai_go.conftest.subprocess_env`, which compile these programs
about twice as fast): one untrained SAI run (its step 0) is the network of all three; each run's summary is checked
field by field and its files exist."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from sai_go.endgames import ENDGAMES
from tests.fast_compile import subprocess_env
from zerolab import train
from experiments.configs import load_config
from zerolab.evaluation.book import EloBook

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]

TINY_SAI = ["model.channels=8", "model.num_blocks=1", "model.value_hidden=8", "search.num_simulations=2",
            "iterations=0", "progress=False"]
#: The settings every launcher shares: SAI's search at 2 simulations without temperature, 8-ply games.
PLAY = ["search.num_simulations=2", "temperature_plies=0", "max_game_plies=8", "progress=False"]


@pytest.fixture(scope="module")
def sai_run(tmp_path_factory):
    """An SAI run directory holding its initial network (step 0)."""
    workdir = tmp_path_factory.mktemp("sai") / "run"
    train.run(load_config("sai-go", "tiny", TINY_SAI), workdir)
    return workdir


def run_experiment(name: str, workdir, *overrides: str) -> dict:
    """``python -m experiments run NAME --workdir DIR overrides...``; the summary it prints."""
    process = subprocess.run([sys.executable, "-m", "experiments", "run", name, "--workdir", str(workdir), *overrides],
                             cwd=REPOSITORY, env=subprocess_env(), capture_output=True, text=True, timeout=600)
    assert process.returncode == 0, process.stderr[-3000:]
    return json.loads(process.stdout)


@pytest.mark.slow  # 26 s of CPU with a cold compilation cache, the SAI run included
def test_sai_go_gnugo_plays_each_setting_against_gnugo(sai_run, gnugo_path, tmp_path):
    summary = run_experiment("sai-go-gnugo", tmp_path, f"network={sai_run}", "lambdas=[0.0,1.0]",
                             "gnugo_levels=[1]", "games=2", "komi_values=[]", "handicaps=[2]", "handicap_komi=9.5",
                             *PLAY)
    assert summary["network"] == str(sai_run) and summary["komi"] == 9.5 and summary["simulations"] == 2
    rows = summary["rows"]
    assert set(rows) == {"lambda=0 gnugo-1", "lambda=1 gnugo-1", "lambda=0 gnugo-1 handicap 2",
                         "lambda=1 gnugo-1 handicap 2"}
    for name, row in rows.items():
        assert row["games"] == 2 and row["wins"] + row["losses"] <= 2 and 0 <= row["score"] <= 1, name
        assert row["extension"] == ("handicap" in name) and row["komi"] == 9.5
        assert (row["start"] is None) == (not row["extension"])  # the handicap row starts from its stones
        assert -49 - 9.5 <= row["mean_margin"] <= 49 + 9.5 and row["gnugo_fallback_moves"] >= 0
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    assert len(list((tmp_path / "games").glob("*.sgf"))) == 4
    from experiments import sai_go_gnugo

    quantities = sai_go_gnugo.results(summary, None)  # results.json: each row's score and margin, se over its games
    row = rows["lambda=1 gnugo-1 handicap 2"]
    margin = quantities["margin_lambda1_gnugo-1_handicap_2"]
    assert (margin.value, margin.error, margin.n) == (row["mean_margin"], row["margin_se"], 2)
    assert quantities["score_lambda0_gnugo-1"].value == rows["lambda=0 gnugo-1"]["score"]
    # one Elo book; an extension row's players carry its setting, so the main komi's ratings are its own
    book = EloBook.load(tmp_path / "elo.json")
    assert sorted(group.players for group in book.groups()) == [
        ("gnugo:level=1", "sai-lambda-0", "sai-lambda-1"),
        ("gnugo:level=1 handicap 2", "sai-lambda-0 handicap 2", "sai-lambda-1 handicap 2")]
    assert "group 2 " in (tmp_path / "elo.txt").read_text()
    assert (tmp_path / "figures" / "elo.png").read_bytes()[:4] == b"\x89PNG"  # one panel per group


@pytest.mark.slow  # 22 s with a cold compilation cache, 9 s warm
def test_sai_go_positions_runs_its_three_sections(sai_run, tmp_path):
    summary = run_experiment("sai-go-positions", tmp_path, f"network={sai_run}", "steps=[0]",
                             "search.num_simulations=2", "heldout_games=2", "games_per_komi=2",
                             "komi_offsets=[-2.0,2.0]", "endgame_seeds=2", "lambdas=[0.0,1.0]", "progress=False")
    assert summary["steps"] == [0] and summary["sections"] == ["margin", "komi_curve", "endgames"]
    assert summary["alpha_mae"] >= 0
    assert [row["komi"] for row in summary["komi_curve"]] == [summary["fair_komi"] - 2, summary["fair_komi"] + 2]
    assert all(0 <= row["black_winrate"] <= 1 and row["games"] <= 2 for row in summary["komi_curve"])
    assert set(summary["endgames"]) == {endgame.name for endgame in ENDGAMES}
    for endgame in ENDGAMES:
        row = summary["endgames"][endgame.name]
        assert (row["best"], row["second"], row["komi"]) == (endgame.best, endgame.second, endgame.komi)
        assert set(row["best_share_mean_sd"]) == {"0", "1"}
        assert all(0 <= mean <= 1 for mean, _ in row["best_share_mean_sd"].values())
        assert row["exact_margins"][endgame.best] > row["exact_margins"][endgame.second] > 0
    results = json.loads((tmp_path / "positions.json").read_text())
    assert set(results["alpha_mae_by_ply"]) and (tmp_path / "figures" / "sai-go-positions.png").stat().st_size > 0
    headline = json.loads((tmp_path / "results.json").read_text())["quantities"]  # python -m experiments wrote it
    assert headline["alpha_mae"]["value"] == summary["alpha_mae"] and headline["alpha_mae"]["error"] is None
    assert headline["fair_komi"]["value"] == summary["fair_komi"]
    share = headline[f"best_share_{endgame.name}_lambda_1"]
    assert (share["value"], share["n"], share["over"]) == (row["best_share_mean_sd"]["1"][0], len(summary["steps"]),
                                                           "networks")
    assert (tmp_path / "figures" / "sai-go-endgames.png").stat().st_size > 0


@pytest.mark.slow  # 20 s of CPU with a cold compilation cache
def test_sai_go_panel_trains_its_landmark_and_rates_the_sai_checkpoints(sai_run, gnugo_path, tmp_path):
    summary = run_experiment("sai-go-panel", tmp_path, f"sai_run={sai_run}", "gnugo_levels=[1]", "games=2",
                             "landmark_overrides=['model.name=resnet','method=','model.channels=8',"
                             "'model.num_blocks=1','search.num_simulations=2','iterations=0']", *PLAY)
    assert summary["members"] == ["az-0", "gnugo-1", "random"] and summary["sai_steps"] == [0]
    assert len(summary["win_rates"]) == 1 and all(0 <= rate <= 1 for rate in summary["win_rates"][0])
    assert set(summary["weights"]) == set(summary["members"]) and set(summary["panel_scores"]) == {"0"}
    assert set(summary["elo"]) == {"sai-0", "az-0", "gnugo-1", "random"} and summary["nodes"] == {"0": 0}
    assert (tmp_path / "landmark" / "checkpoints" / "0").is_dir()
    landmark = json.loads((tmp_path / "landmark" / "config.json").read_text())  # trained with landmark_overrides
    assert (landmark["model"]["name"], landmark["model"]["channels"], landmark["iterations"]) == ("resnet", 8, 0)
    cells = json.loads((tmp_path / "panel.json").read_text())["cells"]
    headline = json.loads((tmp_path / "results.json").read_text())["quantities"]  # python -m experiments wrote it
    assert headline["rating_0"]["value"] == summary["elo"]["sai-0"]["rating"]
    assert headline["rating_0"]["error"] == 2 * summary["elo"]["sai-0"]["sigma"]
    assert headline["panel_score_0"]["value"] == summary["panel_scores"]["0"]
    assert {cell["games"] for cell in cells.values()} == {2} and len(cells) == 3
