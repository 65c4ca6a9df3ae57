"""The expectors with a mocked engine and junior (the values they compute and the boards they evaluate), framework
games through the core's arena with real Stockfish and a scripted junior (roles follow the bits, engines see the move
list, the cap is a draw), the evaluator's losses, and clear errors."""

from __future__ import annotations

import chess
import jax
import numpy as np
import pytest

from skill_compat import frameworks
from skill_compat.oracle import StockfishOracle, rules_result
from skill_compat.expectors import HbExpector, SttExpector
from skill_compat.players import EnginePlayer, MoveBrain
from skill_compat.records import MatchupFiles, evaluate_game
from skill_compat.teams import HbTeam, SttTeam, play_framework_games
from zerolab import Agent


def lowest_action_junior(states):
    """A junior model: the lowest legal pgx action id in each position."""
    return np.argmax(np.asarray(states.legal_action_mask), axis=-1)


class ScriptedOracle:
    """An engine: fixed MultiPV lines, a fixed reply, and win probabilities looked up by the board's move list;
    every evaluated move list is logged."""

    def __init__(self, lines, reply, wins):
        self.lines, self.reply, self.wins = lines, reply, wins
        self.evaluated: list[tuple[str, ...]] = []

    def top_moves(self, board, count):
        return self.lines[:count]

    def best_move(self, board):
        return self.reply

    def win_probability(self, board):
        moves = tuple(move.uci() for move in board.move_stack)
        self.evaluated.append(moves)
        return self.wins.get(moves, 0.5)


@pytest.fixture(scope="module")
def start(chess_game):
    state = chess_game.init(jax.random.key(0))
    return state, jax.tree.map(lambda leaf: leaf[None], state)


def junior_move(game, moves):
    """The lowest-action junior's move after ``moves`` from the start."""
    step = game.batched_step
    states = jax.tree.map(lambda leaf: leaf[None], game.init(jax.random.key(0)))
    for move in moves:
        state = jax.tree.map(lambda leaf: leaf[0], states)
        states = step(states, np.array([game.uci_to_action(move, state)], np.int32))
    state = jax.tree.map(lambda leaf: leaf[0], states)
    return game.action_to_uci(int(np.argmax(np.asarray(state.legal_action_mask))), state)


def test_stt_expector_values_the_four_bit_patterns(chess_game, start):
    state, _ = start
    j1 = {m: junior_move(chess_game, [m]) for m in ("e2e4", "d2d4")}
    j2 = {m: junior_move(chess_game, [m, j1[m]]) for m in j1}
    j3 = {m: junior_move(chess_game, [m, "g8f6"]) for m in j1}
    # d2d4 is the engine's favourite (11), but the opponent junior's answer to it is good for them (01 low)
    wins = {("d2d4", j1["d2d4"]): 0.2, ("e2e4", j1["e2e4"]): 0.6,
            ("e2e4", j1["e2e4"], j2["e2e4"]): 0.3,  # opponent to move: our view 0.7
            ("d2d4", "g8f6", j3["d2d4"]): 0.5}
    senior = ScriptedOracle([("d2d4", 0.56), ("e2e4", 0.54)], "g8f6", {})
    evaluator = ScriptedOracle([], None, wins)
    expector = SttExpector(chess_game, senior, evaluator, lowest_action_junior, candidates=2)
    move, values = expector.choose(state, chess.Board())
    expected = {"e2e4": {"11": 0.54, "01": 0.6, "00": 0.7, "10": 0.5},
                "d2d4": {"11": 0.56, "01": 0.2, "00": 0.5, "10": 0.5}}
    assert values.keys() == expected.keys()
    for candidate in expected:
        assert values[candidate] == pytest.approx(expected[candidate]), candidate
    assert move == "e2e4"
    # the 00 boards are the candidate, the opponent junior's answer and our junior's reply
    assert ("e2e4", j1["e2e4"], j2["e2e4"]) in evaluator.evaluated
    assert ("d2d4", j1["d2d4"], j2["d2d4"]) in evaluator.evaluated
    # the reference code's quirk evaluates no 00 board and copies the 10 value
    quirk = SttExpector(chess_game, senior, ScriptedOracle([], None, wins), lowest_action_junior, candidates=2,
                        reference_00_quirk=True)
    _, quirk_values = quirk.choose(state, chess.Board())
    assert all(len(moves) != 3 or moves[1] == "g8f6" for moves in quirk.evaluator.evaluated)
    assert quirk_values["e2e4"]["00"] == quirk_values["e2e4"]["10"]


