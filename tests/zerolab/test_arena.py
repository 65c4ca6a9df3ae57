"""The arena against known games: scripted agents play fixed mates, python-chess checks the PGN, pgx is the referee.

Scholar's mate (White mates on ply 7) and fool's mate (Black mates on ply 4) decide W/D/L exactly, so a wrong colour
or score parity in the arena changes the counts; knights shuffling to the ply cap give adjudicated draws.
"""

from __future__ import annotations


import dataclasses

import chess
import chess.pgn
import jax
import numpy as np
import pytest

from zerolab.play.agents import Agent
from zerolab.play.arena import MemberChoice, TeamAgent, play_games, play_match, write_pgn
from zerolab.games import make_game
from zerolab.games.pgn import read_game_records, write_game_records

SCHOLARS_MATE_WHITE = ["e2e4", "f1c4", "d1h5", "h5f7"]
SCHOLARS_MATE_BLACK = ["e7e5", "b8c6", "g8f6"]
FOOLS_MATE_WHITE = ["f2f3", "g2g4"]
FOOLS_MATE_BLACK = ["e7e5", "d8h4"]
KNIGHTS_WHITE = ["g1f3", "f3g1"] * 10
KNIGHTS_BLACK = ["g8f6", "f6g8"] * 10
#: After 1. f3 e5 2. g4: Black to move mates with Qh4#.
FOOLS_MATE_IN_ONE = "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2"


