"""Tests of zerolab.engines.uci_client: finding engines, specs, what reaches an engine, and real Stockfish/Fairy-Stockfish."""

import logging
import stat
import sys

import chess
import chess.engine
import jax
import numpy as np
import pytest

from zerolab.play.agents import Agent
from zerolab.engines.executables import EngineNotFoundError, find_engine
from zerolab.engines.uci_client import EngineError, UCIEngine
from zerolab.engines.uci_spec import EngineSpec, EngineSpecError
from zerolab.games.board import GardnerBoard
from zerolab.games.fen import InvalidPositionError

GARDNER_START = "rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1"

# --- finding engines --------------------------------------------------------------------------------------------


def test_missing_engine_names_the_package_and_the_places_searched(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent-bin")
    with pytest.raises(EngineNotFoundError, match=r"'stockfish'.*/nonexistent-games.*apt-get install stockfish"):
        find_engine("stockfish", search_directories=("/nonexistent-games",))
    with pytest.raises(EngineNotFoundError, match="'no-such-engine'.*known engines"):
        find_engine("no-such-engine")
    with pytest.raises(EngineNotFoundError, match="does not exist"):
        find_engine("/nonexistent/engine")
    with pytest.raises(EngineNotFoundError):
        UCIEngine("no-such-engine:nodes=10").open()


def test_engine_fixture_fails_under_ci_and_skips_elsewhere(monkeypatch):
    from tests.conftest import engine_path

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="'no-such-engine' not found.*CI is set"):
        engine_path("no-such-engine")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="'no-such-engine' not found"):
        engine_path("no-such-engine")


# --- specs ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("stockfish", EngineSpec("stockfish")),
        ("stockfish:elo=1350", EngineSpec("stockfish", elo=1350)),
        ("stockfish:skill=0,nodes=1000", EngineSpec("stockfish", skill_level=0, nodes=1000)),
        ("fairy-stockfish:skill=-20", EngineSpec("fairy-stockfish", skill_level=-20)),
        ("stockfish:movetime=0.05", EngineSpec("stockfish", move_time=0.05)),
        ("/path/to/engine:depth=3", EngineSpec("/path/to/engine", depth=3)),
        (
            "stockfish:threads=2,hash=64,timeout=5,option.Move Overhead=0",
            EngineSpec("stockfish", threads=2, hash_megabytes=64, timeout=5.0, options=(("Move Overhead", "0"),)),
        ),
    ],
)
def test_spec_parsing_and_round_trip(text, expected):
    spec = EngineSpec.parse(text)
    assert spec == expected
    assert EngineSpec.parse(str(spec)) == spec


def test_spec_limits_default_to_a_small_node_count():
    assert EngineSpec.parse("stockfish").limit() == chess.engine.Limit(nodes=2000)
    assert EngineSpec.parse("stockfish:movetime=0.05,depth=3").limit() == chess.engine.Limit(time=0.05, depth=3)
    assert EngineSpec.parse("stockfish:elo=1400").requested_options() == {"UCI_LimitStrength": True, "UCI_Elo": 1400}


@pytest.mark.parametrize(
    "text, message",
    [
        ("stockfish:strength=3", r"unknown field 'strength'.*valid fields: skill .*elo .*nodes .*movetime"),
        ("stockfish:nodes=many", "nodes must be node limit per move, a positive integer, got 'many'"),
        ("stockfish:movetime=-1", "movetime must be"),
        ("stockfish:nodes", "is not key=value"),
        ("stockfish:nodes=1,nodes=2", "given twice"),
        ("stockfish:skill=3,elo=1500", "both skill and elo"),
        (":nodes=3", "no engine name"),
        ("", "non-empty"),
    ],
)
def test_bad_specs_explain_what_is_expected(text, message):
    with pytest.raises(EngineSpecError, match=message):
        EngineSpec.parse(text)


# --- a scripted fake engine: crashes, hangs, and what reaches the engine --------------------------------------------

