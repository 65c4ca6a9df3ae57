"""zerolab.evaluation.rating: the evaluation config and the round-robin mode (matches faked: no JAX search)."""

import json

import ml_collections
import pytest

from zerolab.evaluation import rating
from zerolab.evaluation.book import EloBook
from zerolab.play.results import MatchResult

STRENGTH = {"a": 0, "b": 1, "c": 2, "d": 3}


def fake_play(log):
    def play(player_a, player_b):
        log.append((player_a, player_b))
        wins = 7 if STRENGTH[player_a] > STRENGTH[player_b] else 1
        return MatchResult(player_a, player_b, wins=wins, draws=0, losses=8 - wins)

    return play


def contestants(names):
    return [rating.Contestant(name, "series", STRENGTH[name], 0.0, lambda: pytest.fail("agents are not loaded"))
            for name in names]


def test_evaluation_config_from_a_config_section_and_its_errors():
    section = ml_collections.ConfigDict({"games": 8, "search": {"num_simulations": 4}, "max_game_plies": 40,
                                         "num_opponents": 2})
    evaluation = rating.EvaluationConfig.from_config(section)
    assert (evaluation.games, evaluation.search.get("num_simulations"), evaluation.mode) == (8, 4, "algorithm2")
    # the rated agents' search is a search section, read as the core's search reads one (the key named in full)
    with pytest.raises(ValueError, match=r"evaluation\.search\.num_simulations must be at least 1, got 0"):
        rating.EvaluationConfig.from_config({"search": {"num_simulations": 0}})
    with pytest.raises(ValueError, match=r"unknown evaluation\.search key 'simulations'; did you mean 'num_simulations'"):
        rating.EvaluationConfig.from_config({"search": {"simulations": 8}})
    match = rating.EvaluationConfig.for_match(ml_collections.ConfigDict(
        {"games": 2, "search": {"num_simulations": 3, "kind": "muzero"}, "max_game_plies": 9, "other": 1}))
    assert match.search.items == (("kind", "muzero"), ("num_simulations", 3)) and match.max_game_plies == 9
    with pytest.raises(ValueError, match=r"unknown evaluation keys \['gamez'\] \(did you mean 'games'\?\); valid keys: \[.*'games'"):
        rating.EvaluationConfig.from_config({"gamez": 8})
    with pytest.raises(ValueError, match="evaluation.games must be int, got 'many'"):
        rating.EvaluationConfig.from_config({"games": "many"})
    with pytest.raises(ValueError, match="evaluation.games must be an even number"):
        rating.EvaluationConfig.from_config({"games": 3})
    with pytest.raises(ValueError, match="evaluation.mode must be one of"):
        rating.EvaluationConfig(mode="swiss")
    with pytest.raises(ValueError, match="evaluation.num_opponents must be at least 1"):
        rating.EvaluationConfig(num_opponents=0)


def test_round_robin_plays_every_pair_once_in_order_and_resumes(tmp_path):
    log = []
    evaluation = rating.EvaluationConfig(games=8, mode="round_robin")
    book, matches = rating.rate_contestants(contestants(["a", "b", "c"]), None, evaluation, tmp_path / "elo.json",
                                            tmp_path, seed=0, show_progress=False, play=fake_play(log))
    assert log == [("a", "b"), ("a", "c"), ("b", "c")] and matches == 3
    ratings = book.ratings()
    assert ratings["c"][0] > ratings["b"][0] > ratings["a"][0]
    assert EloBook.load(tmp_path / "elo.json").results == book.results  # saved
    # the table and the ladder beside the book
    assert (tmp_path / "elo.txt").read_text() == book.format_table() + "\n"
    assert (tmp_path / "figures" / "elo.png").read_bytes()[:4] == b"\x89PNG"
    log.clear()
    book, matches = rating.rate_contestants(contestants(["a", "b", "c", "d"]), None, evaluation,
                                            tmp_path / "elo.json", tmp_path, seed=0, show_progress=False,
                                            play=fake_play(log))
    assert log == [("a", "d"), ("b", "d"), ("c", "d")] and matches == 3  # only the new pairs
    assert book.result_between("a", "b").games == 8  # not played twice
    assert json.loads((tmp_path / "elo.json").read_text())["ratings"]["d"]["games"] == 24


def test_rating_rejects_duplicate_names_and_a_raw_config(tmp_path):
    evaluation = rating.EvaluationConfig(games=2)
    with pytest.raises(ValueError, match="contestant names must be unique"):
        rating.rate_contestants(contestants(["a", "a"]), None, evaluation, tmp_path / "elo.json", tmp_path, 0, False,
                                play=fake_play([]))
    with pytest.raises(TypeError, match="EvaluationConfig"):
        rating.rate_contestants(contestants(["a"]), None, {"games": 2}, tmp_path / "elo.json", tmp_path, 0, False)


def test_match_keys_depend_on_seed_and_order_of_names():
    import jax

    key = rating.match_key(1, "x", "y")
    assert (jax.random.key_data(key) == jax.random.key_data(rating.match_key(1, "x", "y"))).all()
    assert not (jax.random.key_data(key) == jax.random.key_data(rating.match_key(1, "y", "x"))).all()
    assert not (jax.random.key_data(key) == jax.random.key_data(rating.match_key(2, "x", "y"))).all()


def test_algorithm2_starts_each_checkpoint_from_its_series_previous_rating(tmp_path):
    """A new checkpoint's one opponent is the rated player closest to its series' previous rating (c, the strongest,
    the last of the series in the book), not to the book's mean (b, in the middle of the ladder)."""
    EloBook([MatchResult("b", "a", wins=7, losses=1), MatchResult("c", "b", wins=7, losses=1)]).save(
        tmp_path / "elo.json")
    log = []
    evaluation = rating.EvaluationConfig(games=8, num_opponents=1)
    assert evaluation.mode == "algorithm2"
    before = EloBook.load(tmp_path / "elo.json").ratings()
    assert before["b"][0] == pytest.approx(1000.0) and before["c"][0] > 1200  # the mean is b's rating
    book, matches = rating.rate_contestants(contestants(["a", "b", "c", "d"]), None, evaluation,
                                            tmp_path / "elo.json", tmp_path, seed=0, show_progress=False,
                                            play=fake_play(log))
    assert log == [("d", "c")] and matches == 1
    assert book.result_between("d", "c").games == 8
