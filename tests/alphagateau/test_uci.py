"""The AlphaGateau UCI engine (the core's search engine with AlphaGateau's defaults) driven through python-chess and
raw UCI; the time rule and the generic ``zerolab uci`` command are tested in tests/zerolab/test_uci.py.

Two engine processes (an untrained, tiny AlphaGateau) share the session's JAX compilation cache, so the second one
reads its compiled programs back instead of compiling them again.
"""

import os
import pathlib
import subprocess
import sys

import chess
import chess.engine
import pytest

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
ENGINE_ARGUMENTS = ["--random-init", "--simulations", "4", "--channels", "8", "--blocks", "1"]
START_TIMEOUT = 300  # seconds for loading and compiling on a loaded 2-core machine
PLY_CAP = 60


@pytest.fixture(scope="module")
def engine_command(tmp_path_factory):
    """The engine with ``--compilation-cache``: the test session's persistent cache (tests/conftest.py), so a second
    engine process — and the next session — reads its compiled programs back."""
    cache = os.environ.get("JAX_COMPILATION_CACHE_DIR") or str(tmp_path_factory.mktemp("jax-cache"))
    return [sys.executable, "-m", "alphagateau.uci", *ENGINE_ARGUMENTS, "--compilation-cache", cache]


@pytest.fixture(scope="module")
def engine(engine_command):
    with chess.engine.SimpleEngine.popen_uci(engine_command, timeout=START_TIMEOUT, cwd=REPOSITORY) as engine:
        engine.ping()  # isready: waits for the warm-up
        yield engine


# --- python-chess -----------------------------------------------------------------------------------------------------

SPECIAL_MOVES = [
    # (FEN, the move the engine is told to search) — castling both ways for both sides, en passant, promotions
    ("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 9", "e1g1"),
    ("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 9", "e1c1"),
    ("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R4RK1 b kq - 5 9", "e8g8"),
    ("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R4RK1 b kq - 5 9", "e8c8"),
    ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3", "e5f6"),
    ("rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq d3 0 2", "e4d3"),
    ("r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R w KQkq - 0 1", "b7a8q"),
    ("r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R w KQkq - 0 1", "g7h8n"),
    ("r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R b KQkq - 0 1", "b2a1r"),
    ("r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R b KQkq - 0 1", "g2g1b"),
]


def assert_searched(result, nodes):
    """``result`` (``play`` with ``info=INFO_ALL``) came from a search of one of the ``nodes`` counts (any count when
    None), with no ``info string error`` first (a failed search plays a fallback move without an ``info ... nodes``
    line)."""
    assert not result.info.get("string", "").startswith("error"), result.info
    assert "nodes" in result.info and (nodes is None or result.info["nodes"] in nodes), result.info


def test_plays_stockfish_with_legal_moves_to_the_end(engine, stockfish_path):
    """A game against Stockfish at its weakest (Skill Level 0, 1 node), with node and clock limits in turn; every
    move is searched (4 simulations under ``nodes 4``; under the clock as many as the move's time allows)."""
    board = chess.Board()
    with chess.engine.SimpleEngine.popen_uci(stockfish_path, timeout=20) as stockfish:
        stockfish.configure({"Skill Level": 0})
        while not board.is_game_over() and board.ply() < PLY_CAP:
            if board.turn == chess.WHITE:
                # cutechess-style clocks of 3 s with 0.1 s increments: about 0.1 s a move
                limit = chess.engine.Limit(nodes=4) if board.ply() % 4 else chess.engine.Limit(
                    white_clock=3, black_clock=3, white_inc=0.1, black_inc=0.1)
                result = engine.play(board, limit, info=chess.engine.INFO_ALL)
                assert_searched(result, {4} if limit.nodes else None)
                move = result.move
            else:
                move = stockfish.play(board, chess.engine.Limit(nodes=1)).move
            assert move in board.legal_moves, (board.fen(), move)
            board.push(move)
    assert board.is_game_over() or board.ply() == PLY_CAP