class ScriptedAgent(Agent):
    """Plays fixed UCI moves: ``white[k]`` / ``black[k]`` as its k-th move with that colour since the start
    position; answers only the lanes it is asked about and logs them (and the plies it only observed)."""

    def __init__(self, name, game, white, black):
        self.name, self.game, self.white, self.black = name, game, white, black
        self.new_games = 0
        self.asked: list[list[int]] = []  # the lanes of each call
        self.observed = 0

    def select_actions(self, states, key, active=None):
        del key
        host = jax.device_get(states)
        actions = np.zeros(host.terminated.shape[0], np.int32)
        active = ~np.asarray(host.terminated) if active is None else active
        self.asked.append(np.flatnonzero(active).tolist())
        for index in range(actions.shape[0]):
            state = jax.tree.map(lambda leaf: leaf[index], host)
            if not active[index]:
                continue
            colour = self.game.to_fen(state).split()[1]
            script = self.white if colour == "w" else self.black
            # The moves this colour has made: half the plies since the start position, whoever started.
            actions[index] = self.game.text_to_action(script[int(state._step_count) // 2], state)
        return actions

    def new_game(self):
        self.new_games += 1

    def observe(self, states):
        self.observed += 1



def parsed_games(path):
    games = []
    with open(path) as stream:
        while (game := chess.pgn.read_game(stream)) is not None:
            games.append(game)
    return games


def final_board(pgn_game):
    board = pgn_game.board()
    for move in pgn_game.mainline_moves():
        board.push(move)
    return board


def test_mates_with_both_colours_score_as_wins_for_the_mating_agent(chess_game, tmp_path):
    mater = ScriptedAgent("mater", chess_game, SCHOLARS_MATE_WHITE, FOOLS_MATE_BLACK)
    victim = ScriptedAgent("victim", chess_game, FOOLS_MATE_WHITE, SCHOLARS_MATE_BLACK)
    match = play_match(chess_game, mater, victim, 4, jax.random.key(0), max_game_plies=20, show_progress=False)
    assert (match.result.wins, match.result.draws, match.result.losses) == (4, 0, 0)
    assert match.score == 1.0
    reverse = play_match(chess_game, victim, mater, 4, jax.random.key(0), max_game_plies=20, show_progress=False)
    assert (reverse.result.wins, reverse.result.draws, reverse.result.losses) == (0, 0, 4)
    assert mater.new_games == victim.new_games == 4  # once per batch, two batches per match

    path = write_pgn(chess_game, match, tmp_path / "mates.pgn")
    games = parsed_games(path)
    assert len(games) == 4
    for pgn_game, record in zip(games, match.games):
        board = final_board(pgn_game)
        assert board.is_checkmate()
        mater_is_white = pgn_game.headers["White"] == "mater"
        assert pgn_game.headers["Result"] == ("1-0" if mater_is_white else "0-1")
        assert board.outcome().result() == pgn_game.headers["Result"]
        assert int(pgn_game.headers["PlyCount"]) == board.ply() == (7 if mater_is_white else 4) == record.plies
        assert "Termination" not in pgn_game.headers
    assert sorted(game.headers["White"] for game in games) == ["mater", "mater", "victim", "victim"]


def test_games_reaching_the_ply_cap_are_draws_with_a_termination_header(chess_game, tmp_path):
    one = ScriptedAgent("one", chess_game, KNIGHTS_WHITE, KNIGHTS_BLACK)
    two = ScriptedAgent("two", chess_game, KNIGHTS_WHITE, KNIGHTS_BLACK)
    match = play_match(chess_game, one, two, 2, jax.random.key(1), max_game_plies=6, show_progress=False)
    assert (match.result.wins, match.result.draws, match.result.losses) == (0, 2, 0)
    assert all(record.capped and record.plies == 6 and len(record.moves) == 6 for record in match.games)
    for pgn_game in parsed_games(write_pgn(chess_game, match, tmp_path / "draws.pgn")):
        assert pgn_game.headers["Result"] == "1/2-1/2"
        assert pgn_game.headers["Termination"] == "ply limit (adjudicated draw)"
        assert final_board(pgn_game).ply() == 6 and not final_board(pgn_game).is_game_over()


def test_start_fens_are_played_with_both_colours_and_written_with_setup_headers(chess_game, tmp_path):
    # Whoever moves first (Black, in this FEN) mates at once: each agent wins the game it starts.
    one = ScriptedAgent("one", chess_game, [], ["d8h4"])
    two = ScriptedAgent("two", chess_game, [], ["d8h4"])
    match = play_match(chess_game, one, two, 2, jax.random.key(2), max_game_plies=10, show_progress=False,
                       start_fens=[FOOLS_MATE_IN_ONE])
    assert (match.result.wins, match.result.draws, match.result.losses) == (1, 0, 1)
    games = parsed_games(write_pgn(chess_game, match, tmp_path / "fen.pgn"))
    for pgn_game, record in zip(games, match.games):
        assert pgn_game.headers["SetUp"] == "1" and pgn_game.headers["FEN"] == FOOLS_MATE_IN_ONE
        assert pgn_game.headers["Black"] == record.first_player  # Black moves first in this FEN
        assert pgn_game.headers["Result"] == "0-1" and final_board(pgn_game).is_checkmate()
    with pytest.raises(ValueError, match="num_games must be 2"):
        play_match(chess_game, one, two, 4, jax.random.key(2), start_fens=[FOOLS_MATE_IN_ONE], show_progress=False)


def test_team_agent_delegates_by_rule_and_records_who_moved(chess_game, tmp_path):
    opener = ScriptedAgent("opener", chess_game, ["e2e4", "xxxx"], ["e7e5", "xxxx"])
    finisher = ScriptedAgent("finisher", chess_game, SCHOLARS_MATE_WHITE, FOOLS_MATE_BLACK)
    victim = ScriptedAgent("victim", chess_game, FOOLS_MATE_WHITE, SCHOLARS_MATE_BLACK)
    team = TeamAgent("team", [opener, finisher], MemberChoice(lambda states, plies: (np.asarray(plies) >= 2).astype(int),
                                                              roles=("first", "rest")))
    match = play_match(chess_game, team, victim, 2, jax.random.key(3), max_game_plies=20, show_progress=False)
    assert (match.result.wins, match.result.losses) == (2, 0)
    white_game = next(record for record in match.games if record.first_player == "team")
    assert white_game.movers == ["team/opener", "victim", "team/finisher", "victim", "team/finisher", "victim",
                                 "team/finisher"]
    black_game = next(record for record in match.games if record.first_player == "victim")
    assert black_game.movers == ["victim", "team/opener", "victim", "team/finisher"]
    # the rule's notes on each move (the victim adds none), in the JSON lines and as PGN comments
    assert black_game.annotations == [{}, {"role": "first", "player": "opener"}, {},
                                      {"role": "rest", "player": "finisher"}]
    path = write_game_records(match.games, tmp_path / "games.jsonl", event="team test")
    assert read_game_records(path) == match.games
    tagged = dataclasses.replace(black_game, headers={"Bitstring": "0101"})
    pgn_game = parsed_games(write_pgn(chess_game, dataclasses.replace(match, games=[tagged]), tmp_path / "t.pgn"))[0]
    assert [node.comment for node in pgn_game.mainline()] == ["", "role=first player=opener", "",
                                                              "role=rest player=finisher"]
    assert pgn_game.headers["Bitstring"] == "0101" and final_board(pgn_game).is_checkmate()
    with pytest.raises(ValueError, match="member indices"):
        bad = TeamAgent("bad", [opener], MemberChoice(lambda states, plies: np.full(plies.shape, 3)))
        play_match(chess_game, bad, victim, 2, jax.random.key(3), show_progress=False)


def test_one_batch_seats_either_agent_first_and_asks_each_about_its_lanes_only(chess_game):
    mater = ScriptedAgent("mater", chess_game, SCHOLARS_MATE_WHITE, FOOLS_MATE_BLACK)
    victim = ScriptedAgent("victim", chess_game, FOOLS_MATE_WHITE, SCHOLARS_MATE_BLACK)
    records = play_games(chess_game, mater, victim, 2, jax.random.key(5), 20, second_moves_first=[False, True])
    # lane 0: the mater has White and mates on ply 7; lane 1: the victim has White and is mated on ply 4
    assert [(r.first_player, r.second_player, r.first_player_score, r.plies) for r in records] == [
        ("mater", "victim", 1.0, 7), ("victim", "mater", 0.0, 4)]
    assert records[1].movers == ["victim", "mater", "victim", "mater"]
    # each ply, each agent is asked about the lanes where it is to move (none when its games are over: it observes)
    assert mater.asked == [[0], [1], [0], [1], [0], [0]] and victim.asked == [[1], [0], [1], [0], [0]]
    assert (mater.observed, victim.observed) == (1, 2)  # plies 4-6: lane 0 alone, one agent to move, the other shown
    # records say the same as two one-colour batches
    alone = play_games(chess_game, victim, mater, 1, jax.random.key(5), 20)[0]
    assert (alone.moves, alone.first_player_score) == (records[1].moves, records[1].first_player_score)


class IllegalAgent(Agent):
    """Plays action 0, not a legal move at the start."""

    name = "illegal"

    def select_actions(self, states, key, active=None):
        return np.zeros(np.asarray(states.terminated).shape[0], np.int32)


def test_an_illegal_action_stops_the_match_naming_the_agent(chess_game):
    victim = ScriptedAgent("victim", chess_game, FOOLS_MATE_WHITE, SCHOLARS_MATE_BLACK)
    with pytest.raises(ValueError, match="illegal chose action 0, which is not legal in game lane 0 at ply 0"):
        play_games(chess_game, IllegalAgent(), victim, 1, jax.random.key(0), 4)


class FirstLegalAgent(Agent):
    """Plays the legal action with the lowest pgx id."""

    def __init__(self, name):
        self.name = name

    def select_actions(self, states, key, active=None):
        del key
        return np.argmax(np.asarray(states.legal_action_mask), axis=-1).astype(np.int32)


def test_gardner_games_from_a_black_to_move_fen_replay_in_fairy_stockfish(tmp_path):
    from tests.game_record_checks import check_game_file, read_gardner_pgn

    game = make_game("gardner_chess")
    fen = "rnbqk/ppppp/P4/1PPPP/RNBQK b - - 0 1"  # after 1. a3
    match = play_match(game, FirstLegalAgent("one"), FirstLegalAgent("two"), 2, jax.random.key(4), max_game_plies=9,
                       show_progress=False, start_fens=[fen])
    path = write_pgn(game, match, tmp_path / "gardner.pgn")
    assert check_game_file(path) == 2  # every move legal for pyffish from the FEN, the Result consistent
    for (headers, moves), record in zip(read_gardner_pgn(path), match.games):
        assert headers["FEN"] == fen and headers["Black"] == record.first_player and moves == record.moves
    assert "1... " in path.read_text()
