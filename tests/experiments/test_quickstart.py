"""End-to-end smoke run of the project's main job, ``python -m experiments run quickstart``, at toy size."""

import json
import pathlib
import subprocess
import sys

import pytest

from tests.game_record_checks import check_game_file
from zerolab.evaluation import score_standard_error

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
#: The network, search and self-play sizes of the alphagateau-speed test's AlphaGateau run
#: (tests/alphagateau/test_experiments.py, earlier in the workers' order): the same programs, read from the
#: compilation cache when that test has compiled them.
TOY = [
    "iterations=2", "model.channels=8", "model.num_blocks=1", "search.num_simulations=2",
    "search.max_num_considered_actions=2", "selfplay.num_games=4", "selfplay.plies_per_iteration=8",
    "train.batch_size=16", "checkpoint.keep_period=1", "evaluation.games=2", "evaluation.engine_games=2",
    "evaluation.search.num_simulations=2", "evaluation.max_game_plies=30", "progress=False",
]


@pytest.mark.slow
@pytest.mark.engine
def test_quickstart_end_to_end(tmp_path, fairy_stockfish_path):
    workdir = tmp_path / "quickstart"
    completed = subprocess.run([sys.executable, "-m", "experiments", "run", "quickstart", "--workdir", str(workdir),
                                *TOY], cwd=REPOSITORY, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    summary = json.loads((workdir / "summary.json").read_text())
    for key in ("iterations", "frames", "score_vs_initial", "games_vs_initial", "score_vs_engine", "engine", "wall_s"):
        assert key in summary, key
    assert summary["iterations"] == 2 and summary["frames"] == 64
    assert summary["games_vs_initial"] == 2 and summary["games_vs_engine"] == 2  # one game a batch: one compile
    assert summary["engine_fallback_moves"] == 0  # every Fairy-Stockfish move was legal under pgx's rules
    assert 0.0 <= summary["score_vs_initial"] <= 1.0
    assert summary["engine"] == "fairy-stockfish:skill=-20"
    headline = json.loads((workdir / "results.json").read_text())["quantities"]  # written by python -m experiments
    initial = summary["result_vs_initial"]
    assert headline["score_vs_initial"]["value"] == summary["score_vs_initial"]
    assert (headline["score_vs_initial"]["n"], headline["score_vs_initial"]["over"]) == (2, "games")
    assert headline["score_vs_initial"]["error"] == pytest.approx(
        score_standard_error(initial["wins"], initial["draws"], initial["losses"]), nan_ok=True)
    assert headline["score_vs_engine"]["value"] == summary["score_vs_engine"]
    assert headline["wall_s"]["value"] == summary["wall_s"] and headline["wall_s"]["error"] is None
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [1, 2]
    book = json.loads((workdir / "elo.json").read_text())
    assert {"iteration-0", "iteration-1", "iteration-2", "fairy-stockfish:skill=-20"} <= set(book["ratings"])
    assert (workdir / "figures" / "quickstart.png").stat().st_size > 10_000
    pgns = sorted(p.name for p in (workdir / "games").glob("*.pgn"))
    assert "iteration-2-vs-engine.pgn" in pgns and "iteration-2-vs-iteration-0.pgn" in pgns
    assert (workdir / "games" / "iteration-2-vs-engine.pgn").read_text().count('[Variant "Gardner"]') == 2
    for path in (workdir / "games").glob("*.pgn"):  # replayed by Fairy-Stockfish's move generator, Result checked
        games = check_game_file(path)  # match files hold 2 games; training writes sample self-play games too
        assert games == 2 if "-vs-" in path.name else games >= 1, path


def test_the_headline_scores_are_the_final_networks_side_of_each_match():
    """results(): a match's score is the final network's (W + D/2) / games, so 5 W 2 D 1 L is 0.75, not 0.25."""
    from experiments.quickstart import results

    summary = {"result_vs_initial": {"wins": 5, "draws": 2, "losses": 1, "games": 8, "score": 0.75},
               "engine": "fairy-stockfish:skill=-20",
               "engine_result": {"wins": 0, "draws": 1, "losses": 3, "games": 4, "score": 0.125}, "wall_s": 12.0}
    quantities = results(summary, None)
    assert (quantities["score_vs_initial"].value, quantities["score_vs_initial"].n) == (0.75, 8)
    assert (quantities["score_vs_engine"].value, quantities["score_vs_engine"].n) == (0.125, 4)
    assert quantities["score_vs_engine"].label == "final network vs fairy-stockfish:skill=-20, score"
