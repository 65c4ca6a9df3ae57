"""alphagateau-versus: the pooled score and its standard errors, and the launcher end to end at toy size."""

import json
import math

import pytest

from experiments.alphagateau_versus import run, score_statistics
from zerolab.config import load_config


def test_score_statistics_pool_the_games_and_compare_the_seeds():
    statistics = score_statistics([{"wins": 3, "draws": 1, "losses": 0}, {"wins": 1, "draws": 1, "losses": 2}])
    scores = [1, 1, 1, 0.5, 1, 0.5, 0, 0]
    mean = sum(scores) / 8
    assert statistics["games"] == 8 and statistics["score"] == pytest.approx(mean)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / 7)
    assert statistics["score_se"] == pytest.approx(sd / math.sqrt(8))
    assert statistics["seed_scores"] == [0.875, 0.375]
    assert statistics["score_se_between_seeds"] == pytest.approx(abs(0.875 - 0.375) / 2)  # sd of two / √2
    assert statistics["elo"] == pytest.approx(400 * math.log10(mean / (1 - mean)))
    assert statistics["elo_se"] == pytest.approx(400 / math.log(10) * statistics["score_se"] / (mean * (1 - mean)))


def test_presets_share_the_training_keys_and_differ_in_seeds_and_games():
    tiny, evidence = load_config("alphagateau-versus", "tiny"), load_config("alphagateau-versus", "evidence")
    assert list(tiny.seeds) == [0] and list(evidence.seeds) == [0, 1, 2] and evidence.match.games == 128
    for key in ("game", "search", "selfplay", "replay", "train", "models", "iterations"):
        assert tiny[key].to_dict() if hasattr(tiny[key], "to_dict") else tiny[key] == \
            (evidence[key].to_dict() if hasattr(evidence[key], "to_dict") else evidence[key]), key
    assert evidence.models.alphagateau.heads == "paper"


@pytest.mark.slow
def test_the_launcher_trains_both_networks_per_seed_plays_them_and_resumes(tmp_path):
    config = load_config("alphagateau-versus", "tiny", [
        "iterations=1", "selfplay.num_games=4", "selfplay.plies_per_iteration=4", "search.num_simulations=2",
        "search.max_num_considered_actions=2", "train.batch_size=8", "models.alphagateau.embedding_size=8",
        "models.alphagateau.num_blocks=1", "models.resnet.channels=8", "models.resnet.num_blocks=1",
        "match.games=2", "match.num_simulations=2", "match.max_game_plies=6", "progress=False", "compilation_cache=",
        "seeds=[3, 4]"])
    summary = run(config, tmp_path)
    assert summary["seeds"] == [3, 4] and summary["games"] == 4 and summary["players"] == ["alphagateau", "resnet"]
    for seed in (3, 4):
        match = json.loads((tmp_path / f"seed-{seed}" / "match.json").read_text())
        assert match["wins"] + match["draws"] + match["losses"] == 2
        assert match["training"]["alphagateau"]["parameters"] != match["training"]["resnet"]["parameters"]
        assert (tmp_path / f"seed-{seed}" / "games.pgn").stat().st_size > 0
    before = (tmp_path / "seed-3" / "match.json").stat().st_mtime_ns
    assert run(config, tmp_path)["matches"] == summary["matches"]  # resumed: nothing trained or played again
    assert (tmp_path / "seed-3" / "match.json").stat().st_mtime_ns == before