FAKE_ENGINE = """\
#!{python}
import os, sys
log = open({log!r}, "a")
for line in sys.stdin:
    log.write(line); log.flush()
    command = line.split()
    if not command:
        continue
    if command[0] == "uci":
        print("id name FakeEngine"); print("option name Skill Level type spin default 5 min 0 max 10"); print("uciok")
    elif command[0] == "isready":
        print("readyok")
    elif command[0] == "position" and {mode!r} == "first-legal":
        import chess
        tokens = command[1:]
        split = tokens.index("moves") if "moves" in tokens else len(tokens)
        board = chess.Board() if tokens[0] == "startpos" else chess.Board(" ".join(tokens[1:split]))
        for move in tokens[split + 1:]:
            board.push_uci(move)
    elif command[0] == "go":
        if {mode!r} == "first-legal":
            print("bestmove " + sorted(move.uci() for move in board.legal_moves)[0]); sys.stdout.flush(); continue
        if {mode!r} == "hang":
            continue
        if {mode!r} == "die" and os.path.exists({marker!r}):
            os.unlink({marker!r}); sys.exit(3)
        print("bestmove e2e5" if {mode!r} == "illegal" else "bestmove e2e4")
    elif command[0] == "quit":
        break
    sys.stdout.flush()
"""


def fake_engine(tmp_path, mode):
    """Path of an executable fake UCI engine in ``mode`` (normal, hang, die once, illegal, first-legal: the first
    legal move of the position it was sent, in UCI order) and its input log."""
    log, marker = tmp_path / f"{mode}.log", tmp_path / f"{mode}.die-once"
    marker.touch()
    path = tmp_path / f"fake-{mode}"
    script = FAKE_ENGINE.format(python=sys.executable, log=str(log), mode=mode, marker=str(marker))
    path.write_text(script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path), log


def test_malformed_positions_never_reach_the_engine(tmp_path):
    path, log = fake_engine(tmp_path, "normal")
    with UCIEngine(f"{path}:nodes=10") as engine:
        no_kings, bad_side = "8/8/8/8/8/8/8/8 w - - 0 1", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1"
        for fen in ["not a fen", no_kings, bad_side]:
            with pytest.raises(InvalidPositionError, match="invalid FEN"):
                engine.choose_move(fen)
        with pytest.raises(InvalidPositionError, match=r"move 2 \('e2e4'\)"):
            engine.choose_move(chess.STARTING_FEN, ["e2e4", "e2e4"])
        assert "position" not in log.read_text()
        assert engine.choose_move(chess.STARTING_FEN) == "e2e4"
    assert "position startpos" in log.read_text()


def test_engine_starts_on_first_use(tmp_path):
    path, _ = fake_engine(tmp_path, "normal")
    engine = UCIEngine(path, variant="chess")
    assert not engine.is_open
    try:
        assert engine.choose_move(chess.STARTING_FEN) == "e2e4" and engine.is_open
    finally:
        engine.close()
    assert not engine.is_open


def test_dead_engine_raises_naming_engine_and_position_then_restarts(tmp_path):
    path, _ = fake_engine(tmp_path, "die")
    with UCIEngine(path) as engine:
        expected = r"FakeEngine .* in position fen rnbqkbnr.* moves e2e4 e7e5: .*terminated"
        with pytest.raises(EngineError, match=expected):
            engine.choose_move(chess.STARTING_FEN, ["e2e4", "e7e5"])
        with pytest.raises(EngineError, match="restart"):
            engine.choose_move(chess.STARTING_FEN)
        engine.restart()
        assert engine.choose_move(chess.STARTING_FEN) == "e2e4"


def test_hung_engine_times_out(tmp_path):
    path, _ = fake_engine(tmp_path, "hang")
    with UCIEngine(f"{path}:nodes=100,timeout=0.5") as engine:
        with pytest.raises(EngineError, match="no answer within"):
            engine.choose_move(chess.STARTING_FEN)