def test_stt_expector_gives_a_mate_its_result(chess_game):
    fen = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"  # Ra8 mates
    board = chess.Board(fen)
    state = chess_game.from_fen(fen)
    senior = ScriptedOracle([("a1a2", 0.9), ("a1a8", 0.95)], "g8h8", {})
    evaluator = ScriptedOracle([], None, {})
    move, values = SttExpector(chess_game, senior, evaluator, lowest_action_junior, candidates=2).choose(state, board)
    assert move == "a1a8" and values["a1a8"] == {"11": 1.0, "10": 1.0, "01": 1.0, "00": 1.0}
    assert not any(moves[:1] == ("a1a8",) for moves in evaluator.evaluated)


def test_hb_expector_weighs_the_hands_top_moves_of_each_type(chess_game, start):
    _, states = start
    legal = np.asarray(states.legal_action_mask)[0]
    probabilities = np.where(legal, 1.0, 0.0)
    state = jax.tree.map(lambda leaf: leaf[0], states)
    knight_moves = {chess_game.uci_to_action(m, state): p for m, p in (("g1f3", 0.3), ("b1c3", 0.1),
                                                                        ("g1h3", 0.0), ("b1a3", 0.0))}
    for action, p in knight_moves.items():
        probabilities[action] = p
    probabilities[chess_game.uci_to_action("e2e4", state)] = 5.0  # the hand's favourite pawn move
    probabilities = probabilities / probabilities.sum()
    wins = {("g1f3",): 0.2, ("b1c3",): 0.5, ("e2e4",): 0.7}  # side to move's (Black's) view
    evaluator = ScriptedOracle([], None, wins)
    brain = HbExpector(chess_game, evaluator, lambda s: probabilities[None], top=3)
    choice = brain.name_piece_types(states, jax.random.key(0), np.array([True]))
    values = brain.last_values[0]
    # knights: top 3 are Nf3 (.3), Nc3 (.1) and one of the zero-probability moves: q = .75, .25, 0
    assert values[frameworks.piece_type_index("N")] == pytest.approx(0.75 * 0.8 + 0.25 * 0.5)
    assert set(values) == {frameworks.piece_type_index("P"), frameworks.piece_type_index("N")}
    assert choice.piece_type[0] == frameworks.piece_type_index("N") and choice.move[0] == -1
    assert sum(1 for moves in evaluator.evaluated if len(moves) == 1) == 6  # 3 pawn + 3 knight moves
    # as an agent alone it plays the hand's most probable move of the type it names
    action = brain.select_actions(states, jax.random.key(0))[0]
    assert chess_game.action_to_uci(int(action), state) == "g1f3"


@pytest.fixture(scope="module")
def stockfish(stockfish_path):
    oracle = StockfishOracle(stockfish_path, nodes=200)
    yield oracle
    oracle.close()


class RecordingPlayer(Agent):
    """A junior that plays the lowest legal action and records the lanes it was asked about."""

    name = "lowest"

    def __init__(self):
        self.calls: list[tuple[np.ndarray, np.ndarray]] = []  # (active lanes, each lane's ply)

    def select_actions(self, states, key, active=None):
        self.calls.append((np.asarray(active).copy(), np.asarray(states._step_count).copy()))
        return lowest_action_junior(states).astype(np.int32)


