"""Tests of zerolab.evaluation.elo (the virtual-draw WLS estimator), .book (the JSON book) and .matchmaking (Algorithm 2)."""

import json
import math

import numpy as np
import pytest

from zerolab.evaluation import elo, matchmaking
from zerolab.evaluation.book import BOOK_FORMAT, EloBook
from zerolab.evaluation.elo import DisconnectedPlayersError
from zerolab.play.results import MatchResult

TRUE_RATINGS = {"alpha": 700.0, "bravo": 850.0, "charlie": 950.0, "delta": 1050.0, "echo": 1150.0, "foxtrot": 1300.0}


def simulate_match(rng, rating_a, rating_b, games, draw_rate=0.2):
    """Results of a logistic-Elo match with some draws: the expected score matches the Elo model exactly."""
    expected = elo.expected_score(rating_a - rating_b)
    draw = min(draw_rate, 2 * min(expected, 1 - expected))
    win = expected - draw / 2
    outcomes = rng.choice(3, size=games, p=[win, draw, 1 - win - draw])
    return tuple(int(np.sum(outcomes == k)) for k in range(3))


def round_robin(rng, true_ratings, games):
    names = sorted(true_ratings)
    results = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            results.append(MatchResult(a, b, *simulate_match(rng, true_ratings[a], true_ratings[b], games)))
    return results


def test_recovers_true_ratings_within_two_sigma():
    rng = np.random.default_rng(1234)
    results = round_robin(rng, TRUE_RATINGS, games=300)
    fitted = elo.fit_ratings(results)
    assert np.mean(fitted.ratings) == pytest.approx(1000.0, abs=1e-9)
    true_mean = np.mean(list(TRUE_RATINGS.values()))
    misses = 0
    for player, truth in TRUE_RATINGS.items():
        rating, sigma = fitted.rating(player)
        assert 5 < sigma < 40
        error = abs(rating - (truth - true_mean + 1000.0))
        assert error < 4 * sigma, (player, rating, truth, sigma)
        misses += error > 2 * sigma
    assert misses <= 1
    assert list(np.argsort(fitted.ratings)) == [fitted.index(p) for p in sorted(TRUE_RATINGS, key=TRUE_RATINGS.get)]


def test_two_players_match_the_closed_form():
    fitted = elo.fit_ratings([MatchResult("a", "b", wins=30, draws=10, losses=20)])
    score = (30 + 5 + 0.5) / 61
    difference = 400 * math.log10(score / (1 - score))
    variance = (400 / math.log(10)) ** 2 / (score * (1 - score) * 61)
    assert fitted.rating("a")[0] == pytest.approx(1000 + difference / 2)
    assert fitted.rating("b")[0] == pytest.approx(1000 - difference / 2)
    assert fitted.difference("a", "b") == pytest.approx((difference, math.sqrt(variance)))
    assert fitted.rating("a")[1] == pytest.approx(math.sqrt(variance) / 2)


def test_virtual_draw_keeps_a_sweep_finite():
    estimate = elo.estimate_pair(MatchResult("strong", "weak", wins=10))
    assert estimate.score == pytest.approx(10.5 / 11)
    assert math.isfinite(estimate.difference) and 400 < estimate.difference < 700
    assert math.isfinite(estimate.variance) and estimate.variance > 0
    fitted = elo.fit_ratings([MatchResult("strong", "weak", wins=10)])
    assert fitted.rating("strong")[0] > 1000 > fitted.rating("weak")[0]


def test_results_accumulate_in_either_orientation():
    book = EloBook()
    book.add_result(MatchResult("b", "a", wins=1, draws=2, losses=3))
    book.add_result(MatchResult("a", "b", wins=4, draws=0, losses=1))
    assert book.result_between("a", "b") == MatchResult("a", "b", wins=7, draws=2, losses=2)
    assert book.result_between("b", "a").wins == 2
    assert len(book.results) == 1


def test_disconnected_players_are_named():
    results = [MatchResult("a", "b", 3, 1, 2), MatchResult("c", "d", 2, 2, 2), MatchResult("d", "e", 1, 0, 1)]
    with pytest.raises(DisconnectedPlayersError, match=r"\{c, d, e\}.*\{a, b\}") as caught:
        elo.fit_ratings(results)
    assert caught.value.groups == [["c", "d", "e"], ["a", "b"]]
    book = EloBook(players=["lonely"], results=results[:1])
    with pytest.raises(DisconnectedPlayersError, match="lonely"):
        book.ratings()


def test_invalid_results_are_rejected_with_the_field_named():
    with pytest.raises(ValueError, match="wins"):
        MatchResult("a", "b", wins=-1)
    with pytest.raises(ValueError, match="two different players"):
        MatchResult("a", "a", 1, 0, 0)


