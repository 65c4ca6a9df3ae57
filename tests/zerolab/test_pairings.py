"""zerolab.evaluation.pairings: a fixed schedule of matches in the real arena (scripted mates, pgx as the referee),
its records, files and resumption; and the agent pool that builds and closes the contestants."""

from __future__ import annotations

import types

import chess.pgn
import jax
import numpy as np
import pytest

from tests.zerolab.test_arena import (FOOLS_MATE_BLACK, FOOLS_MATE_WHITE, SCHOLARS_MATE_BLACK, SCHOLARS_MATE_WHITE,
                                      ScriptedAgent)
from zerolab.evaluation.book import EloBook
from zerolab.evaluation.pairings import Pairing, play_pairings, read_pairing_records
from zerolab.evaluation.rating import match_key
from zerolab.play.agents import AgentPool
from zerolab.play.arena import Match, play_match
from zerolab.play.results import MatchResult


class ClosingAgent(ScriptedAgent):
    closed = 0

    def close(self):
        ClosingAgent.closed += 1


def scripted(game):
    """The mater mates with either colour; the victim is mated with either colour."""
    return {
        "mater": lambda: ClosingAgent("mater", game, SCHOLARS_MATE_WHITE, FOOLS_MATE_BLACK),
        "victim": lambda: ClosingAgent("victim", game, FOOLS_MATE_WHITE, SCHOLARS_MATE_BLACK),
    }


def test_a_schedule_plays_in_order_records_each_match_and_resumes(chess_game, tmp_path):
    ClosingAgent.closed = 0
    pairings = [Pairing("mater", "victim", 4),
                Pairing("victim", "mater", 2, key=jax.random.key(5), alternate_colours=False, label="victim-white")]
    book, records = play_pairings(pairings, scripted(chess_game), chess_game, tmp_path, max_game_plies=20)
    assert list(records) == ["mater-vs-victim", "victim-white"]
    first, second = records.values()
    assert (first.result.wins, first.result.draws, first.result.losses) == (4, 0, 0)
    assert (first.first_mover_score, first.second_mover_score, first.score) == (1.0, 1.0, 1.0)
    # victim moved first (White) in both games and was mated in each: fool's mate
    assert (second.result.wins, second.result.losses, second.first_mover_score, second.second_mover_score) == (
        0, 2, 0.0, None)
    assert first.capped == second.capped == 0 and first.fallback_moves == {} and first.wall_s > 0
    assert ClosingAgent.closed == 2  # both agents built once (shared by the two matches) and closed at the end
    assert book.result_between("mater", "victim").games == 6 and book.rating("mater")[0] > book.rating("victim")[0]
    assert EloBook.load(tmp_path / "elo.json").results == book.results
    assert "mater" in (tmp_path / "elo.txt").read_text()
    assert (tmp_path / "figures" / "elo.png").read_bytes()[:4] == b"\x89PNG"
    assert read_pairing_records(tmp_path / "matches.json") == records
    with open(tmp_path / "games" / "victim-white.pgn") as stream:
        games = [game for game in iter(lambda: chess.pgn.read_game(stream), None)]
    assert [game.headers["White"] for game in games] == ["victim"] * 2
    assert all(game.headers["Result"] == "0-1" for game in games)

    def never(name):
        return lambda: pytest.fail(f"{name} was loaded on a resume")

    resumed, again = play_pairings(pairings, {"mater": never("mater"), "victim": never("victim")}, chess_game,
                                   tmp_path, max_game_plies=20)
    assert again == records and resumed.results == book.results  # nothing played again
    extended = pairings + [Pairing("victim", "mater", 4)]
    _, more = play_pairings(extended, scripted(chess_game), chess_game, tmp_path, max_game_plies=20)
    assert more["victim-vs-mater"].result.losses == 4 and more["mater-vs-victim"] == first
    with pytest.raises(ValueError, match=r"mater-vs-victim was played as \('mater', 'victim'\) over 4 games, the "
                                         r"schedule now asks for .* over 6"):
        play_pairings([Pairing("mater", "victim", 6)], scripted(chess_game), chess_game, tmp_path, max_game_plies=20)
    # a pairing in its own game (Go at another komi, say) is played and recorded in it, not in the schedule's
    no_game = types.SimpleNamespace(move_record_format=None)
    _, own = play_pairings([Pairing("mater", "victim", 2, game=chess_game)], scripted(chess_game), no_game,
                           tmp_path / "own-game", max_game_plies=20, event="own game")
    assert own["mater-vs-victim"].result.wins == 2
    with open(tmp_path / "own-game" / "games" / "mater-vs-victim.pgn") as stream:
        assert chess.pgn.read_game(stream).headers["Event"] == "own game"  # the schedule's name for its records