class UniformHand(Agent):
    """A hand whose policy is uniform over the legal moves."""

    name = "uniform-hand"

    def probabilities(self, states):
        legal = np.asarray(states.legal_action_mask, float)
        return legal / legal.sum(-1, keepdims=True)

    def select_actions(self, states, key, active=None):
        return np.argmax(self.probabilities(states), axis=-1).astype(np.int32)


def test_stt_games_roles_follow_the_bits_and_the_cap_is_a_draw(chess_game, stockfish):
    bits = np.array([frameworks.parse_bitstring("0110100101"), frameworks.parse_bitstring("1111111111")])
    junior = RecordingPlayer()
    senior = EnginePlayer(stockfish, chess_game)
    slots = frameworks.game_pairing(4)
    games = play_framework_games(chess_game, SttTeam("focal", senior, junior), SttTeam("alter", senior, junior),
                                 slots, jax.random.key(0), max_game_plies=10, bitstrings=bits)
    for game in games:
        assert game.capped and game.focal_score == 0.5 and len(game.records) == 10
        row = bits[game.index // 2]
        for record in game.records:
            assert record["role"] == ("senior" if row[record["ply"]] else "junior")
            assert record["team"] == ("focal" if (record["ply"] % 2 == 0) == game.focal_is_white else "alter")
            assert record["bits_before"] == frameworks.format_bitstring(row[: record["ply"]])
        board = chess.Board()
        for move in game.moves:
            assert chess.Move.from_uci(move) in board.legal_moves
            board.push_uci(move)
    # both colours of a bitstring: same roles by ply, the teams swapped
    assert [r["role"] for r in games[0].records] == [r["role"] for r in games[1].records]
    # the junior was asked only about lanes whose bit is 0 at their ply (lanes 2 and 3 read all-ones bits)
    assert junior.calls
    for active, plies in junior.calls:
        assert all(bits[slots[lane].pairing][plies[lane]] == 0 for lane in np.flatnonzero(active))
    # the evaluator: losses are 100·(w_before − w_after) clipped at 0, w_after the next position's complement
    evaluated = evaluate_game(games[0], stockfish)
    for record, following in zip(evaluated, evaluated[1:]):
        assert record["w_after"] == pytest.approx(1 - following["w_before"])
        assert record["loss"] == pytest.approx(max(0.0, 100 * (record["w_before"] - record["w_after"])))
        assert 0 <= record["w_before"] <= 1


def test_a_finished_game_scores_by_pgx_and_its_last_move_gets_the_result(chess_game, stockfish):
    # the junior (lowest action) against Stockfish as both seniors with bits 1 only on the alter side's plies:
    # Stockfish mates quickly; the last move's w_after is the result
    bits = np.array([frameworks.parse_bitstring("01" * 100)])
    junior = RecordingPlayer()
    senior = EnginePlayer(stockfish, chess_game)
    games = play_framework_games(chess_game, SttTeam("focal", senior, junior), SttTeam("alter", senior, junior),
                                 frameworks.game_pairing(2), jax.random.key(0), max_game_plies=200, bitstrings=bits)
    decided = [game for game in games if not game.capped]
    assert decided, "Stockfish should beat a lowest-action junior within 200 plies"
    for game in decided:
        board = chess.Board()
        for move in game.moves:
            board.push_uci(move)
        assert game.focal_score == (0.5 if rules_result(board) == 0.5 else
                                    (1.0 if (board.turn == chess.BLACK) == game.focal_is_white else 0.0))
        last = evaluate_game(game, stockfish)[-1]
        assert last["w_after"] == (game.focal_score if last["team"] == "focal" else 1 - game.focal_score)


def test_hb_games_play_the_named_type_and_classify(chess_game, stockfish, tmp_path):
    uniform_hand = UniformHand()
    brain = MoveBrain(EnginePlayer(stockfish, chess_game), chess_game)
    focal = HbTeam("focal", brain, uniform_hand, chess_game)
    alone = HbTeam("alone", None, uniform_hand, chess_game)
    games = play_framework_games(chess_game, focal, alone, frameworks.game_pairing(2), jax.random.key(0),
                                 max_game_plies=12, hand_seed=5)
    for game in games:
        board = chess.Board()
        for record in game.records:
            move = chess.Move.from_uci(record["move"])
            if record["team"] == "focal":
                assert frameworks.PIECE_TYPES[board.piece_type_at(move.from_square) - 1] == record["named_type"]
                assert record["interaction"] in frameworks.INTERACTIONS and record["brain_move"]
                if record["interaction"] in ("agreement", "correction"):
                    assert record["move"] == record["brain_move"]
            else:
                assert record["move"] == record["h0"] and record["interaction"] is None
            board.push(move)
    # the hand is seeded per game and ply: another arena key replays the same hand-alone games, another seed not
    again = play_framework_games(chess_game, HbTeam("alone", None, uniform_hand, chess_game), alone,
                                 frameworks.game_pairing(2), jax.random.key(1), max_game_plies=4, hand_seed=5)
    other = play_framework_games(chess_game, HbTeam("alone", None, uniform_hand, chess_game), alone,
                                 frameworks.game_pairing(2), jax.random.key(1), max_game_plies=4, hand_seed=6)
    assert [g.moves for g in other] != [g.moves for g in again]
    rerun = play_framework_games(chess_game, HbTeam("alone", None, uniform_hand, chess_game), alone,
                                 frameworks.game_pairing(2), jax.random.key(2), max_game_plies=4, hand_seed=5)
    assert [g.moves for g in rerun] == [g.moves for g in again]
    # resumable files: a torn last line is dropped with its moves
    files = MatchupFiles(tmp_path / "m")
    files.append(games[0], evaluate_game(games[0], stockfish))
    with files.games_path.open("a") as handle:
        handle.write('{"game": 1, "foc')
    with files.moves_path.open("a") as handle:
        handle.write('{"game": 1, "ply": 0}\n')
    files = MatchupFiles(tmp_path / "m")
    assert files.done() == {0} and {move["game"] for move in files.moves()} == {0}
    assert all("loss_h0" in move for move in files.moves())


def test_clear_errors(chess_game, gardner_game):
    junior = RecordingPlayer()
    team = SttTeam("t", junior, junior)
    with pytest.raises(ValueError, match="8x8 chess"):
        play_framework_games(gardner_game, team, team, frameworks.game_pairing(2), jax.random.key(0), 4)
    with pytest.raises(ValueError, match="bitstrings must be"):
        play_framework_games(chess_game, team, team, frameworks.game_pairing(2), jax.random.key(0), 8,
                             bitstrings=np.ones((1, 4), np.uint8))
    oracle = StockfishOracle("/no/such/stockfish", nodes=10)
    with pytest.raises(FileNotFoundError, match="/no/such/stockfish"):
        oracle.best_move(chess.Board())


class EchoAgent(Agent):
    """An agent whose move is ten times the lane number it was given; records its batch sizes."""

    name = "echo"

    def __init__(self):
        self.sizes: list[int] = []

    def select_actions(self, states, key, active=None):
        self.sizes.append(len(states["lane"]))
        return np.asarray(states["lane"]) * 10


def test_network_player_searches_only_the_active_lanes():
    from skill_compat.players import NetworkPlayer

    agent = EchoAgent()
    player = NetworkPlayer(agent)
    positions = {"lane": np.arange(8)}
    active = np.zeros(8, bool)
    active[[1, 4, 6]] = True
    actions = player.select_actions(positions, jax.random.key(0), active)
    np.testing.assert_array_equal(actions, [0, 10, 0, 0, 40, 0, 60, 0])
    assert agent.sizes == [4]  # a half batch
    active[[0, 2]] = True  # five lanes: the whole batch
    np.testing.assert_array_equal(player.select_actions(positions, jax.random.key(0), active)[active],
                                  [0, 10, 20, 40, 60])
    assert agent.sizes == [4, 8]
    assert not player.select_actions(positions, jax.random.key(0), np.zeros(8, bool)).any()
    assert agent.sizes == [4, 8]  # no call without active lanes