def test_json_round_trip_and_atomic_save(tmp_path):
    rng = np.random.default_rng(7)
    book = EloBook(round_robin(rng, {"x": 900.0, "y": 1000.0, "z": 1100.0}, games=40))
    path = tmp_path / "ratings" / "elo.json"
    book.save(path)
    assert [p.name for p in path.parent.iterdir()] == ["elo.json"]  # no temporary file left behind
    data = json.loads(path.read_text())
    assert data["format"] == BOOK_FORMAT == "zerolab.evaluation.elo/1" and set(data["ratings"]) == {"x", "y", "z"}
    loaded = EloBook.load(path)
    assert loaded.results == book.results and loaded.players == book.players
    for player, (rating, sigma) in book.ratings().items():
        assert loaded.ratings()[player] == pytest.approx((rating, sigma))
        assert data["ratings"][player]["rating"] == pytest.approx(rating)
    loaded.add_result(MatchResult("x", "y", wins=5))
    loaded.save(path)
    assert EloBook.load(path).result_between("x", "y").games == book.result_between("x", "y").games + 5


def test_format_table_lists_players_strongest_first():
    book = EloBook([MatchResult("weak", "strong", wins=2, draws=2, losses=16)])
    table = book.format_table()
    lines = table.splitlines()
    assert "±2σ" in lines[0]
    assert lines[1].split()[1] == "strong" and lines[2].split()[1] == "weak"
    assert "85.0%" in lines[1]  # 16 wins + 2 draws out of 20
    for line in lines[1:]:  # the columns: the rating, then twice its σ
        rating, sigma = book.rating(line.split()[1])
        assert sigma > 1 and [float(column) for column in line.split()[2:4]] == [round(rating, 1), round(2 * sigma, 1)]


def test_matchmaking_plays_the_five_closest_then_refits():
    ladder = {f"p{i}": 600.0 + 100 * i for i in range(9)}  # p0 600 ... p8 1400
    rng = np.random.default_rng(3)
    book = EloBook(round_robin(rng, ladder, games=400))
    before = book.ratings()
    truth = dict(ladder, newcomer=1010.0)
    chosen, expected = [], []

    def play_match(player, opponent):
        # What Algorithm 2 should pick now: the closest not-yet-played player to the current estimate.
        if book.games_of(player):
            estimate = book.rating(player)[0]
            current = {name: rating for name, (rating, _) in book.ratings().items() if name != player}
        else:
            estimate, current = 1000.0, {name: rating for name, (rating, _) in before.items()}
        expected.append(matchmaking.closest_opponent(estimate, current, excluded=chosen))
        chosen.append(opponent)
        return MatchResult(player, opponent, *simulate_match(rng, truth[player], truth[opponent], games=200))

    played = matchmaking.rate_new_player(book, "newcomer", play_match, initial_rating=1000.0)
    assert len(played) == 5 and len(set(chosen)) == 5
    assert chosen == expected
    assert chosen[0] == min(before, key=lambda name: abs(before[name][0] - 1000.0))
    assert set(chosen) <= {"p2", "p3", "p4", "p5", "p6", "p7"}
    assert all(result.player_a == "newcomer" for result in played)
    rating, sigma = book.rating("newcomer")
    true_mean = np.mean(list(truth.values()))
    assert abs(rating - (1010.0 - true_mean + 1000.0)) < 4 * sigma


def test_matchmaking_first_player_is_just_added_and_second_plays_it():
    book = EloBook()
    assert matchmaking.rate_new_player(book, "first", lambda a, b: pytest.fail("no match expected")) == []
    assert book.players == ("first",) and book.ratings() == {"first": (1000.0, 0.0)}
    played = matchmaking.rate_new_player(book, "second", lambda a, b: MatchResult(a, b, wins=6, draws=2, losses=2))
    assert [result.players for result in played] == [("second", "first")]
    assert book.rating("second")[0] > 1000 > book.rating("first")[0]


def test_closest_opponent_breaks_ties_by_name():
    assert matchmaking.closest_opponent(1000, {"b": 1050, "a": 950, "c": 1200}) == "a"
    assert matchmaking.closest_opponent(1000, {"a": 950}, excluded=["a"]) is None


# --- connected groups, malformed books, the eligibility filter ------------------------------------------------------


def test_connected_groups_ignore_pairs_without_games_and_keep_lonely_players():
    results = [MatchResult("a", "b", wins=1), MatchResult("b", "c", draws=1), MatchResult("d", "e"),
               MatchResult("f", "g", losses=2)]
    groups = elo.connected_groups(["z", "a"], results)
    assert groups == [["a", "b", "c"], ["f", "g"], ["d"], ["e"], ["z"]]
    assert elo.connected_groups([], []) == []


