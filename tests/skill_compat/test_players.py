"""The expectors with a mocked engine and junior (the values they compute and the boards they evaluate), framework
games through the core's arena with real Stockfish and a scripted junior (roles follow the bits, engines see the move
list, the cap is a draw), the evaluator's losses, and clear errors."""

from __future__ import annotations

import chess
import jax
import numpy as np
import pytest

from skill_compat import frameworks
from skill_compat.oracle import StockfishOracle, cptowl, rules_result, score_evaluation
from skill_compat.expectors import HbExpector, SttExpector
from skill_compat.players import EnginePlayer, MoveBrain, jitted_piece_types
from skill_compat.records import MatchupFiles, evaluate_game
from skill_compat.teams import HbTeam, SttTeam, play_framework_games
from zerolab import Agent


def lowest_action_junior(states):
    """A junior model: the lowest legal pgx action id in each position."""
    return np.argmax(np.asarray(states.legal_action_mask), axis=-1)


class ScriptedOracle:
    """An engine: fixed MultiPV lines, a fixed reply, and win probabilities looked up by the board's move list
    (``scores``: lines ``(score, W/D/L expectation)`` of the side to move, read through the oracle's own
    conversion); every evaluated move list is logged."""

    def __init__(self, lines, reply, wins, scores=None, default_score=None, default_win=0.5):
        self.lines, self.reply, self.wins, self.default_win = lines, reply, wins, default_win
        self.scores, self.default_score = scores or {}, default_score
        self.evaluated: list[tuple[str, ...]] = []

    def top_moves(self, board, count):
        return self.lines[:count]

    def best_move(self, board):
        return self.reply

    def win_probability(self, board):
        moves = tuple(move.uci() for move in board.move_stack)
        self.evaluated.append(moves)
        return self.wins.get(moves, self.default_win)

    def evaluate(self, board):
        moves = tuple(move.uci() for move in board.move_stack)
        self.evaluated.append(moves)
        score, expectation = self.scores.get(moves, self.default_score)
        wdl = chess.engine.Wdl(round(1000 * expectation), 0, 1000 - round(1000 * expectation))
        return score_evaluation({"score": chess.engine.PovScore(score, board.turn),
                                 "wdl": chess.engine.PovWdl(wdl, board.turn)})


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
    brain = HbExpector(chess_game, evaluator, lambda s: probabilities[None], top=3, evaluation="wdl")
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


# cptowl's hand-computed values: atan(1) = π/4 and atan(√3) = π/3, so at cp = 290.680623072 (× √3) the equation gives
# ½ + π/(4·3.096181612) = 0.75366669718 (½ + π/(3·3.096181612) = 0.83822226291); ½ − those at −cp (atan is odd).
SCALE = 290.680623072
ONE_ATAN = 0.7536666971838628  # cptowl(SCALE)
SQRT3_ATAN = 0.8382222629118171  # cptowl(SCALE·√3)


def test_cptowl_is_the_papers_equation_and_a_mate_is_one_for_the_side_that_mates():
    assert cptowl(0.0) == 0.5
    assert cptowl(SCALE) == pytest.approx(ONE_ATAN, abs=1e-12)
    assert cptowl(-SCALE) == pytest.approx(1 - ONE_ATAN, abs=1e-12)
    assert cptowl(SCALE * np.sqrt(3)) == pytest.approx(SQRT3_ATAN, abs=1e-12)
    assert cptowl(100.0) == pytest.approx(0.6070149, abs=1e-7)  # ½ + atan(0.344020)/3.096182 = ½ + 0.331338/3.096182
    # a knight up: Stockfish's W/D/L model already reads 1000/0/0, cptowl does not saturate
    assert chess.engine.Cp(300).wdl(model="sf15.1", ply=30).expectation() == 1.0
    assert cptowl(300.0) < cptowl(600.0) < cptowl(900.0) < 0.95

    def line(score, turn=chess.WHITE):
        return {"score": chess.engine.PovScore(score, turn),
                "wdl": chess.engine.PovWdl(chess.engine.Wdl(1000, 0, 0), turn)}

    mates = score_evaluation(line(chess.engine.Mate(3)))
    mated = score_evaluation(line(chess.engine.Mate(-2), chess.BLACK))
    assert (mates.cptowl, mates.wdl, mates.centipawns) == (1.0, 1.0, 99_997)
    assert (mated.cptowl, mated.wdl, mated.centipawns) == (0.0, 0.0, -99_998)
    behind = score_evaluation(line(chess.engine.Cp(-290), chess.BLACK))  # the side to move's (Black's) view
    assert behind.cptowl == pytest.approx(cptowl(-290.0), abs=1e-12) and behind.centipawns == -290
    assert behind.wdl == 1.0  # the line's own W/D/L, as sent
    assert behind.for_opponent().cptowl == pytest.approx(cptowl(290.0), abs=1e-12)


def start_hand(chess_game, state, knight=(0.3, 0.1, 0.0, 0.0)):
    """The hand's policy at the start: uniform over legal moves, e2e4 at 5, the knights' moves at ``knight``."""
    legal = np.asarray(state.legal_action_mask)
    probabilities = np.where(legal, 1.0, 0.0)
    for move, p in zip(("g1f3", "b1c3", "g1h3", "b1a3"), knight):
        probabilities[chess_game.uci_to_action(move, state)] = p
    probabilities[chess_game.uci_to_action("e2e4", state)] = 5.0
    return probabilities / probabilities.sum()


