"""Searchless engines: the workarounds, the UCI front end (full games through python-chess) and the arena agent."""

import sys

import chess
import chess.engine
import numpy as np
import pytest

from distill.engine import EngineOptions, NeuralScorer, SearchlessEngine, allows_repetition_draw
from distill.predictors import PREDICTOR_NAMES, Predictor

# Positions with castling, en passant, promotions (and under-promotions), checks and few legal moves.
ARBITRARY_FENS = [
    chess.STARTING_FEN,
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "8/P7/8/8/8/8/6pk/4K3 w - - 0 1",
    "4k3/8/8/8/8/8/5q2/6K1 w - - 0 1",
    "8/8/8/8/8/5k2/3p4/5K2 b - - 3 60",
]


class ConstantScorer:
    """A stand-in scorer: a fixed win probability for every move (or per move from a dict)."""

    def __init__(self, values=None, default=0.5):
        self.predictor = Predictor("action_value")
        self.values, self.default = values or {}, default

    def __call__(self, boards, moves):
        return [np.array([self.values.get(m.uci(), self.default) for m in board_moves]) for board_moves in moves]


def test_repetition_workaround_scores_a_repeating_move_as_a_draw():
    board = chess.Board()
    for move in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]:
        board.push_uci(move)
    moves = list(board.legal_moves)
    flags = allows_repetition_draw(board, moves)
    assert [m.uci() for m, flag in zip(moves, flags) if flag] == ["f6g8"]
    engine = SearchlessEngine(ConstantScorer({"f6g8": 0.9}, default=0.6))
    (moves, scores), = engine.scores([board])
    assert scores[[m.uci() for m in moves].index("f6g8")] == 0.5
    assert engine.choose_move(board).uci() != "f6g8"
    without = SearchlessEngine(ConstantScorer({"f6g8": 0.9}, default=0.6), EngineOptions(repetition_workaround=False))
    assert without.choose_move(board).uci() == "f6g8"


def test_decisiveness_workaround_lets_stockfish_pick_among_winning_moves(stockfish_path):
    board = chess.Board("7k/8/6K1/8/8/8/8/1Q6 w - - 0 1")
    # the network's favourite, Qa2, stalemates; the other four candidates win
    candidates = {"b1a2": 0.999, "b1b7": 0.998, "b1b6": 0.997, "b1b5": 0.996, "b1b4": 0.995}
    plain = SearchlessEngine(ConstantScorer(candidates, default=0.5))
    assert plain.choose_move(board).uci() == "b1a2"
    decisive = SearchlessEngine(ConstantScorer(candidates, default=0.5),
                                EngineOptions(decisive_engine=f"{stockfish_path}:nodes=5000"))
    with decisive:
        move = decisive.choose_move(board)
    assert move.uci() in candidates and move.uci() != "b1a2"
    # a mate among the candidates is played without asking Stockfish
    with_mate = {"b1a2": 0.999, "b1b7": 0.998, "b1b8": 0.997, "b1b6": 0.996, "b1b5": 0.995}
    mate = SearchlessEngine(ConstantScorer(with_mate, default=0.5), EngineOptions(decisive_engine="not-started"))
    assert mate.choose_move(board).uci() == "b1b8"


def test_opening_temperature_samples_then_stops():
    engine = SearchlessEngine(ConstantScorer({"e2e4": 0.6, "d2d4": 0.59}, default=0.1),
                              EngineOptions(temperature=0.05, temperature_full_moves=5))
    rng = np.random.default_rng(0)
    opening = {engine.choose_move(chess.Board(), rng).uci() for _ in range(30)}
    assert opening == {"e2e4", "d2d4"}
    late = chess.Board("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 6")
    assert {engine.choose_move(late, rng).uci() for _ in range(10)} == {"e2e4"}


@pytest.mark.parametrize("name", PREDICTOR_NAMES)
def test_untrained_engines_play_legal_moves(name):
    engine = SearchlessEngine(NeuralScorer.random_init(Predictor(name, 16), "test"))
    boards = [chess.Board(fen) for fen in ARBITRARY_FENS]
    for board, move in zip(boards, engine.choose_moves(boards)):
        assert move in board.legal_moves


def play_uci_game(command, max_game_plies=40):
    engine = chess.engine.SimpleEngine.popen_uci(command, timeout=120)
    try:
        for fen in ARBITRARY_FENS:
            result = engine.play(chess.Board(fen), chess.engine.Limit(time=0.05))
            assert result.move in chess.Board(fen).legal_moves
        board = chess.Board()
        engine.configure({"Repetition Workaround": True})
        while not board.is_game_over(claim_draw=True) and board.ply() < max_game_plies:
            result = engine.play(board, chess.engine.Limit(time=0.05))
            assert result.move in board.legal_moves
            board.push(result.move)
        return board
    finally:
        engine.quit()


def test_uci_engine_random_init_plays_a_full_game():
    board = play_uci_game([sys.executable, "-m", "distill.uci", "--random-init"], max_game_plies=400)
    assert board.is_game_over(claim_draw=True) or board.ply() == 400


def test_uci_engine_reports_a_bad_checkpoint(tmp_path):
    import subprocess

    result = subprocess.run([sys.executable, "-m", "distill.uci", "--checkpoint", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and str(tmp_path) in result.stderr


def test_tournament_in_the_arena_rated_by_elo(tmp_path):
    """Searchless agents play arena games (pgx referee) and get Elo ratings; a rerun plays nothing again."""
    from distill.pipeline import tournament

    engines = {"untrained": SearchlessEngine(NeuralScorer.random_init(Predictor("action_value", 16), "test")),
               "constant": SearchlessEngine(ConstantScorer(), EngineOptions(temperature=0.05))}
    result = tournament(engines, tmp_path / "elo.json", num_games=2, seed=0, max_game_plies=24,
                        show_progress=False)
    assert set(result["ratings"]) == {"untrained", "constant"}
    [match] = result["results"]
    assert match["wins"] + match["draws"] + match["losses"] == 2
    again = tournament(engines, tmp_path / "elo.json", num_games=2, seed=0, max_game_plies=24,
                       show_progress=False)
    assert again["results"] == result["results"]


def test_arena_agent_hands_the_engine_each_games_moves():
    """The searchless agent gets pgx states from the arena; the engine must still see each game's move stack (the
    core's board bridge), which the repetition workaround reads."""
    import jax

    from distill.agent import SearchlessAgent
    from zerolab import make_game
    from zerolab.play import play_match

    class RecordingEngine(SearchlessEngine):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.seen = []

        def choose_moves(self, boards, rng=None):
            self.seen += [[move.uci() for move in board.move_stack] for board in boards]
            return super().choose_moves(boards, rng)

    game = make_game("chess")
    engines = [RecordingEngine(ConstantScorer(), EngineOptions(temperature=1.0), name=name) for name in "ab"]
    match = play_match(game, SearchlessAgent(engines[0], game), SearchlessAgent(engines[1], game), 2,
                       jax.random.key(0), 20, show_progress=False)
    seen = engines[0].seen + engines[1].seen
    assert len(seen) == sum(record.plies for record in match.games)
    for stack in seen:
        assert any(record.moves[:len(stack)] == stack for record in match.games), stack
    assert sorted({len(stack) for stack in seen}) == list(range(20))
