"""contempt-selfplay then contempt-match, end to end at toy sizes on an untrained Gardner network: the self-play rows
carry their statistics, the match plays its two settings (chosen by hand: six-ply games are all draws, so no ratio
is finite; the choice by ratio is tested in test_experiments.py), and reruns play nothing again."""

from __future__ import annotations

import json

import pytest

from zerolab.training import train
from experiments.configs import load_config


def test_selfplay_and_match_run_end_to_end_and_reruns_play_nothing_again(tmp_path):
    from experiments import contempt_match, contempt_selfplay

    network = tmp_path / "base"
    train.run(load_config("quickstart", "tiny", ["model.name=resnet", "model.channels=4", "model.num_blocks=1",
                                                  "iterations=0", "progress=False"]), network)
    toy = [f"network={network}", "search.num_simulations=4", "max_game_plies=6", "progress=False"]
    selfplay_config = load_config("contempt-selfplay", "tiny", toy + ["sc_limits=[1]", "puct_temperatures=['tau2']",
                                                                      "games=4"])
    selfplay = contempt_selfplay.run(selfplay_config, tmp_path / "selfplay")
    rows = {row["name"]: row for row in selfplay["rows"]}
    assert set(rows) == {"contempt1-tau1", "puct-tau2"}
    for row in rows.values():
        assert row["games"] == 4 and row["white_wins"] + row["draws"] + row["white_losses"] == 4
        assert row["capped_games"] <= row["draws"]  # a capped game is a draw
    assert rows["contempt1-tau1"]["sampled_visit_fraction"] > 0 and rows["puct-tau2"]["sampled_visit_fraction"] == 0
    headline = contempt_selfplay.results(selfplay, selfplay_config)  # each setting's decisiveness, se over its games
    fraction = headline["puct-tau2_decisive_fraction"]
    decisive = (rows["puct-tau2"]["white_wins"] + rows["puct-tau2"]["white_losses"]) / 4
    assert (fraction.value, fraction.n, fraction.over) == (decisive, 4, "games")
    assert fraction.error == pytest.approx((decisive * (1 - decisive) / 4) ** 0.5)
    assert headline["contempt1-tau1_ratio"].value == rows["contempt1-tau1"]["ratio"]
    assert (tmp_path / "selfplay" / "figures" / "contempt-selfplay.png").stat().st_size > 0

    match_config = load_config("contempt-match", "tiny", toy + ["puct_temperature=tau2", "sc_limit=1", "games=2"])
    summary = contempt_match.run(match_config, tmp_path / "match")
    assert (summary["chosen"]["contempt"]["name"], summary["chosen"]["puct"]["name"]) == ("contempt1-tau1", "puct-tau2")
    match = summary["match"]
    assert match["games"] == 2 and match["wins"] + match["draws"] + match["losses"] == 2
    assert summary["sampled_visit_fraction"] > 0 and summary["wall_s"] > 0
    headline = contempt_match.results(summary, match_config)
    assert headline["score"].value == match["score"] and headline["score"].n == 2
    assert (headline["elo"].value, headline["elo"].error, headline["elo"].error_kind) == (
        match["elo_difference"], match["elo_two_sigma"], "2σ")
    pgn_path = tmp_path / "match" / "games" / "contempt1-tau1-vs-puct-tau2.pgn"
    assert pgn_path.read_text().count("[Result ") == 2

    # Reruns: every self-play setting and the match are on file, so nothing is played again.
    modified = {path: path.stat().st_mtime_ns for path in (tmp_path / "selfplay" / "settings.jsonl",
                                                           tmp_path / "match" / "matches.json", pgn_path)}
    assert contempt_selfplay.run(selfplay_config, tmp_path / "selfplay")["rows"] == selfplay["rows"]
    assert contempt_match.run(match_config, tmp_path / "match")["match"] == match
    assert {path: path.stat().st_mtime_ns for path in modified} == modified

    # A match in blocks resumes after its last finished block: with the second block's record gone from
    # matches.json, a rerun plays that block again (same key, same games) and nothing else.
    blocks_config = load_config("contempt-match", "tiny", toy + ["puct_temperature=tau2", "sc_limit=1", "games=4",
                                                                 "blocks=2"])
    blocked = contempt_match.run(blocks_config, tmp_path / "blocks")["match"]
    assert (blocked["games"], blocked["blocks"]) == (4, 2)
    records_path = tmp_path / "blocks" / "matches.json"
    records = json.loads(records_path.read_text())["matches"]
    labels = ["contempt1-tau1-vs-puct-tau2-block0", "contempt1-tau1-vs-puct-tau2-block1"]
    assert list(records) == labels
    assert all(record["extras"]["contempt_moves"] > 0 for record in records.values())
    assert sorted(path.name for path in (tmp_path / "blocks" / "games").iterdir()) == [
        f"{label}.pgn" for label in labels]
    records_path.write_text(json.dumps({"matches": {labels[0]: records[labels[0]]}}))
    resumed = contempt_match.run(blocks_config, tmp_path / "blocks")["match"]
    replayed = json.loads(records_path.read_text())["matches"]
    assert list(replayed) == labels and replayed[labels[0]] == records[labels[0]]
    without_time = lambda record: {key: value for key, value in record.items() if key != "wall_s"}
    assert without_time(replayed[labels[1]]) == without_time(records[labels[1]])
    assert {key: value for key, value in resumed.items() if key != "match_s"} == {
        key: value for key, value in blocked.items() if key != "match_s"}
