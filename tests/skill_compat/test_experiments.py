"""The experiments' presets (hyper-parameters asserted, configs built), unknown agents refused, and a small STT run
end to end with the junior as senior: outputs written, a rerun plays nothing, more bitstrings play only the new
games."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from experiments.common.skill_compat import framework_results
from experiments.skill_compat_stt import EXPERIMENT as STT_EXPERIMENT
from skill_compat.attuned import training_config
from skill_compat.configs import AttunedConfig, read_config
from skill_compat.experiment import check_seniors, markdown_summary, paired_differences
from skill_compat.records import MatchupFiles
from experiments.configs import load_config


def test_paper_presets_hold_the_issues_hyper_parameters():
    stt = load_config("skill-compat-stt", "paper", [])
    hb = load_config("skill-compat-hb", "paper", [])
    for config in (stt, hb):
        assert config.framework.num_bitstrings == 5000 and config.senior.nodes == 50_000
        assert config.evaluator.nodes == 200_000 and config.tree.search.num_simulations == 1500
        assert config.senior.threads == 1
    assert stt.expector.eval_nodes == 10_000 and hb.expector.eval_nodes == 1700
    assert stt.junior.mode == "argmax" and hb.junior.mode == "sample"
    assert "hand" in hb.seniors and "hand" not in stt.seniors
    tiny = load_config("skill-compat-stt", "tiny", [])
    assert (tiny.framework.num_bitstrings, tiny.senior.nodes, tiny.evaluator.nodes, tiny.tree.search.num_simulations,
            tiny.expector.eval_nodes, tiny.framework.max_game_plies, tiny.plain_chess.games) == (
        16, 2000, 5000, 32, 400, 200, 8)
    assert load_config("skill-compat-hb", "tiny", []).expector.eval_nodes == 100
    assert not stt.expector.reference_00_quirk
    # the HB expector's evaluator is the paper's cptowl over the hand's top moves in every preset; STT has no such key
    for preset in ("tiny", "evidence", "paper"):
        config = load_config("skill-compat-hb", preset, [])
        assert (config.expector.evaluation, config.expector.moves) == ("cptowl", "top"), preset
    assert "evaluation" not in stt.expector and "moves" not in stt.expector


def test_attuned_presets_build_a_training_run(tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    architecture = {"name": "zerolab.networks.lc0.network:make_lc0", "weights": "", "channels": 64, "num_blocks": 6,
                    "se_channels": 8, "value_channels": 32, "value_hidden": 128}
    (base / "config.json").write_text(json.dumps({"model": architecture}))
    tiny = training_config(read_config(load_config("skill-compat-attuned", "tiny", [
        "framework.name=hb", "attuned.train_on=senior"]), AttunedConfig), base)
    assert tiny.method_options.train_on == "senior" and tiny.method_options.policy_target == "played"
    assert (tiny.iterations, tiny.selfplay.num_games, tiny.selfplay.plies_per_iteration,
            tiny.search.num_simulations) == (4, 32, 48, 16)
    assert tiny.method == "skill_compat.attuned:make_method" and tiny.method_options.framework == "hb"
    assert tiny.game.name == "chess:lc0" and tiny.init_from == str(base) and tiny.model.channels == 64
    paper = training_config(read_config(load_config("skill-compat-attuned", "paper", []), AttunedConfig), base)
    assert (paper.iterations, paper.selfplay.num_games, paper.train.learning_rate, paper.train.batch_size,
            paper.train.l2_weight, paper.search.num_simulations) == (1, 10_000, 1e-5, 1024, 5e-5, 1500)
    assert (paper.train.optimizer, paper.train.momentum, paper.train.epochs_per_iteration) == ("sgd_nesterov", 0.9, 7.0)
    assert (tiny.train.optimizer, tiny.train.learning_rate) == ("adam", 3e-4)


def test_unknown_agents_and_frameworks_are_refused():
    with pytest.raises(ValueError, match=r"unknown agent\(s\) \['leela'\]"):
        check_seniors("stt", ["tree", "leela"])
    with pytest.raises(ValueError, match="hand"):
        check_seniors("stt", ["hand"])  # the hand alone exists in HB only
    with pytest.raises(ValueError, match="framework.name"):
        check_seniors("chess", ["tree"])


def test_seniors_are_compared_game_slot_by_game_slot(tmp_path):
    """Two seniors' paired difference is over the game slots both played (the same bitstring or seed and colour):
    the mean of the per-slot differences and its se; a slot only one played is left out."""
    scores = {"tree": [1.0, 0.5, 0.0, 1.0, 1.0], "expector": [0.5, 0.5, 0.0, 0.0], "junior": [0.0, 0.0, 0.5, 0.5]}
    matchups = {}
    for name, values in scores.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "games.jsonl").write_text("".join(
            json.dumps({"game": slot, "focal_score": value}) + "\n" for slot, value in enumerate(values)))
        matchups[name] = MatchupFiles(tmp_path / name)
    rows = paired_differences(matchups)
    assert list(rows) == ["tree-vs-expector", "tree-vs-junior", "expector-vs-junior"]
    differences = np.array([0.5, 0.0, 0.0, 1.0])
    assert rows["tree-vs-expector"]["games"] == 4 and rows["tree-vs-expector"]["difference"] == 0.375
    assert math.isclose(rows["tree-vs-expector"]["se"], differences.std(ddof=1) / 2)
    assert rows["expector-vs-junior"]["difference"] == 0.0  # (0.5 + 0.5 − 0.5 − 0.5) / 4
    table = markdown_summary({"framework": "hb", "matchups": {}, "plain_chess": {}, "paired_differences": rows})
    se = rows["tree-vs-expector"]["se"]
    assert f"| tree − expector | 4 | +0.375 | {se:.3f} |" in table and "| expector − junior | 4 | +0.000 |" in table
    summary = {"framework": "hb", "paired_differences": rows,
               "matchups": {"tree": {"win_share": 0.7, "win_share_se": 0.2, "games": 5}}}
    quantities = framework_results(summary, None)
    assert quantities["win_share_tree"].n == 5 and not quantities["win_share_tree"].paired
    paired = quantities["difference_tree_expector"]
    assert (paired.value, paired.n, paired.paired, paired.over) == (0.375, 4, True, "games")


@pytest.mark.slow
def test_a_small_stt_run_writes_its_outputs_and_resumes(tmp_path, stockfish_path):
    overrides = ["framework.num_bitstrings=1", "framework.max_game_plies=6", "seniors=['junior']",
                 "plain_chess.seniors=['junior']", "plain_chess.games=2", "senior.nodes=50", "evaluator.nodes=50",
                 f"senior.engine={stockfish_path}", "progress=False"]
    config = load_config("skill-compat-stt", "tiny", overrides)
    summary = STT_EXPERIMENT.run(config, tmp_path)
    row = summary["matchups"]["junior"]
    assert row["games"] == 2 and row["capped"] == 2 and row["win_share"] == 0.5
    assert "L(S)" in row["table2"] and "tricking(S)" in row["table3"]
    assert summary["plain_chess"]["junior"]["games"] == 2
    matchup = tmp_path / "matchups" / "junior"
    moves = [json.loads(line) for line in (matchup / "moves.jsonl").read_text().splitlines()]
    assert len(moves) == 12 and all("loss" in move and "bits_before" in move for move in moves)
    assert (tmp_path / "tables.md").read_text().count("| junior |") == 2
    assert (matchup / "games.pgn").read_text().count("[Bitstring") == 2
    before = (matchup / "games.jsonl").read_text()
    STT_EXPERIMENT.run(config, tmp_path)  # nothing missing: nothing played
    assert (matchup / "games.jsonl").read_text() == before
    more = load_config("skill-compat-stt", "tiny", overrides[1:] + ["framework.num_bitstrings=2"])
    summary = STT_EXPERIMENT.run(more, tmp_path)
    assert summary["matchups"]["junior"]["games"] == 4
    assert (matchup / "games.jsonl").read_text().startswith(before)
    stored = json.loads((tmp_path / "bitstrings.json").read_text())["bitstrings"]
    assert len(stored) == 2 and stored[0][:6] == json.loads(before.splitlines()[0])["bitstring"][:6]


def test_attuned_results_add_the_match_against_the_tree_senior_to_the_frameworks():
    from experiments import skill_compat_attuned

    row = {"games": 8, "win_share": 0.625, "win_share_se": 0.1}
    summary = {"framework": "stt", "matchups": {"attuned": row, "tree": {**row, "win_share": 0.5}},
               "paired_differences": {"attuned-vs-tree": {"games": 8, "difference": 0.125, "se": 0.05}},
               "versus_tree": {"attuned": {**row, "win_share": 0.75, "win_share_se": 0.08}}}
    quantities = skill_compat_attuned.results(summary, None)
    assert sorted(quantities) == ["difference_attuned_tree", "win_share_attuned", "win_share_attuned_vs_tree",
                                  "win_share_tree"]
    versus = quantities["win_share_attuned_vs_tree"]
    assert (versus.value, versus.error, versus.error_kind, versus.n, versus.over) == (0.75, 0.08, "se", 8, "games")
    assert quantities["difference_attuned_tree"].paired