def test_an_agent_is_closed_after_the_last_pairing_that_names_it(chess_game, tmp_path):
    ClosingAgent.closed = 0
    loaders = {**scripted(chess_game),
               "spare": lambda: ClosingAgent("spare", chess_game, SCHOLARS_MATE_WHITE, FOOLS_MATE_BLACK)}
    closed_before = []

    def play(pairing, key, pool):
        closed_before.append(ClosingAgent.closed)
        return play_match(chess_game, pool[pairing.player_a], pool[pairing.player_b], pairing.games, key,
                          max_game_plies=20, show_progress=False)

    pairings = [Pairing("spare", "victim", 2), Pairing("mater", "victim", 2), Pairing("victim", "mater", 2)]
    play_pairings(pairings, loaders, chess_game, tmp_path, max_game_plies=20, play=play)
    assert closed_before == [0, 1, 1]  # the spare's engine went once its one match ended; the others at the end
    assert ClosingAgent.closed == 3


def test_keys_default_to_the_match_key_and_bad_schedules_are_named(tmp_path):
    played = []

    def play(pairing, key, pool):
        played.append((pairing.name, key, pool))
        return Match(MatchResult(pairing.player_a, pairing.player_b, wins=pairing.games, draws=0, losses=0), [],
                     extras={"pairing": pairing.name, "games": [pairing.games]})

    given = jax.random.key(9)
    no_records = types.SimpleNamespace(move_record_format=None)  # a game without a record format: no game files
    _, records = play_pairings([Pairing("a", "b", 2), Pairing("b", "c", 2, key=given, game=no_records)], {},
                               no_records, tmp_path, max_game_plies=10, seed=3, play=play)
    assert [name for name, _, _ in played] == ["a-vs-b", "b-vs-c"]
    assert isinstance(played[0][2], AgentPool) and played[0][2] is played[1][2]  # one pool for the schedule
    assert np.array_equal(jax.random.key_data(played[0][1]), jax.random.key_data(match_key(3, "a", "b")))
    assert np.array_equal(jax.random.key_data(played[1][1]), jax.random.key_data(given))
    # what the play function measured beside the result is kept with it, through matches.json
    assert records["b-vs-c"].extras == {"pairing": "b-vs-c", "games": [2]}
    assert read_pairing_records(tmp_path / "matches.json") == records
    with pytest.raises(ValueError, match=r"pairing labels must be unique, got \['a-vs-b'\]"):
        play_pairings([Pairing("a", "b", 2), Pairing("a", "b", 4)], {}, None, tmp_path, max_game_plies=10, play=play)
    with pytest.raises(ValueError, match=r"pairings name players with no agent: \['z'\]"):
        play_pairings([Pairing("a", "z", 2)], {"a": None}, None, tmp_path / "other", max_game_plies=10)
    with pytest.raises(ValueError, match="pairing a-vs-b: games must be an even number"):
        Pairing("a", "b", 3)

    # a play function that plays another match than its pairing's is refused before anything is recorded
    def swapped(pairing, key, pool):
        return Match(MatchResult(pairing.player_b, pairing.player_a, wins=pairing.games), [])

    def short(pairing, key, pool):
        return Match(MatchResult(pairing.player_a, pairing.player_b, wins=pairing.games - 1), [])

    for wrong, name in ((swapped, "swapped"), (short, "short")):
        with pytest.raises(ValueError, match=r"playing a-vs-b gave .* instead of 2 games between a and b"):
            play_pairings([Pairing("a", "b", 2)], {}, no_records, tmp_path / name, max_game_plies=10, play=wrong)
        assert not (tmp_path / name / "matches.json").exists()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "matches.json").write_text("{not json")
    with pytest.raises(ValueError, match="matches.json is not a matches file written by play_pairings"):
        play_pairings([Pairing("a", "b", 2)], {}, None, tmp_path / "broken", max_game_plies=10, play=play)


def test_the_agent_pool_builds_on_first_use_checks_names_and_closes(chess_game):
    built = []

    def load(name, as_name=None):
        def build():
            built.append(name)
            return ClosingAgent(as_name or name, chess_game, [], [])
        return build

    ClosingAgent.closed = 0
    with AgentPool({"a": load("a"), "b": load("b"), "wrong": load("wrong", "other")}) as pool:
        assert pool["a"] is pool["a"] and built == ["a"]
        with pytest.raises(ValueError, match="the loader of 'wrong' built an agent named 'other'"):
            pool["wrong"]
        with pytest.raises(KeyError, match="no agent named 'c'"):
            pool["c"]
    assert ClosingAgent.closed == 2  # the misnamed one at once, "a" at the end; "b" was never built