def test_illegal_bestmove_is_an_engine_error(tmp_path):
    path, _ = fake_engine(tmp_path, "illegal")
    with UCIEngine(path) as engine, pytest.raises(EngineError, match="e2e5"):
        engine.choose_move(chess.STARTING_FEN)


def test_skill_outside_the_advertised_range_is_refused(tmp_path):
    path, _ = fake_engine(tmp_path, "normal")
    with pytest.raises(EngineSpecError, match=r"FakeEngine accepts skill \(Skill Level\) from 0 to 10.*skill=11"):
        UCIEngine(f"{path}:skill=11").open()
    with pytest.raises(EngineSpecError, match="has no UCI option 'Hash'"):
        UCIEngine(f"{path}:hash=16").open()


# --- engines see the game's moves -----------------------------------------------------------------------------


class RandomAgent(Agent):
    """Plays uniformly random legal moves."""

    def __init__(self, seed=0):
        self.name, self.rng = "random", np.random.default_rng(seed)

    def select_actions(self, states, key, active=None):
        masks = np.asarray(states.legal_action_mask)
        return np.array([self.rng.choice(np.flatnonzero(mask)) if mask.any() else 0 for mask in masks], np.int32)

    def new_game(self):
        pass


def positions_sent(log):
    return [line.strip() for line in log.read_text().splitlines() if line.startswith("position")]


def expected_positions(match, agent_name, root):
    """The ``position`` commands of every engine move of ``match``: the root and the game's moves so far.

    An engine that moves second sees the start position too (the arena shows it the first ply, ``observe``), so a
    game from a start FEN is sent as that FEN and every move since, whichever side the engine plays.
    """
    expected = []
    for record in match.games:
        first_ply = 0 if record.first_player == agent_name else 1
        for ply in range(first_ply, record.plies, 2):
            moves = record.moves[:ply]
            expected.append(root + (" moves " + " ".join(moves) if moves else ""))
    return expected


def play_engine_match(game, spec, max_game_plies, start_fens=None):
    from zerolab.play.engine_agents import EngineAgent
    from zerolab.play.arena import play_match

    agent = EngineAgent(spec, game)
    try:
        match = play_match(game, agent, RandomAgent(), 2, jax.random.key(0), max_game_plies, show_progress=False,
                           start_fens=start_fens)
    finally:
        agent.close()
    return agent, match


def test_engine_agent_sends_the_games_moves(tmp_path, chess_game):
    """In the arena (pgx states in, pgx referee) the engine is sent ``position startpos moves ...`` every move."""
    path, log = fake_engine(tmp_path, "first-legal")
    agent, match = play_engine_match(chess_game, f"{path}:nodes=1", max_game_plies=24)
    assert agent.fallback_moves == 0
    assert positions_sent(log) == expected_positions(match, agent.name, "position startpos")
    assert any(line.count(" ") > 20 for line in positions_sent(log))  # long move lists, not FENs
    log.write_text("")  # games from a start position: its FEN, then the moves
    start = "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 9"
    agent, match = play_engine_match(chess_game, f"{path}:nodes=1", max_game_plies=8, start_fens=[start])
    assert positions_sent(log) == expected_positions(match, agent.name, f"position fen {start}")


LOGGING_WRAPPER = """\
#!{python}
import subprocess, sys
engine = subprocess.Popen([{engine!r}], stdin=subprocess.PIPE, text=True, bufsize=1)
with open({log!r}, "a") as log:
    for line in sys.stdin:
        log.write(line); log.flush()
        engine.stdin.write(line); engine.stdin.flush()
        if line.strip() == "quit":
            break
engine.stdin.close()
sys.exit(engine.wait())
"""


def logging_wrapper(tmp_path, engine_path):
    """An executable that logs its input to a file and passes it on to the engine ``engine_path``."""
    log, wrapper = tmp_path / "input.log", tmp_path / "logged-engine"
    wrapper.write_text(LOGGING_WRAPPER.format(python=sys.executable, engine=engine_path, log=str(log)))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper), log


