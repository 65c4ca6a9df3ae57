"""``zerolab match`` end to end with real engines: Stockfish, and a UCI engine script that crashes once.

The script answers like a UCI engine (python-chess picks its move: the first legal one) but dies on its first
search; the engine agent must restart it, count exactly that one move as a fallback, and the engine's later moves
must be its own.  Two calls on one output directory extend the Elo book and ``matches.jsonl``.
"""

import json
import stat
import sys

import chess
import pytest

from tests.game_record_checks import check_game_file
from zerolab.frontends import cli
from zerolab.evaluation.book import EloBook
from zerolab.games.pgn import read_game_records

CRASHING_ENGINE = '''#!{python}
import pathlib, sys
import chess
marker = pathlib.Path({marker!r})
board = chess.Board()
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "uci":
        print("id name crash-once", flush=True)
        print("uciok", flush=True)
    elif words[0] == "isready":
        print("readyok", flush=True)
    elif words[0] == "position":
        moves_at = words.index("moves") if "moves" in words else len(words)
        board = chess.Board() if words[1] == "startpos" else chess.Board(" ".join(words[2:moves_at]))
        for move in words[moves_at + 1:]:
            board.push_uci(move)
    elif words[0] == "go":
        if not marker.exists():
            marker.write_text("crashed")
            sys.exit(3)
        print("bestmove " + sorted(move.uci() for move in board.legal_moves)[0], flush=True)
    elif words[0] == "quit":
        break
'''


@pytest.fixture
def crashing_engine(tmp_path):
    path = tmp_path / "crash_once_engine"
    path.write_text(CRASHING_ENGINE.format(python=sys.executable, marker=str(tmp_path / "crashed")))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def run_match(capsys, *arguments):
    status = cli.main(["match", *arguments])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.engine
def test_match_counts_fallbacks_restarts_a_crashed_engine_and_extends_the_book(tmp_path, capsys, stockfish_path,
                                                                             crashing_engine):
    out = tmp_path / "out"
    common = ["--game", "chess", "--games", "2", "--max-game-plies", "8", "--out", str(out)]
    status, printed, errors = run_match(capsys, "--a", crashing_engine, "--b", "stockfish:depth=1", *common)
    assert status == 0, errors
    summary = json.loads(printed.splitlines()[0])
    assert summary["engine_fallback_moves"] == {crashing_engine: 1, "stockfish:depth=1": 0}
    records = read_game_records(out / "games.jsonl")
    assert len(records) == 2
    engine_moves = [(record, ply) for record in records for ply, mover in enumerate(record.movers)
                    if mover == crashing_engine]
    assert len(engine_moves) >= 4
    # After the crash (its first move, replaced by a random one) the restarted engine chose every move itself.
    for record, ply in engine_moves[1:]:
        board = chess.Board()
        for move in record.moves[:ply]:
            board.push_uci(move)
        assert record.moves[ply] == sorted(move.uci() for move in board.legal_moves)[0]
    assert check_game_file(out / f"{crashing_engine.replace('/', '_')}-vs-stockfish_depth=1.pgn") == 2

    status, printed, errors = run_match(capsys, "--a", "stockfish:depth=1", "--b", "stockfish:depth=2", *common)
    assert status == 0, errors
    lines = (out / "matches.jsonl").read_text().splitlines()
    assert [json.loads(line)["player_a"] for line in lines] == [crashing_engine, "stockfish:depth=1"]
    book = EloBook.load(out / "elo.json")
    assert set(book.players) == {crashing_engine, "stockfish:depth=1", "stockfish:depth=2"}
    assert book.games_of("stockfish:depth=1") == 4 and len(book.results) == 2
    assert len(read_game_records(out / "games.jsonl")) == 4


@pytest.mark.engine
@pytest.mark.parametrize("spec, message", [
    ("stockfish:elo=1350,skill=3", "gives both skill and elo"),
    ("stockfish:strength=3", "unknown field 'strength'"),
    ("stockfish:depth", "'depth' is not"),
    ("stockfish:depth=deep", "depth"),
    ("/no/such/engine", "does not exist"),
])
def test_match_spec_errors_name_the_problem(tmp_path, capsys, stockfish_path, spec, message):
    status, _, errors = run_match(capsys, "--a", spec, "--b", "stockfish:depth=1", "--game", "chess",
                                  "--games", "2", "--out", str(tmp_path))
    assert status == 2 and message in errors
    assert not (tmp_path / "elo.json").exists()


@pytest.mark.engine
def test_an_engine_that_cannot_play_the_runs_game_is_refused_before_the_network_loads(tmp_path, capsys,
                                                                                     stockfish_path):
    """A Gardner run against Stockfish (8×8 only): one error line naming the engine and the way out, before the run's
    network is read (its checkpoint directory is empty here: reading it would fail otherwise) and nothing written."""
    run = tmp_path / "gardner-run"
    (run / "checkpoints" / "0").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"game": {"name": "gardner_chess"}}))
    out = tmp_path / "out"
    status, printed, errors = run_match(capsys, "--a", str(run), "--b", "stockfish:depth=1", "--games", "2",
                                        "--out", str(out))
    assert status == 2 and printed == "" and "cannot play Gardner chess" in errors and "fairy-stockfish" in errors
    assert errors.count("\n") == 1 and not out.exists()


@pytest.mark.engine
def test_match_from_start_fens_plays_each_twice_and_rejects_bad_lines(tmp_path, capsys, stockfish_path):
    fens = tmp_path / "fens.txt"
    fens.write_text("# mate in one for Black\nrnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2\n")
    status, printed, errors = run_match(capsys, "--a", "stockfish:depth=2", "--b", "stockfish:depth=1",
                                        "--game", "chess", "--start-fens", str(fens), "--out", str(tmp_path / "out"))
    assert status == 0, errors
    summary = json.loads(printed.splitlines()[0])
    assert (summary["wins"], summary["losses"], summary["games"]) == (1, 1, 2)  # whoever starts mates
    assert check_game_file(summary["pgn"]) == 2
    fens.write_text("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\nnot a fen\n")
    status, _, errors = run_match(capsys, "--a", "stockfish:depth=1", "--b", "stockfish:depth=2",
                                  "--game", "chess", "--start-fens", str(fens), "--out", str(tmp_path / "out2"))
    assert status == 2 and f"{fens}:2" in errors