def test_a_disconnected_book_saves_loads_and_names_its_groups(tmp_path):
    book = EloBook([MatchResult("a", "b", wins=3, losses=1), MatchResult("c", "d", draws=2)], players=["e"])
    path = tmp_path / "elo.json"
    book.save(path)
    data = json.loads(path.read_text())
    assert data["ratings"] is None and "{a, b}" in data["ratings_error"] and "{e}" in data["ratings_error"]
    loaded = EloBook.load(path)
    assert loaded.players == book.players and loaded.results == book.results
    with pytest.raises(DisconnectedPlayersError) as caught:
        loaded.ratings()
    assert caught.value.groups == [["a", "b"], ["c", "d"], ["e"]]
    loaded.add_result(MatchResult("b", "c", wins=1))
    loaded.add_result(MatchResult("d", "e", wins=1))
    assert set(loaded.ratings()) == {"a", "b", "c", "d", "e"}  # one match between groups connects them


def test_a_disconnected_book_is_tabled_group_by_group_each_on_its_own_scale():
    book = EloBook([MatchResult("a", "b", wins=3, losses=1), MatchResult("c", "d", draws=2),
                    MatchResult("d", "f", wins=2)], players=["e"])
    assert [group.players for group in book.groups()] == [("c", "d", "f"), ("a", "b"), ("e",)]
    for group in book.groups()[:2]:  # each fitted alone, its mean pinned at the book's
        ratings = group.ratings()
        assert sum(rating for rating, _ in ratings.values()) / len(ratings) == pytest.approx(book.mean_rating)
    table = book.format_table()
    sections = table.split("\n\n")
    assert len(sections) == 3 and all(section.startswith(f"group {number} ") for number, section in
                                      enumerate(sections, 1))
    assert sections[1].splitlines()[2].split()[1] == "a" and sections[1].splitlines()[1:] == \
        EloBook([MatchResult("a", "b", wins=3, losses=1)]).format_table().splitlines()
    assert sections[2].endswith("e: no games")
    connected = EloBook([MatchResult("a", "b", wins=3, losses=1)])
    assert [group.players for group in connected.groups()] == [("a", "b")]


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"format": "other/1"}', "expected format"),
    ('{"format": "zerolab.evaluation.elo/1", "players": "ab", "results": []}', "must be lists"),
    ('{"format": "zerolab.evaluation.elo/1", "players": ["a", "b"], "results": [{"player_a": "a", "player_b": "b", "wins": 1,'
     ' "draws": 0}]}', "lacks the field 'losses'"),
    ('{"format": "zerolab.evaluation.elo/1", "players": ["a", "b"], "results": [{"player_a": "a", "player_b": "b", "wins": -1,'
     ' "draws": 0, "losses": 0}]}', "wins must be a non-negative integer"),
    ('{"format": "zerolab.evaluation.elo/1", "players": ["a"], "results": [{"player_a": "a", "player_b": "ghost", "wins": 1,'
     ' "draws": 0, "losses": 0}]}', r"missing from its 'players' list: \['ghost'\]"),
    ('{"format": "zerolab.evaluation.elo/1", "players": ["a"], "results": [7]}', "must be a JSON object, got 7"),
])
def test_malformed_books_are_clear_errors(tmp_path, text, message):
    path = tmp_path / "elo.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        EloBook.load(path)


def test_matchmaking_only_plays_eligible_opponents():
    ladder = {"p0": 800.0, "p1": 900.0, "p2": 1000.0, "p3": 1100.0, "p4": 1200.0}
    rng = np.random.default_rng(5)
    book = EloBook(round_robin(rng, ladder, games=60))
    opponents = []

    def play(player, opponent):
        opponents.append(opponent)
        return MatchResult(player, opponent, *simulate_match(rng, 1000.0, ladder[opponent], 20))

    played = matchmaking.rate_new_player(book, "new", play, num_opponents=5, initial_rating=1000.0,
                                 eligible=lambda name: name in {"p0", "p4"})
    assert sorted(opponents) == ["p0", "p4"] and len(played) == 2  # fewer eligible than num_opponents
    assert book.games_of("new") == 40
    nobody = matchmaking.rate_new_player(book, "other", play, eligible=lambda name: False)
    assert nobody == [] and "other" in book and book.games_of("other") == 0


def test_the_score_se_is_the_sample_sd_of_the_game_scores_over_root_n():
    scores = np.array([1.0] * 5 + [0.5] * 3 + [0.0] * 2)
    assert elo.score_standard_error(5, 3, 2) == pytest.approx(scores.std(ddof=1) / np.sqrt(10))
    assert elo.score_standard_error(0, 10, 0) == 0.0
    assert math.isnan(elo.score_standard_error(1, 0, 0))