@pytest.mark.engine
def test_stockfish_plays_arena_games_seeing_the_moves(tmp_path, stockfish_path, chess_game):
    path, log = logging_wrapper(tmp_path, stockfish_path)
    agent, match = play_engine_match(chess_game, f"{path}:nodes=200", max_game_plies=40)
    assert agent.fallback_moves == 0 and match.result is not None
    assert positions_sent(log) == expected_positions(match, agent.name, "position startpos")


@pytest.mark.engine
def test_fairy_stockfish_plays_gardner_arena_games_seeing_the_moves(tmp_path, fairy_stockfish_path, gardner_game):
    path, log = logging_wrapper(tmp_path, fairy_stockfish_path)
    agent, match = play_engine_match(gardner_game, f"{path}:skill=-20,nodes=100", max_game_plies=20)
    assert "setoption name UCI_Variant value gardner" in log.read_text()
    root = f"position fen {gardner_game.start_fen}"
    assert positions_sent(log) == expected_positions(match, agent.name, root)


# --- real engines ---------------------------------------------------------------------------------------------------

POSITIONS = [
    (chess.STARTING_FEN, ()),
    (chess.STARTING_FEN, ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6")),  # white may castle
    ("r3k2r/pppq1ppp/2npbn2/4p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 0 1", ()),  # castling both sides
    ("8/P6k/8/8/8/8/6K1/8 w - - 0 1", ()),  # promotion
    ("8/6K1/8/8/8/8/p6k/8 b - - 0 1", ()),  # black promotion
    ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3", ()),  # en passant available
]


@pytest.mark.engine
def test_stockfish_returns_legal_moves(stockfish_path):
    with UCIEngine(f"{stockfish_path}:nodes=500") as engine:
        assert "Stockfish" in engine.name
        for fen, moves in POSITIONS:
            board = chess.Board(fen)
            for move in moves:
                board.push_uci(move)
            move = engine.choose_move(fen, moves)
            assert chess.Move.from_uci(move) in board.legal_moves, (fen, moves, move)
        only_promotions = "6r1/P7/8/4b3/8/8/8/k6K w - - 0 1"  # the king is boxed in: a7a8q/r/b/n are all
        move = engine.choose_move(only_promotions)
        assert move[:4] == "a7a8" and move[4] in "qrbn"
        with pytest.raises(ValueError, match="no legal move"):
            engine.choose_move("7k/5KQ1/8/8/8/8/8/8 b - - 0 1")  # stalemate


@pytest.mark.engine
def test_stockfish_strength_limits(stockfish_path):
    for spec in ("stockfish:elo=1350,nodes=300", "stockfish:skill=0,threads=1,hash=8,movetime=0.01"):
        with UCIEngine(spec) as engine:
            assert chess.Move.from_uci(engine.choose_move(chess.STARTING_FEN)) in chess.Board().legal_moves
    with pytest.raises(EngineSpecError, match=r"accepts elo \(UCI_Elo\) from 1350 to 2850.*elo=1000"):
        UCIEngine("stockfish:elo=1000").open()
    with pytest.raises(EngineSpecError, match="from 0 to 20.*skill=-20"):
        UCIEngine("stockfish:skill=-20").open()
    with pytest.raises(EngineSpecError, match="managed by python-chess"):
        UCIEngine("stockfish:option.MultiPV=3").open()


@pytest.mark.engine
def test_stockfish_analyse_gives_scores_and_multipv(stockfish_path):
    with UCIEngine("stockfish:nodes=2000,option.UCI_ShowWDL=true") as engine:
        infos = engine.analyse(chess.STARTING_FEN, multipv=3)
        assert len(infos) == 3 and all("score" in info and info["pv"] for info in infos)
        single = engine.analyse("8/P6k/8/8/8/8/6K1/8 w - - 0 1", chess.engine.Limit(nodes=5000))
        assert single["score"].white().score(mate_score=100000) > 300
        assert sum(single["wdl"].white()) == 1000
        # With malformed input it refuses before the engine (which would crash) sees anything.
        with pytest.raises(InvalidPositionError):
            engine.analyse("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN w KQkq - 0 1")
        assert engine.choose_move(chess.STARTING_FEN)


@pytest.mark.engine
def test_stockfish_cannot_play_gardner(stockfish_path):
    with pytest.raises(EngineError, match="cannot play Gardner chess.*fairy-stockfish"):
        UCIEngine("stockfish", game="gardner_chess").open()


@pytest.mark.engine
def test_a_ponder_move_after_pgx_ended_the_game_is_not_reported(fairy_stockfish_path, caplog):
    """Bxb2 or Kxb2 leaves king and bishop against king: pgx ends the game, Fairy-Stockfish still sends a ponder
    move, which the Gardner board refuses; python-chess's "invalid ponder move" traceback is dropped, other records
    are kept."""
    with caplog.at_level(logging.WARNING), UCIEngine(f"{fairy_stockfish_path}:nodes=2000",
                                                     game="gardner_chess") as engine:
        move = engine.choose_move("4k/5/2B2/1n3/K4 w - - 0 1")
        logging.getLogger("chess.engine").warning("another report")
    assert move in ("a1b2", "c3b2")
    messages = [record.getMessage() for record in caplog.records]
    assert "another report" in messages and not any("ponder" in message for message in messages), messages


def test_fairy_stockfish_plays_legal_gardner_moves(fairy_stockfish_path, gardner_game):
    rng = np.random.default_rng(42)
    board = GardnerBoard()
    checked = 0
    with UCIEngine(f"{fairy_stockfish_path}:skill=-20,nodes=200", game="gardner_chess") as engine:
        while checked < 30:
            state = gardner_game.from_fen(board.fen())
            legal = gardner_game.legal_moves_uci(state)
            if not legal or len(board.move_stack) >= 40:
                board = GardnerBoard()
                engine.new_game()
                continue
            if checked % 2:
                move = engine.choose_move(board.fen())
            else:  # the same position given as start FEN plus moves
                move = engine.choose_move(board.root().fen(), [m.uci() for m in board.move_stack])
            assert move in legal, (board, move, legal)
            checked += 1
            board.push_uci(str(rng.choice(legal)))
        # An 8x8 FEN is not a Gardner position.
        with pytest.raises(InvalidPositionError, match="Gardner"):
            engine.choose_move(chess.STARTING_FEN)
        info = engine.analyse(GARDNER_START, multipv=2)
        assert len(info) == 2 and all(i["pv"] for i in info)


def test_a_team_member_engine_skipped_for_many_plies_still_sees_the_games_moves(tmp_path, chess_game):
    """A TeamAgent's rule skips its engine member for 17 plies (more than pgx's 7-ply history): the engine is still
    sent ``position startpos moves ...`` with every move, because the team shows it the positions it skips."""
    from zerolab.play.engine_agents import EngineAgent
    from zerolab.play.arena import MemberChoice, TeamAgent, play_match

    path, log = fake_engine(tmp_path, "first-legal")
    engine = EngineAgent(f"{path}:nodes=1", chess_game)
    engine_plies = lambda plies: (plies < 1) | (plies >= 18)  # noqa: E731
    team = TeamAgent("team", [engine, RandomAgent(seed=1)],
                     MemberChoice(lambda states, plies: np.where(engine_plies(np.asarray(plies)), 0, 1)))
    try:
        match = play_match(chess_game, team, RandomAgent(seed=2), 2, jax.random.key(0), 22, show_progress=False)
    finally:
        engine.close()
    expected = []
    for record in match.games:
        first_ply = 0 if record.first_player == "team" else 1
        for ply in range(first_ply, record.plies, 2):
            if engine_plies(ply):
                moves = record.moves[:ply]
                expected.append("position startpos" + (" moves " + " ".join(moves) if moves else ""))
    assert all(record.plies == 22 for record in match.games) and len(expected) == 5
    assert positions_sent(log) == expected and engine.fallback_moves == 0