def test_hb_expector_values_types_by_cptowl_and_breaks_ties_by_centipawns(chess_game, start):
    _, states = start
    state = jax.tree.map(lambda leaf: leaf[0], states)
    probabilities = start_hand(chess_game, state)
    hand = lambda s: probabilities[None]  # noqa: E731
    knights = {("g1f3",), ("b1c3",), ("g1h3",), ("b1a3",)}
    pawn = frameworks.piece_type_index("P")
    knight = frameworks.piece_type_index("N")
    # W/D/L saturated alike (Black's view 0: our 1), centipawns not: pawn moves leave Black −290.68, knight moves
    # −290.68·√3: cptowl values pawns 0.7537, knights 0.8382; W/D/L ties them at 1 and names the first type, pawns
    scores = {moves: (chess.engine.Cp(-round(SCALE * np.sqrt(3))), 0.0) for moves in knights}
    evaluator = ScriptedOracle([], None, {}, scores, default_score=(chess.engine.Cp(-round(SCALE)), 0.0))
    brain = HbExpector(chess_game, evaluator, hand, top=3)
    assert brain.name_piece_types(states, jax.random.key(0), np.array([True])).piece_type[0] == knight
    assert brain.last_values[0][pawn] == pytest.approx(cptowl(291.0), abs=1e-12)
    assert brain.last_values[0][knight] == pytest.approx(cptowl(503.0), abs=1e-12)
    assert abs(cptowl(291.0) - ONE_ATAN) < 1e-3 and abs(cptowl(503.0) - SQRT3_ATAN) < 1e-3  # the scripted rounding
    saturated = HbExpector(chess_game, ScriptedOracle([], None, {}, default_win=0.0), hand, top=3, evaluation="wdl")
    assert saturated.name_piece_types(states, jax.random.key(0), np.array([True])).piece_type[0] == pawn
    assert saturated.last_values[0] == {pawn: 1.0, knight: 1.0}  # W/D/L 1000/0/0 after every move: a tie
    # every move mates: both types are worth 1, the sooner mate (knights: mate in 1, pawns: in 3) breaks the tie
    mates = {moves: (chess.engine.Mate(-1), 0.0) for moves in knights}
    evaluator = ScriptedOracle([], None, {}, mates, default_score=(chess.engine.Mate(-3), 0.0))
    brain = HbExpector(chess_game, evaluator, hand, top=3)
    assert brain.name_piece_types(states, jax.random.key(0), np.array([True])).piece_type[0] == knight
    assert brain.last_values[0] == {pawn: 1.0, knight: 1.0}
    assert brain.last_centipawns[0] == pytest.approx({pawn: 99_997, knight: 99_999})


def test_hb_expector_over_all_moves_of_a_type_weighs_the_whole_restricted_policy(chess_game):
    """A rook (10 moves) and a king (5): the rook's 3 likeliest moves are good, its other 7 bad.  Over the top 3 the
    rook is worth ½ + 0.2537 (the king ½); over all its moves ½ + (0.3 − 0.56)/0.86 · 0.2537 < ½: the king."""
    fen = "7k/8/8/8/8/8/8/R3K3 w - - 0 1"
    state = chess_game.from_fen(fen)
    states = jax.tree.map(lambda leaf: leaf[None], state)
    types = np.asarray(jitted_piece_types(chess_game)(states))[0]
    rook, king = frameworks.piece_type_index("R"), frameworks.piece_type_index("K")
    rook_moves, king_moves = np.flatnonzero(types == rook), np.flatnonzero(types == king)
    assert (len(rook_moves), len(king_moves), int(np.asarray(state.legal_action_mask).sum())) == (10, 5, 15)
    probabilities = np.zeros(chess_game.num_actions)
    probabilities[rook_moves] = 0.08
    probabilities[rook_moves[:3]] = 0.1
    probabilities[king_moves] = 0.028
    good = {(chess_game.action_to_uci(int(action), state),) for action in rook_moves[:3]}
    bad = {(chess_game.action_to_uci(int(action), state),) for action in rook_moves[3:]}
    scores = {**{moves: (chess.engine.Cp(-round(SCALE)), 0.0) for moves in good},
              **{moves: (chess.engine.Cp(round(SCALE)), 1.0) for moves in bad}}
    hand = lambda s: probabilities[None]  # noqa: E731
    values = {}
    for moves in ("top", "all"):
        evaluator = ScriptedOracle([], None, {}, scores, default_score=(chess.engine.Cp(0), 0.5))
        brain = HbExpector(chess_game, evaluator, hand, top=3, moves=moves)
        named = brain.name_piece_types(states, jax.random.key(0), np.array([True])).piece_type[0]
        values[moves] = (named, brain.last_values[0], len(evaluator.evaluated))
    assert values["top"][0] == rook and values["top"][1][rook] == pytest.approx(cptowl(291.0), abs=1e-12)
    assert values["all"][0] == king and values["all"][1][king] == pytest.approx(0.5, abs=1e-12)
    expected = (0.3 * cptowl(291.0) + 0.56 * cptowl(-291.0)) / 0.86  # ≈ ½ − (0.26/0.86)·0.2537 = 0.4233
    assert values["all"][1][rook] == pytest.approx(expected, abs=1e-12) and abs(expected - 0.42331) < 1e-3
    assert (values["top"][2], values["all"][2]) == (6, 15)  # engine calls: 3 + 3 moves, or all 15


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