@pytest.mark.parametrize("fen,move", SPECIAL_MOVES)
def test_castling_en_passant_and_promotions(engine, fen, move):
    board = chess.Board(fen)
    result = engine.play(board, chess.engine.Limit(nodes=4), root_moves=[chess.Move.from_uci(move)],
                         info=chess.engine.INFO_ALL)
    assert result.move == chess.Move.from_uci(move)
    assert_searched(result, {4})


def test_answers_after_move_lists_repetitions_and_option_changes(engine):
    board = chess.Board()
    for move in ["e2e4", "c7c5", "e4e5", "d7d5"]:  # White may now take en passant: e5d6
        board.push_uci(move)
    result = engine.play(board, chess.engine.Limit(nodes=4), root_moves=[chess.Move.from_uci("e5d6")])
    assert result.move.uci() == "e5d6"
    board = chess.Board()
    for move in ["g1f3", "g8f6", "f3g1", "f6g8"] * 2:  # the start position a third time: over for pgx, not for UCI
        board.push_uci(move)
    assert engine.play(board, chess.engine.Limit(nodes=4)).move in board.legal_moves
    engine.configure({"Simulations": 2})  # what a plain `go` searches
    board = chess.Board("8/8/8/4k3/8/8/4P3/4K3 w - - 0 60")
    lines = exchange(engine, [f"position fen {board.fen()}", "go"], "bestmove")
    assert any(" nodes 2 " in line for line in lines if line.startswith("info depth")), lines
    assert chess.Move.from_uci(lines[-1].split()[1]) in board.legal_moves
    engine.configure({"Simulations": 4})


# --- raw UCI ----------------------------------------------------------------------------------------------------------


class RawExchange(chess.engine.BaseCommand):
    """Sends raw command lines through python-chess and collects the answers up to a line starting with ``until``."""

    def __init__(self, protocol, lines, until):
        super().__init__(protocol)
        self.protocol, self.lines, self.until, self.received = protocol, lines, until, []

    def start(self):
        for line in self.lines:
            self.protocol.send_line(line)

    def line_received(self, line):
        self.received.append(line)
        if line.startswith(self.until) and not self.result.done():
            self.result.set_result(self.received)
            self.set_finished()


def exchange(engine, lines, until):
    return engine.communicate(lambda protocol: RawExchange(protocol, lines, until))


def test_malformed_commands_get_info_strings_and_the_engine_keeps_running(engine):
    answers = exchange(engine, ["position fen not/a/fen w - - 0 1", "position startpos moves e2e5",
                                "setoption name Simulations value 0", "setoption name Bogus value 1", "frobnicate",
                                "isready"], until="readyok")
    assert sum(line.startswith("info string error") for line in answers) == 5, answers
    answers = exchange(engine, ["position startpos moves e2e4 e7e5 g1f3", "go nodes many"], until="bestmove")
    assert sum(line.startswith("info string error") for line in answers) == 1, answers
    board = chess.Board()
    for move in ["e2e4", "e7e5", "g1f3"]:
        board.push_uci(move)
    assert chess.Move.from_uci(answers[-1].split()[1]) in board.legal_moves


def test_quit_ends_the_process(engine_command):
    """``quit`` right after the handshake, while the engine is still loading and compiling, exits cleanly."""
    completed = subprocess.run(engine_command, input="uci\nquit\n", capture_output=True, text=True,
                               cwd=REPOSITORY, timeout=START_TIMEOUT)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "uciok" in completed.stdout


def test_an_unusable_checkpoint_is_refused_at_launch_in_one_line(tmp_path, capsys):
    from alphagateau.uci import main

    assert main(["--checkpoint", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip().startswith("error: --checkpoint ")
    assert main(["--checkpoint", str(tmp_path)]) == 2  # a directory that is no run
    assert "neither a run directory" in capsys.readouterr().err
