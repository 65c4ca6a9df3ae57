"""Tests of zerolab.frontends.uci: the UCI server in-process (through queues) and as a subprocess driven by python-chess."""

import dataclasses
import json
import pathlib
import queue
import subprocess
import sys
import threading
import time

import chess
import chess.engine
import jax
import numpy as np
import pytest

from zerolab.frontends import uci_examples, uci_protocol
from zerolab.play.agents import Agent
from zerolab.frontends.uci import UCIServer
from zerolab.frontends.uci_options import UCIOption
from zerolab.frontends.uci_protocol import MoveChoice, SearchBudget

REPOSITORY_ROOT = pathlib.Path(__file__).resolve().parents[2]
UCI_COMMAND = [sys.executable, "-m", "zerolab.frontends.uci_examples"]


class QueueInput:
    """A text stream whose lines come from a queue; None ends the input."""

    def __init__(self):
        self.lines = queue.Queue()

    def readline(self):
        line = self.lines.get()
        return "" if line is None else line + "\n"


class QueueOutput:
    """A text stream that puts every written line on a queue."""

    def __init__(self):
        self.lines = queue.Queue()
        self._partial = ""

    def write(self, text):
        self._partial += text
        *complete, self._partial = self._partial.split("\n")
        for line in complete:
            self.lines.put(line)

    def flush(self):
        pass


class Harness:
    """Runs a server in a thread; ``send`` commands, ``read_until`` a line starting with a prefix."""

    def __init__(self, server):
        self.server, self.input, self.output = server, QueueInput(), QueueOutput()
        self.thread = threading.Thread(target=server.run, args=(self.input, self.output), daemon=True)
        self.thread.start()

    def send(self, *lines):
        for line in lines:
            self.input.lines.put(line)

    def read_until(self, prefix, timeout=60.0):  # returns as soon as the line comes; the limit only stops a hang
        lines, deadline = [], time.monotonic() + timeout
        while True:
            try:
                line = self.output.lines.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise AssertionError(f"no line starting with {prefix!r} within {timeout} s; got {lines}") from None
            lines.append(line)
            if line.startswith(prefix):
                return lines

    def pending(self):
        lines = []
        while not self.output.lines.empty():
            lines.append(self.output.lines.get())
        return lines

    def quit(self):
        self.send("quit")
        self.thread.join(5)
        assert not self.thread.is_alive()


class Recorder:
    """A choose_move callback that records what it was given and answers with ``answer(board)``."""

    def __init__(self, answer=None):
        self.calls = []
        self.answer = answer or (lambda board: sorted(m.uci() for m in board.legal_moves)[-1])

    def __call__(self, board, budget):
        self.calls.append((board.copy(), budget))
        return self.answer(board)


def errors(lines):
    return [line for line in lines if line.startswith("info string error:")]


@pytest.fixture
def harness():
    started = []

    def start(choose_move=None, **kwargs):
        server = UCIServer("tester", "zerolab", choose_move or Recorder(), **kwargs)
        started.append(Harness(server))
        return started[-1]

    yield start
    for running in started:
        if running.thread.is_alive():
            running.quit()


# --- pure pieces ----------------------------------------------------------------------------------------------------


def test_time_rule():
    assert uci_protocol.time_for_move(60.0) == pytest.approx(60 / 30 - 0.05)
    assert uci_protocol.time_for_move(60.0, increment=1.0) == pytest.approx(2 + 0.75 - 0.05)
    assert uci_protocol.time_for_move(10.0, moves_to_go=5, move_overhead=0.0) == pytest.approx(2.0)
    assert uci_protocol.time_for_move(0.2, moves_to_go=1) == pytest.approx(0.2 - 0.05 - 0.05)  # capped below the clock
    assert uci_protocol.time_for_move(0.01) == uci_protocol.MINIMUM_MOVE_TIME


def test_plan_budget_uses_the_movers_clock():
    fields, problems = uci_protocol.parse_go("wtime 60000 btime 30000 winc 1000 binc 0".split())
    assert problems == []
    assert uci_protocol.plan_budget(fields, chess.WHITE).time_budget == pytest.approx(2.7)
    assert uci_protocol.plan_budget(fields, chess.BLACK).time_budget == pytest.approx(0.95)
    assert uci_protocol.plan_budget({"move_time": 0.5}, chess.WHITE).time_budget == pytest.approx(0.45)
    nodes_only = uci_protocol.plan_budget({"nodes": 100}, chess.WHITE)
    assert nodes_only.time_budget is None and nodes_only.nodes == 100
    assert uci_protocol.plan_budget({}, chess.WHITE, default_move_time=0.3).time_budget == 0.3
    infinite = uci_protocol.plan_budget({"infinite": True, "nodes": 5}, chess.WHITE, default_move_time=0.3)
    assert infinite.infinite and infinite.time_budget == 0.3


def test_parse_go_reports_and_skips_malformed_parameters():
    fields, problems = uci_protocol.parse_go("nodes abc depth 3 searchmoves e2e4 d2d4 movetime -5 bogus wtime".split())
    assert fields == {"depth": 3, "search_moves": ("e2e4", "d2d4")}
    assert len(problems) == 4 and "nodes expects an integer, got 'abc'" in problems[0]
    fields, problems = uci_protocol.parse_go("wtime -5000 btime 1000".split())  # flagged, kept as an empty clock
    assert fields == {"white_time": 0.0, "black_time": 1.0}
    assert problems == ["go wtime is negative (-5000 ms): the clock has run out; moving at once"]


def test_parse_position_checks_fen_and_moves():
    board = uci_protocol.parse_position("startpos moves e2e4 e7e5 g1f3".split())
    assert board.fen() == "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2"
    assert len(board.move_stack) == 3
    with pytest.raises(ValueError, match=r"move 2 \('e2e4'\)"):
        uci_protocol.parse_position("startpos moves e2e4 e2e4".split())
    with pytest.raises(ValueError, match="invalid FEN.*no white king"):
        uci_protocol.parse_position("fen 8/8/8/8/8/8/8/k7 w - - 0 1".split())
    with pytest.raises(ValueError, match="'startpos' or 'fen'"):
        uci_protocol.parse_position(["middlegame"])


def test_option_declarations_and_parsing():
    spin = UCIOption("Simulations", "spin", 128, 1, 4096)
    assert spin.declaration() == "option name Simulations type spin default 128 min 1 max 4096"
    assert spin.parse("64") == 64
    with pytest.raises(ValueError, match="from 1 to 4096, got 0"):
        spin.parse("0")
    check = UCIOption("Use Book", "check", False)
    assert check.declaration() == "option name Use Book type check default false" and check.parse("TRUE") is True
    combo = UCIOption("Style", "combo", "solid", choices=("solid", "wild"))
    assert combo.declaration().endswith("default solid var solid var wild") and combo.parse("Wild") == "wild"
    assert UCIOption("Weights", "string").declaration() == "option name Weights type string default <empty>"
    with pytest.raises(ValueError, match="minimum <= maximum"):
        UCIOption("Bad", "spin", 1, 5, 2)


# --- the server in-process ------------------------------------------------------------------------------------------


def test_handshake_lists_options(harness):
    changes = []
    options = [
        UCIOption("Simulations", "spin", 128, 1, 4096, on_change=changes.append),
        UCIOption("Clear Tree", "button", on_change=changes.append),
    ]
    running = harness(options=options)
    running.send("uci")
    lines = running.read_until("uciok")
    assert lines[:2] == ["id name tester", "id author zerolab"]
    assert "option name Simulations type spin default 128 min 1 max 4096" in lines
    assert "option name Move Overhead type spin default 50 min 0 max 5000" in lines
    running.send("setoption name simulations value 256", "setoption name Clear Tree", "isready")
    assert running.read_until("readyok") == ["readyok"]
    assert changes == [256, None] and running.server.option_values["Simulations"] == 256


def test_go_returns_a_legal_move_for_the_given_position(harness):
    recorder = Recorder(lambda board: MoveChoice("g8f6", score_centipawns=-20, nodes=50, depth=2, seldepth=5,
                                                 principal_variation=("g8f6", "b1c3", "zz"), search_seconds=0.5,
                                                 note="trained on another board"))
    running = harness(recorder)
    running.send("position startpos moves e2e4 e7e5 g1f3", "go nodes 50")
    lines = running.read_until("bestmove")
    assert lines[-1] == "bestmove g8f6" and lines[0] == "info string trained on another board"
    assert lines[1].startswith("info depth 2 seldepth 5 score cp -20 nodes 50 nps 100 time ")  # nps: 50 / 0.5 s
    assert lines[1].endswith("pv g8f6 b1c3")
    board, budget = recorder.calls[0]
    assert [m.uci() for m in board.move_stack] == ["e2e4", "e7e5", "g1f3"] and budget.nodes == 50
    last_legal = Recorder()  # plays the last legal move in UCI order
    running = harness(last_legal)
    running.send("position fen 8/8/8/8/8/5k2/8/6K1 w - - 0 1 moves g1h1", "go movetime 100")
    assert running.read_until("bestmove") == ["bestmove f3g4"]
    assert last_legal.calls[0][0].turn == chess.BLACK
    assert last_legal.calls[0][1].time_budget == pytest.approx(0.05)


def test_bad_commands_get_info_strings_and_the_server_keeps_answering(harness):
    recorder = Recorder()
    running = harness(recorder)
    bad = [
        "hello world",
        "position startpos moves e2e4 e7e5 e1e3",
        "position fen not a fen",
        "position",
        "setoption name Nonexistent value 3",
        "setoption name Move Overhead value many",
        "setoption name Move Overhead value 99999",
        "setoption value 3",
        "debug maybe",
        "x" * 2_000_000,  # a garbage line is not echoed back whole
    ]
    running.send("position startpos moves d2d4", *bad, "isready")
    lines = running.read_until("readyok")
    assert len(errors(lines)) == len(bad), lines
    assert "no position until the next valid 'position'" in errors(lines)[1]
    assert "... (cut: 2000115 characters)" in errors(lines)[-1] and max(map(len, lines)) < 400
    running.send("go nodes 1")  # the rejected position is not searched, nor is the one before it
    lines = running.read_until("bestmove")
    assert lines[-1] == "bestmove (none)" and "no position to search" in errors(lines)[0] and not recorder.calls
    running.send("position startpos moves d2d4", "go nodes 1")
    assert running.read_until("bestmove")[-1].startswith("bestmove ")
    assert [m.uci() for m in recorder.calls[0][0].move_stack] == ["d2d4"]
    running.send("position startpos moves e2e5", "ucinewgame", "go nodes 1")  # a new game starts a position
    assert running.read_until("bestmove")[-1] == "bestmove h2h4"
    running.send("go nodes zero", "isready")
    lines = running.read_until("readyok")
    lines += running.read_until("bestmove") if not any(l.startswith("bestmove") for l in lines) else []
    assert errors(lines) and any(line.startswith("bestmove ") for line in lines)


@pytest.mark.parametrize(
    "answer, message",
    [
        (lambda board: 1 / 0, "choose_move failed: ZeroDivisionError"),
        (lambda board: "e2e5", "returned 'e2e5', not a legal move"),
        (lambda board: "castle!", "not a legal move"),
        (lambda board: None, "not a legal move"),
    ],
)
def test_callback_failures_fall_back_to_the_first_legal_move(harness, answer, message):
    running = harness(Recorder(answer))
    running.send("position startpos", "go nodes 1")
    lines = running.read_until("bestmove")
    assert message in errors(lines)[0]
    assert lines[-1] == "bestmove a2a3"


def test_no_legal_move_answers_none(harness):
    running = harness()
    running.send("position fen 7k/6Q1/6K1/8/8/8/8/8 b - - 0 1", "go depth 1")
    assert running.read_until("bestmove") == ["bestmove (none)"]


def test_go_infinite_holds_bestmove_until_stop_and_answers_isready(harness):
    searching = threading.Event()

    def slow_search(board, budget):
        searching.set()
        while not budget.stop_event.is_set():
            time.sleep(0.01)
        return "e2e4"

    running = harness(slow_search)
    running.send("position startpos", "go infinite")
    assert searching.wait(5)
    running.send("isready")
    assert running.read_until("readyok") == ["readyok"]
    time.sleep(0.2)
    assert running.pending() == []
    running.send("stop")
    assert running.read_until("bestmove")[-1] == "bestmove e2e4"


def test_infinite_search_finished_early_still_waits_for_stop(harness):
    running = harness(Recorder(lambda board: "d2d4"))
    running.send("go infinite")
    time.sleep(0.2)
    assert running.pending() == []
    running.send("stop")
    assert running.read_until("bestmove") == ["bestmove d2d4"]
    recorded_budget = running.server.choose_move.calls[0][1]
    assert recorded_budget.infinite and recorded_budget.time_budget == uci_protocol.DEFAULT_MOVE_TIME


def test_go_during_a_search_ends_that_search_first(harness):
    running = harness(Recorder(lambda board: "d2d4"))
    running.send("go infinite", "go nodes 5")
    lines = running.read_until("bestmove")
    assert "search is running" in errors(lines)[0] and lines[-1] == "bestmove d2d4"
    assert running.read_until("bestmove") == ["bestmove d2d4"]  # the second go's answer


def test_back_to_back_searches_never_lose_a_bestmove(harness):
    running = harness(Recorder())
    for _ in range(200):  # the next go arrives as soon as the previous bestmove is read, as GUIs do
        running.send("position startpos", "go nodes 1")
        lines = running.read_until("bestmove", timeout=30)
        assert errors(lines) == [] and lines[-1] == "bestmove h2h4"


def test_searchmoves_restrict_the_callback_and_the_fallback(harness):
    running = harness(Recorder(lambda board: "e2e4"))
    running.send("position startpos", "go nodes 1 searchmoves g1f3 b1c3")
    lines = running.read_until("bestmove")
    assert "not one of the searchmoves" in errors(lines)[0] and lines[-1] == "bestmove b1c3"
    assert running.server.choose_move.calls[0][1].search_moves == ("g1f3", "b1c3")
    running.send("go nodes 1 searchmoves e2e5 e2e4")  # one illegal search move: reported, the legal one plays
    lines = running.read_until("bestmove")
    assert "'e2e5' is not a legal move" in errors(lines)[0] and lines[-1] == "bestmove e2e4"
    running.send("go nodes 1 searchmoves e7e5")  # none legal: reported, every move allowed
    lines = running.read_until("bestmove")
    assert "none of the moves is legal" in " ".join(errors(lines)) and lines[-1] == "bestmove e2e4"
    failing = harness(Recorder(lambda board: 1 / 0))
    failing.send("position startpos", "go nodes 1 searchmoves h2h3 g2g3")
    assert failing.read_until("bestmove")[-1] == "bestmove g2g3"  # the first search move in UCI order


def test_go_ponder_holds_bestmove_until_ponderhit(harness):
    recorder = Recorder(lambda board: "e7e5")
    running = harness(recorder)
    running.send("position startpos moves e2e4", "go ponder wtime 60000 btime 3000 movestogo 1")
    time.sleep(0.3)
    assert running.pending() == []
    assert recorder.calls[0][1].ponder and recorder.calls[0][1].time_budget == pytest.approx(3.0 - 0.05 - 0.05)
    running.send("ponderhit")
    assert running.read_until("bestmove") == ["bestmove e7e5"]
    running.send("go ponder", "stop")  # the GUI's ponder move was not played: stop, and a bestmove still comes
    assert running.read_until("bestmove") == ["bestmove e7e5"]


def test_quit_during_a_search_stops_it_and_ends_the_server(harness):
    stopped = threading.Event()

    def search_until_stopped(board, budget):
        budget.stop_event.wait(10)
        stopped.set()
        return "e2e4"

    running = harness(search_until_stopped)
    running.send("position startpos", "go infinite")
    time.sleep(0.1)
    started = time.monotonic()
    running.quit()  # joins the server thread within 5 s
    assert stopped.is_set() and time.monotonic() - started < 2


def test_mate_scores_reach_python_chess_as_mates(harness):
    running = harness(Recorder(lambda board: MoveChoice("d8h4", mate_in=1, nodes=3, principal_variation=("d8h4",))))
    running.send("position startpos moves f2f3 e7e5 g2g4", "go nodes 3")
    lines = running.read_until("bestmove")
    assert lines[0].startswith("info score mate 1 nodes 3") and lines[-1] == "bestmove d8h4"
    board = chess.Board()
    info = chess.engine._parse_uci_info(lines[0][len("info "):], board)
    assert info["score"].relative == chess.engine.Mate(1)
    losing = uci_protocol.info_line(MoveChoice("e2e4", mate_in=-2, score_centipawns=-500), board, 0.1)
    assert "score mate -2" in losing and "cp" not in losing


@pytest.mark.parametrize(
    "go, turn, expected",
    [
        ("wtime 0 btime 0", chess.WHITE, uci_protocol.MINIMUM_MOVE_TIME),  # a flagged clock still moves
        ("wtime 3000 btime 3000 movestogo 0", chess.WHITE, 3.0 / 30 - 0.05),  # movestogo 0 means unknown
        ("wtime 1000 winc 5000", chess.WHITE, 1.0 - 0.05 - 0.05),  # a big increment never exceeds the clock
        ("winc 1000 binc 1000", chess.WHITE, uci_protocol.DEFAULT_MOVE_TIME),  # increments without clocks
        ("movetime 10", chess.BLACK, uci_protocol.MINIMUM_MOVE_TIME),  # less than the overhead
        ("movetime 500 wtime 600 btime 60000", chess.BLACK, 0.45),  # the smaller of movetime and the clock's
    ],
)
def test_time_control_edge_cases(go, turn, expected):
    fields, problems = uci_protocol.parse_go(go.split())
    assert problems == []
    assert uci_protocol.plan_budget(fields, turn).time_budget == pytest.approx(expected)


def test_quit_and_end_of_input_stop_the_server():
    server = UCIServer("tester", "zerolab", Recorder())
    for last in ("quit", None):
        stream = QueueInput()
        for line in ("isready", last):
            stream.lines.put(line)
        output = QueueOutput()
        server.run(stream, output)
        assert output.lines.get_nowait() == "readyok"


def test_greedy_example_takes_the_queen():
    board = chess.Board("4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1")
    choice = uci_examples.GreedyMaterialMover()(board, SearchBudget())
    assert choice.uci == "d2d5"


# --- as a subprocess, through python-chess --------------------------------------------------------------------------


def test_subprocess_answers_malformed_commands_and_keeps_running():
    commands = "uci\nflibbertigibbet\nposition fen 8/8 w\ngo nodes x\nisready\nquit\n"
    finished = subprocess.run(
        UCI_COMMAND + ["--example", "greedy"], input=commands, capture_output=True, text=True,
        cwd=REPOSITORY_ROOT, timeout=30,
    )
    lines = finished.stdout.splitlines()
    assert finished.returncode == 0, finished.stderr
    assert "uciok" in lines and "readyok" in lines
    assert len(errors(lines)) == 3 and any(line.startswith("bestmove ") for line in lines)


@pytest.mark.engine
def test_random_agent_plays_stockfish_through_python_chess(stockfish_path):
    board = chess.Board()
    with chess.engine.SimpleEngine.popen_uci(UCI_COMMAND + ["--example", "random", "--seed", "3"],
                                             cwd=REPOSITORY_ROOT, timeout=20) as agent, \
            chess.engine.SimpleEngine.popen_uci(stockfish_path, timeout=20) as stockfish:
        assert agent.id["name"] == "zerolab-random"
        agent.configure({"Move Overhead": 10})
        stockfish.configure({"Skill Level": 0})
        clock = chess.engine.Limit(white_clock=30, black_clock=30, white_inc=0.1, black_inc=0.1)
        while not board.is_game_over(claim_draw=True) and board.ply() < 60:
            if board.turn == chess.WHITE:
                result = agent.play(board, clock if board.ply() % 4 == 0 else chess.engine.Limit(nodes=10),
                                    info=chess.engine.INFO_ALL)
                assert not result.info.get("string", "").startswith("error"), (board.fen(), result.info)
                assert result.info.get("nodes") == board.legal_moves.count()  # the random mover's "search"
            else:
                result = stockfish.play(board, chess.engine.Limit(nodes=100))
            assert result.move in board.legal_moves, (board.fen(), result.move)
            board.push(result.move)
        assert board.is_game_over(claim_draw=True) or board.ply() >= 60


# --- the search engine behind the server (zerolab.frontends.uci_search): time rule, overrides, a checkpoint playing games -----


def budget(**fields):
    return uci_protocol.plan_budget(fields, chess.WHITE, move_overhead=0.0)


def test_nodes_are_simulations_and_plain_go_uses_the_option():
    from zerolab.frontends.uci_protocol import fixed_simulations

    assert fixed_simulations(budget(nodes=7), 64) == 7
    assert fixed_simulations(budget(), 64) == 64
    assert fixed_simulations(budget(infinite=True), 64) == 64
    assert fixed_simulations(budget(ponder=True, white_time=0.1), 64) == 64
    assert fixed_simulations(budget(move_time=0.1), 64) is None  # timed: searches until the budget is used


def test_a_timed_move_takes_the_largest_compiled_search_that_fits():
    from zerolab.frontends.uci_protocol import affordable_simulations, largest_power_of_two

    compiled = [0, 1, 2, 4, 8, 16, 32, 48]
    assert affordable_simulations(10.0, 0.01, 0.001, compiled) == 48
    # 70 ms left, 10 ms fixed, 2 ms a simulation: 30 affordable, 16 is the largest compiled size that fits
    assert affordable_simulations(0.07, 0.01, 0.002, compiled) == 16
    assert affordable_simulations(0.07, 0.01, 0.002, [0, 48]) == 0  # nothing smaller compiled yet: the policy
    assert affordable_simulations(0.005, 0.01, 0.002, compiled) == 0
    assert [largest_power_of_two(n) for n in (0, 1, 5, 64, 100)] == [0, 1, 4, 64, 64]


class ScriptedEngine:
    """A :class:`zerolab.frontends.uci_search.SearchEngine` whose compilations and searches only take time: a size
    compiles in ``compile_seconds``, a search of n simulations takes ``0.002 + n * 0.002`` s."""

    def __new__(cls, compiled=(0,), simulations=4, compile_seconds=0.3, sleep=time.sleep):
        from zerolab.frontends.search_report import SearchResult
        from zerolab.frontends.uci_search import SearchEngine

        class Scripted(SearchEngine):
            def _compile(self, size):
                sleep(compile_seconds)
                return size

            def _run(self, size, states):
                self.programs.compiled(size)
                seconds = 0.002 + size * 0.002
                sleep(seconds)
                self.ran.append(size)
                return SearchResult(size, size % 8, 0.0, np.eye(8, dtype=np.int32)[size % 8] * size, (size % 8,),
                                    1.0, 1, seconds)

        engine = Scripted(load=None, simulations=simulations)
        engine.programs._programs = {size: size for size in compiled}
        engine.timing.fixed_seconds, engine.ran = 0.002, []
        engine.timing.record_search(4, 0.002 + 4 * 0.002)
        return engine


def test_a_move_waits_for_its_search_to_compile_and_a_timed_move_uses_its_budget():
    engine = ScriptedEngine(compiled=(0, 1, 2))
    result, notes = engine.search(budget(nodes=4), None)  # not compiled yet: waits, says so, searches 4
    assert engine.ran == [4] and result.simulations == 4
    assert len(notes) == 1 and notes[0].startswith("waited 0.3 s for the 4-simulation search to compile")
    engine.ran.clear()
    timed = budget(move_time=0.3)
    result, notes = engine.search(timed, None)  # searches of 4 again and again, then what still fits
    used = timed.elapsed()
    assert 0.7 * 0.3 <= used <= 0.3 + 0.05 and notes == []  # the deadline (0.9 of it) is held by the next test
    assert engine.ran[0] == 4 and len(engine.ran) > 10 and result.simulations == sum(engine.ran)
    engine = ScriptedEngine(compiled=(0, 1, 2), simulations=64)  # `Simulations` still compiling: no wait
    result, notes = engine.search(budget(move_time=0.1), None)
    assert set(engine.ran) <= {1, 2} and result.simulations >= 2 and "still compiling" in notes[0]
    engine = ScriptedEngine(compiled=(0,))
    result, notes = engine.search(budget(move_time=0.001), None)  # nothing fits: the network's policy
    assert engine.ran == [0] and result.simulations == 0


class VirtualClock:
    """``time.monotonic``/``perf_counter`` that only ``sleep`` moves: a scripted engine's timed move, exactly."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    perf_counter = monotonic

    def sleep(self, seconds):
        self.now += seconds


def test_a_timed_move_searches_until_nine_tenths_of_its_time(monkeypatch):
    """``go movetime 300`` on a virtual clock: searches of 4 (10 ms each), then what still fits, until 0.9 × 0.3 s;
    the last search ends inside it, at most the smallest compiled search (4 ms) before it."""
    from zerolab.frontends import search_programs, uci_search

    clock = VirtualClock()
    monkeypatch.setattr(uci_search, "time", clock)
    monkeypatch.setattr(search_programs, "time", clock)  # the wait for a search to compile
    engine = ScriptedEngine(compiled=(0, 1, 2, 4), sleep=clock.sleep)
    started = clock.now
    timed = dataclasses.replace(budget(move_time=0.3), started_at=started)
    assert timed.time_budget == 0.3
    result, notes = engine.search(timed, None)
    used = clock.now - started
    assert 0.9 * 0.3 - 0.004 <= used <= 0.9 * 0.3 + 1e-9, used
    assert notes == [] and engine.ran[0] == 4 and result.simulations == sum(engine.ran)


def test_a_move_reports_its_searchs_depth_and_seldepth():
    """The ``info`` of a move: depth the mean depth of the tree's nodes rounded (1.4 → 1, at least 1), seldepth the
    deepest node (5); the score in lc0's centipawns, the nodes the simulations; the variation read from the state."""
    import collections
    import types

    from zerolab.frontends.search_report import SearchResult

    engine = ScriptedEngine(compiled=(0, 16))
    state = collections.namedtuple("State", "terminated")(np.array(False))
    engine._ready.set()
    engine.loaded = types.SimpleNamespace(note=None, search=types.SimpleNamespace(kind="gumbel"))
    engine.positions = types.SimpleNamespace(state=lambda board: state)
    engine.game = types.SimpleNamespace(action_to_uci=lambda action, state: ["e2e4", "e7e5", "g1f3"][action],
                                        jitted_step=lambda state, action: state)
    engine._run = lambda size, states: SearchResult(size, 0, 0.5, np.zeros(8, np.int32), (0, 1, 2), 1.4, 5, 0.1)
    choice = engine.choose_move(chess.Board(), budget(nodes=16))
    assert (choice.move, choice.depth, choice.seldepth, choice.nodes) == ("e2e4", 1, 5, 16)
    assert choice.score_centipawns == 284 and choice.principal_variation == ("e2e4", "e7e5", "g1f3")
    assert choice.search_seconds == 0.1  # nps counts the search's own time, not the wait for a compilation


def test_a_timed_move_before_any_search_compiles_waits_inside_its_time_not_past_it():
    engine = ScriptedEngine(compiled=(0,), simulations=4, compile_seconds=0.3)
    compiling = threading.Thread(target=engine.programs.compiled, args=(4,), daemon=True)  # the warm-up's compilation
    compiling.start()
    time.sleep(0.05)
    timed = budget(move_time=1.0)
    result, notes = engine.search(timed, None)  # waits for the 4-simulation search, then searches with it
    assert notes[0].startswith("waited 0.") and notes[0].endswith("for the first search to compile"), notes
    assert 4 in engine.ran and result.simulations >= 4 and timed.elapsed() <= 1.0 + 0.05
    engine = ScriptedEngine(compiled=(0,), simulations=4, compile_seconds=2.0)
    compiling = threading.Thread(target=engine.programs.compiled, args=(4,), daemon=True)
    compiling.start()
    time.sleep(0.05)
    short = budget(move_time=0.3)
    result, notes = engine.search(short, None)  # the compilation outlasts the move: the policy, in time, said so
    assert engine.ran == [0] and result.simulations == 0 and short.elapsed() <= 0.3 + 0.05
    assert "for the first search to compile" in notes[0] and "still compiling" in notes[1], notes


def test_readyok_comes_when_a_move_can_be_made_not_before():
    """``isready`` while the network loads is answered once loading ends (lc0 and Stockfish answer when ready, and
    python-chess then gives the first ``go`` its whole time); a load that fails says why before ``readyok``."""
    from zerolab.frontends import uci_search

    loading, failed = threading.Event(), []

    def load():
        loading.wait(10)
        raise ValueError("no such network")

    engine = uci_search.SearchEngine(load, simulations=4, on_failure=failed.append)
    warm_up = threading.Thread(target=engine.warm_up, daemon=True)
    warm_up.start()
    running = Harness(uci_search.SearchServer(engine, "loading", 4))
    running.send("uci")
    assert running.read_until("uciok", timeout=2)[-1] == "uciok"  # the handshake does not wait for the network
    running.send("isready")
    with pytest.raises(AssertionError, match="no line starting with 'readyok'"):
        running.read_until("readyok", timeout=0.5)  # still loading: no readyok yet
    loading.set()
    warm_up.join(5)
    assert [str(error) for error in failed] == ["no such network"]  # serve_search_engine ends the process here
    assert running.read_until("readyok", timeout=2) == [
        "info string error: the engine failed to start: ValueError: no such network", "readyok"]
    running.quit()


def search_result(simulations, action, visits, value=0.0, variation=None, mean_depth=1.0, max_depth=1):
    from zerolab.frontends.search_report import SearchResult

    counts = np.zeros(8, np.int32)
    for index, count in visits.items():
        counts[index] = count
    return SearchResult(simulations, action, value, counts, tuple(variation or (action,)), mean_depth, max_depth, 0.1)


def test_searches_of_one_move_combine_by_their_visit_counts():
    from zerolab.frontends.search_report import combined

    alone = search_result(4, 3, {3: 2, 5: 2})
    assert combined([alone]) is alone  # one search keeps its own choice
    results = [search_result(8, 3, {3: 5, 5: 3}, value=0.5, variation=(3, 1, 2), max_depth=4),
               search_result(4, 5, {3: 1, 5: 3}, value=-0.1, mean_depth=2.0),
               search_result(4, 5, {5: 4}, value=-0.1)]
    together = combined(results)
    assert together.action == 5 and together.visit_counts[5] == 10 and together.visit_counts[3] == 6
    assert together.simulations == 16 and together.value == pytest.approx((0.5 * 8 - 0.1 * 8) / 16)
    assert together.principal_variation == (5,) and together.max_depth == 4
    assert together.mean_depth == pytest.approx((8 + 8 + 4) / 16) and together.seconds == pytest.approx(0.3)
    tied = combined([search_result(8, 3, {3: 4, 5: 4}, variation=(3, 6)), search_result(2, 5, {5: 1, 3: 1})])
    assert tied.action == 3 and tied.principal_variation == (3, 6)  # a tie goes to the largest search's move


def test_tree_summary_follows_the_most_visited_child():
    """A hand-made tree: root 0 -> (action 7: node 1, action 2: node 2); node 1 -> (action 4: node 3, visited 2;
    action 5: node 4, visited 1); node 3 -> action 6: node 5.  The played move may be another than the most visited."""
    import types

    import jax.numpy as jnp

    from zerolab.frontends.search_report import tree_summary

    unvisited = -1
    children_actions = np.full((6, 3), -1)
    children_index = np.full((6, 3), unvisited)
    children_visits = np.zeros((6, 3), np.int32)
    for node, slot, action, child, visits in [(0, 0, 2, 2, 1), (0, 1, 7, 1, 4), (1, 0, 4, 3, 2), (1, 1, 5, 4, 1),
                                               (3, 0, 6, 5, 1)]:
        children_actions[node, slot], children_index[node, slot], children_visits[node, slot] = action, child, visits
    tree = types.SimpleNamespace(
        parents=jnp.array([-1, 0, 0, 1, 1, 3]), children_actions=jnp.array(children_actions),
        children_index=jnp.array(children_index), children_visits=jnp.array(children_visits),
        ROOT_INDEX=0, UNVISITED=unvisited)
    variation, mean_depth, max_depth = tree_summary(tree, 7, 5)
    assert variation.tolist() == [7, 4, 6, -1, -1] and int(max_depth) == 3
    assert float(mean_depth) == pytest.approx((1 + 1 + 2 + 2 + 3) / 5)
    variation, _, _ = tree_summary(tree, 2, 5)  # the played move's node has no children: the variation is that move
    assert variation.tolist() == [2, -1, -1, -1, -1]


def test_value_to_centipawns_is_odd_and_monotone():
    from zerolab.frontends.search_report import value_to_centipawns

    values = [value_to_centipawns(q) for q in (-1.0, -0.5, 0.0, 0.5, 1.0)]
    assert values == sorted(values) and values[2] == 0 and values[1] == -values[3]
    # lc0's legacy formula, 290.680623072 · tan(1.548090806 · Q), by hand: tan(0.774045) = 0.97753, tan(1.393282)
    # = 5.5740; Q is clipped to ±0.99 (tan(1.532610) = 26.17).
    assert [value_to_centipawns(q) for q in (0.5, 0.9, -0.9, 1.0)] == [284, 1620, -1620, 7608]


def test_search_overrides_reach_the_search_config():
    from zerolab.search.config import SearchConfig
    from zerolab.frontends.loaded_search import play_search

    run = SearchConfig(kind="gumbel", num_simulations=32, gumbel_scale=1.0, dirichlet_fraction=0.25)
    played = play_search(run, 8, {"kind": "muzero", "pb_c_init": "2"})
    assert (played.kind, played.num_simulations, played.pb_c_init) == ("muzero", 8, 2.0)
    assert played.gumbel_scale == 0.0 and played.dirichlet_fraction == 0.0  # no exploration noise when playing
    with pytest.raises(ValueError, match="unknown search key 'bogus'.*valid: "):
        play_search(run, 8, {"bogus": "1"})
    ruled = play_search(run, None, {"rules": "pkg.mod:factory", "rule_options.limit": "3"})
    assert ruled.rules == "pkg.mod:factory" and dict(ruled.rule_options) == {"limit": 3}


class LowestActionAgent(Agent):
    """Plays the legal action with the lowest pgx id and keeps the states it was given."""

    name = "lowest"

    def __init__(self, game):
        self.game, self.states, self.new_games = game, [], 0

    def select_actions(self, states, key, active=None):
        self.states.append(states)
        return np.argmax(np.asarray(states.legal_action_mask), axis=-1).astype(np.int32)

    def new_game(self):
        self.new_games += 1


def test_any_agent_behind_the_uci_server_sees_pgx_states_with_history(chess_game):
    from zerolab.frontends.agent_uci import agent_server

    agent = LowestActionAgent(chess_game)
    running = Harness(agent_server(agent))
    running.send("uci")
    assert running.read_until("uciok")[0] == "id name zerolab lowest"
    running.send("position startpos moves e2e4 e7e5", "go nodes 1")
    answer = running.read_until("bestmove")[-1].split()[1]
    state = jax.tree.map(lambda leaf: leaf[0], agent.states[-1])
    legal = np.flatnonzero(np.asarray(state.legal_action_mask))
    assert answer == chess_game.action_to_uci(int(legal[0]), state)
    board = chess.Board()
    placements = [board.board_fen()]
    for move in ("e2e4", "e7e5"):
        board.push_uci(move)
        placements.insert(0, board.board_fen())
    assert chess_game.history_placements(state)[:3] == placements  # the game's positions, not a bare FEN
    running.send("position startpos", "go nodes 1 searchmoves h2h3 g2g4")
    answer = running.read_until("bestmove")[-1]
    state = jax.tree.map(lambda leaf: leaf[0], agent.states[-1])
    assert sorted(chess_game.legal_moves_uci(state)) == ["g2g4", "h2h3"] and answer in ("bestmove g2g4",
                                                                                        "bestmove h2h3")
    running.send("ucinewgame", "isready")
    running.read_until("readyok")
    assert agent.new_games == 1
    running.quit()


def test_principal_variation_moves_are_read_in_each_position(chess_game):
    """pgx encodes a move from the mover's side: each move of the variation is named in the position it is played
    in, and the variation ends with the game."""
    from zerolab.frontends.search_positions import variation_moves

    state = root = chess_game.from_fen(chess_game.start_fen)
    actions = []
    for move in ("e2e4", "e7e5", "g1f3", "b8c6"):
        actions.append(chess_game.uci_to_action(move, state))
        state = chess_game.jitted_step(state, np.int32(actions[-1]))
    assert variation_moves(chess_game, root, actions) == ("e2e4", "e7e5", "g1f3", "b8c6")
    mated = chess_game.from_fen("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1")
    assert variation_moves(chess_game, mated, [0, 1]) == ()


def zerolab_uci(*arguments):
    return [sys.executable, "-m", "zerolab", "uci", *arguments]


def config_only_run(directory, game="chess", steps=(0, 1)):
    """A run directory with its ``config.json`` and empty checkpoint step directories: what the launch check reads."""
    from zerolab.config import to_json
    from zerolab.training.runs import default_config

    config = default_config()
    config.game.name = game
    (directory / "checkpoints").mkdir(parents=True)
    for step in steps:
        (directory / "checkpoints" / str(step)).mkdir()
    (directory / "config.json").write_text(to_json(config))
    return directory


def test_launch_check_refuses_what_it_can_see_without_loading(tmp_path):
    from zerolab.frontends.loaded_search import check_checkpoint

    chess_run, go_run = config_only_run(tmp_path / "chess"), config_only_run(tmp_path / "go", "go")
    assert check_checkpoint(chess_run)["game"]["name"] == "chess"
    assert check_checkpoint(chess_run / "checkpoints" / "0", None, {"kind": "muzero"})["game"]["name"] == "chess"
    refused = [
        (go_run, None, {}, ValueError, "the run plays go; a UCI engine plays 8x8 chess.*zerolab gtp"),
        (chess_run, 7, {}, FileNotFoundError, "--step 7: no checkpoint step 7 in .*; steps: 0, 1"),
        (tmp_path / "nothing", None, {}, FileNotFoundError, "no such run or checkpoint directory"),
        (tmp_path, None, {}, FileNotFoundError, "neither a run directory"),
        (config_only_run(tmp_path / "empty", steps=()), None, {}, FileNotFoundError, "no checkpoint in"),
        (chess_run, None, {"num_simulations": "abc"}, ValueError, "num_simulations=abc"),
        (chess_run, None, {"kind": "alphabeta"}, ValueError, "search.kind must be one of"),
        (chess_run, None, {"bogus": "1"}, ValueError, "unknown search key 'bogus'"),
        (chess_run, None, {"rules": "no.such.module:factory"}, ValueError, "no.such.module"),
        (config_only_run(tmp_path / "gardner", "gardner_chess"), None, {}, ValueError,
         "a ResNet trained on Gardner chess cannot play 8x8 chess"),
    ]
    gateau = config_only_run(tmp_path / "gateau", "gardner_chess")
    config = json.loads((gateau / "config.json").read_text())
    config["model"]["name"] = "alphagateau.network:make_alphagateau"
    (gateau / "config.json").write_text(json.dumps(config))
    assert check_checkpoint(gateau)["game"]["name"] == "gardner_chess"  # a graph network plays either board
    for path, step, overrides, error, message in refused:
        with pytest.raises(error, match=message):
            check_checkpoint(path, step, overrides)


def test_only_closed_event_loop_errors_of_unreadable_checkpoints_are_dropped(monkeypatch):
    import types

    from zerolab.frontends.loaded_search import quiet_closed_event_loop_errors

    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    quiet_closed_event_loop_errors()
    quiet_closed_event_loop_errors()  # installed once
    closed, other = RuntimeError("Event loop is closed"), RuntimeError("something else")
    for error in (closed, other, ValueError("Event loop is closed")):
        sys.unraisablehook(types.SimpleNamespace(exc_value=error))
    assert [unraisable.exc_value for unraisable in reported][:1] == [other] and len(reported) == 2


def test_uci_command_refuses_bad_input_at_launch_in_one_line(tmp_path):
    """Refused before ``uciok``: nothing on standard output, one ``error:`` line on standard error, exit status 2
    (each refusal of the launch check, tested above, takes the path of the first case)."""
    go_run = config_only_run(tmp_path / "go", "go")
    launches = {
        "plays go": ("--checkpoint", str(go_run)),
        "--simulations must be from 1 to": ("--checkpoint", str(go_run), "--simulations", "0"),
        "/nonexistent/run": ("--checkpoint", "/nonexistent/run"),
        "search.KEY=VALUE": ("--checkpoint", str(go_run), "kind=muzero"),
    }
    processes = {message: subprocess.Popen(zerolab_uci(*arguments), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True, cwd=REPOSITORY_ROOT)
                 for message, arguments in launches.items()}  # in parallel: each one mostly imports
    for message, process in processes.items():
        output, error = process.communicate("uci\nisready\nposition startpos\ngo nodes 1\nquit\n", timeout=120)
        assert process.returncode == 2 and output == "", (message, output, error)
        assert error.startswith("error: ") and error.count("\n") == 1 and message in error, (message, error)


@pytest.fixture(scope="module")
def chess_run(tmp_path_factory):
    """A tiny 8x8 chess run trained for one iteration (ResNet, 4 channels, 1 block, PUCT search)."""
    from zerolab.training.runs import default_config
    from zerolab.training import train

    config = default_config()
    config.game.name = "chess"
    config.model.channels, config.model.num_blocks = 4, 1
    config.iterations = 1
    config.selfplay.num_games, config.selfplay.plies_per_iteration = 2, 2
    config.search.num_simulations, config.search.max_num_considered_actions = 2, 2
    config.search.kind = "muzero"  # PUCT, played without an override: `uciok` then needs no JAX import
    config.train.batch_size = 4
    config.progress = False
    workdir = tmp_path_factory.mktemp("chess-run") / "run"
    train.run(config, workdir)
    return workdir


def assert_searched(result, board, nodes):
    """``result`` (a python-chess ``play`` with ``info=INFO_ALL``) came from a search of one of the ``nodes`` counts
    (any count when None): its ``info`` line reports them with a depth, a selective depth and a legal principal
    variation starting with the move (python-chess parses the pv on the board), and no ``info string error`` came
    first (a failed search, or an engine that did not start, plays a fallback move without an ``info ... nodes``
    line)."""
    assert not result.info.get("string", "").startswith("error"), (board.fen(), result.info)
    assert "nodes" in result.info and (nodes is None or result.info["nodes"] in nodes), (board.fen(), result.info)
    assert 1 <= result.info["depth"] <= result.info["seldepth"], result.info
    variation = result.info["pv"]
    assert variation[0] == result.move, result.info
    line = board.copy()
    for move in variation:
        assert move in line.legal_moves, (board.fen(), variation)
        line.push(move)


@pytest.mark.slow
def test_checkpoint_engine_plays_complete_games_through_python_chess(chess_run, stockfish_path):
    """``python -m zerolab uci --checkpoint RUN`` against Stockfish to the end of the game, twice (a cold start:
    ``readyok`` waits until a move can be made, which may take longer than python-chess's 10 s), one simulation a move, the run's PUCT search, under node limits, cutechess-style clocks
    with increments and move times in turn; every move legal and searched (``assert_searched``): ``nodes 1`` under a
    node limit, any count under a clock or a move time.  Then ``go movetime 500`` uses most of its half second
    (the engine searches again and again until its budget is used, rather than one search of ``Simulations``).
    Last, a second start, with python-chess's default time-outs throughout: its first call is a one-second move, which
    must come in time (the checkpoint read once, the programs read back from the compilation cache)."""
    command = zerolab_uci("--checkpoint", str(chess_run), "--simulations", "1")
    with chess.engine.SimpleEngine.popen_uci(command, cwd=REPOSITORY_ROOT, timeout=300) as engine, \
            chess.engine.SimpleEngine.popen_uci(stockfish_path, timeout=20) as stockfish:
        engine.ping()  # readyok when a move can be made
        engine.timeout = 10.0  # python-chess's default from here on
        assert engine.id["name"] == "zerolab run"
        stockfish.configure({"Skill Level": 0})
        clock = chess.engine.Limit(white_clock=3, black_clock=3, white_inc=0.1, black_inc=0.1)  # about 0.1 s a move
        for engine_colour in (chess.WHITE, chess.BLACK):
            board = chess.Board()
            while not board.is_game_over(claim_draw=True):
                if board.turn == engine_colour:
                    limit = [chess.engine.Limit(nodes=1), clock, chess.engine.Limit(time=0.05)][board.ply() // 2 % 3]
                    result = engine.play(board, limit, info=chess.engine.INFO_ALL)
                    assert_searched(result, board, {1} if limit.nodes else None)
                else:
                    result = stockfish.play(board, chess.engine.Limit(nodes=1))
                assert result.move in board.legal_moves, (board.fen(), result.move)
                board.push(result.move)
            assert board.is_game_over(claim_draw=True)
        board = chess.Board()
        only = chess.Move.from_uci("h2h3")
        result = engine.play(board, chess.engine.Limit(nodes=1), root_moves=[only], info=chess.engine.INFO_ALL)
        assert result.move == only
        assert_searched(result, board, {1})
        result = engine.play(board, chess.engine.Limit(time=0.5), info=chess.engine.INFO_ALL)
        assert_searched(result, board, None)
        assert result.info["time"] >= 0.25 and result.info["nodes"] >= 2, result.info
    with chess.engine.SimpleEngine.popen_uci(command, cwd=REPOSITORY_ROOT) as again:
        board = chess.Board()
        result = again.play(board, chess.engine.Limit(time=1), info=chess.engine.INFO_ALL)
        assert result.move in board.legal_moves and "nodes" in result.info, result.info


def test_the_analysis_engine_answers_64_positions_in_one_batched_request(chess_run):
    """``python -m zerolab analysis``'s engine on the tiny run: 64 positions (random legal games, python-chess) in one
    query, one compiled search of batch 64; every answer's moves legal in its position, visits adding up to the root's,
    each principal variation playable, priors a distribution.  A game query (KataGo's ``moves`` + ``analyzeTurns``)
    answers each turn, and bad fields are named."""
    import io
    import json
    import random

    from zerolab.frontends import analysis

    generator, boards = random.Random(7), []
    while len(boards) < 64:
        board = chess.Board()
        for _ in range(generator.randrange(0, 40)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(generator.choice(moves))
        if not board.is_game_over():
            boards.append(board)
    engine = analysis.checkpoint_engine(str(chess_run), visits=4)
    queries = [{"id": "many", "positions": [board.fen() for board in boards], "maxVisits": 6},
               {"id": "game", "moves": ["e2e4", "e7e5", "g1f3"], "analyzeTurns": [0, 3]},
               {"id": "bad-move", "moves": ["e2e5"]},
               {"id": "bad-visits", "positions": [boards[0].fen()], "maxVisits": 0}]
    output = io.StringIO()
    engine.serve(io.StringIO("\n".join(json.dumps(query) for query in queries) + "\n"), output)
    responses = [json.loads(line) for line in output.getvalue().splitlines()]
    assert list(engine._programs) == [(64, 6), (2, 4)]  # the 64 positions in one search
    many = [response for response in responses if response["id"] == "many"]
    assert [response["turnNumber"] for response in many] == list(range(64))
    for board, response in zip(boards, many):
        infos = response["moveInfos"]
        assert response["rootInfo"]["visits"] == 7 and sum(info["visits"] for info in infos) == 6, response
        assert [info["order"] for info in infos] == list(range(len(infos)))
        assert all(a["visits"] >= b["visits"] for a, b in zip(infos, infos[1:]))
        for info in infos:
            line = board.copy()
            for move in info["pv"]:
                assert chess.Move.from_uci(move) in line.legal_moves, (board.fen(), info)
                line.push_uci(move)
            assert info["pv"][0] == info["move"] and -1 <= info["value"] <= 1 and 0 < info["prior"] <= 1
            assert info["winrate"] == pytest.approx((info["value"] + 1) / 2)
    game = [response for response in responses if response["id"] == "game"]
    assert [response["turnNumber"] for response in game] == [0, 3]
    after = chess.Board()
    for move in ("e2e4", "e7e5", "g1f3"):
        after.push_uci(move)
    assert {info["move"] for info in game[1]["moveInfos"]} <= {move.uci() for move in after.legal_moves}
    errors = {response["id"]: response for response in responses if "error" in response}
    assert errors["bad-move"]["field"] == "moves[0]" and "e2e5" in errors["bad-move"]["error"]
    assert errors["bad-visits"]["field"] == "maxVisits"


@pytest.fixture(scope="module")
def growing_engine(chess_run):
    """The tiny PUCT run's engine in this process (8 simulations, a 2,048-node tree), warmed up."""
    from zerolab.frontends import loaded_search, uci_search

    engine = uci_search.SearchEngine(lambda: loaded_search.checkpoint_search(str(chess_run), simulations=8), 8)
    engine.tree.nodes = 2048
    engine.warm_up(background_sizes=False)
    return engine


def info_fields(line):
    words = line.split()
    fields = {key: int(words[words.index(key) + 1]) for key in ("depth", "nodes", "multipv") if key in words}
    fields["pv"] = words[words.index("pv") + 1:] if "pv" in words else []
    return fields


def test_the_second_moves_search_starts_with_the_visits_kept_from_the_first(growing_engine):
    """Tree reuse: after ``go nodes 64``, the reply the tree searched most below the move played, then ``go nodes 8``
    from the new position: the search starts with that node's visits (less its own evaluation) and adds 8."""
    import jax

    from zerolab.frontends import uci_search

    engine = growing_engine
    running = Harness(uci_search.SearchServer(engine, "growing", 8))
    running.send("ucinewgame", "position startpos", "go nodes 64")
    first = running.read_until("bestmove")[-1].split()[1]
    kept = engine.tree.kept
    tree = jax.tree.map(np.asarray, kept.tree)
    state = kept.state
    action = engine.game.uci_to_action(first, state)
    node = tree.children_index[0, 0][list(tree.children_actions[0, 0]).index(action)]
    slot = int(np.argmax(tree.children_visits[0, node]))
    reply_node = tree.children_index[0, node, slot]
    reply = engine.game.action_to_uci(int(tree.children_actions[0, node, slot]),
                                      engine.game.jitted_step(state, np.int32(action)))
    expected = int(tree.node_visits[0, reply_node]) - 1
    assert expected >= 1, "the first search did not reach below its reply"
    running.send(f"position startpos moves {first} {reply}", "go nodes 8")
    lines = running.read_until("bestmove")
    assert engine.tree.reused_visits == expected
    assert info_fields([line for line in lines if line.startswith("info depth")][-1])["nodes"] == expected + 8
    running.send("ucinewgame", "position startpos moves e2e4", "go nodes 8")  # a new game: nothing kept
    running.read_until("bestmove")
    assert engine.tree.reused_visits == 0
    running.quit()


def test_analysis_goes_on_until_stop_with_multipv_lines_and_go_depth_reaches_its_depth(growing_engine):
    """``go infinite`` with ``MultiPV 3``: info lines about once a second, each report three lines ranked 1-3 whose
    nodes grow, until ``stop``; ``go depth 3`` reports depth 3 or more before its bestmove."""
    from zerolab.frontends import uci_search

    running = Harness(uci_search.SearchServer(growing_engine, "growing", 8))
    running.send("ucinewgame", "setoption name MultiPV value 3", "position startpos moves d2d4", "go infinite")
    time.sleep(2.5)
    running.send("stop")
    lines = running.read_until("bestmove")
    reports = [info_fields(line) for line in lines if line.startswith("info depth")]
    groups = []  # each report: lines ranked 1, 2, … (at most 3; a move no simulation reached is not a line)
    for report in reports:
        if report["multipv"] == 1:
            groups.append([])
        groups[-1].append(report)
    assert all([line["multipv"] for line in group] == list(range(1, len(group) + 1)) and len(group) <= 3
               for group in groups), lines
    assert len(groups) >= 3, lines  # two or more while searching (about one a second), then the last
    best = [group[0] for group in groups]
    # The nodes grow from report to report while the tree has room.  A full tree (2,048 nodes, to within one chunk of
    # the 8 simulations: reached within the 2.5 s where earlier tests compiled large chunks) stops the growth, not the
    # analysis: then the report after ``stop`` may repeat the last one's nodes.
    full = growing_engine.tree.nodes - growing_engine.tree.kept.used < 8
    assert all(a["nodes"] < b["nodes"] for a, b in zip(best[:-1], best[1:-1])), best
    assert best[-2]["nodes"] < best[-1]["nodes"] or (full and best[-2]["nodes"] == best[-1]["nodes"]), best
    assert lines[-1] == f"bestmove {best[-1]['pv'][0]}"
    searched = int((np.asarray(growing_engine.tree.kept.tree.children_visits[0, 0]) > 0).sum())
    assert len(groups[-1]) == min(3, searched) and len({line["pv"][0] for line in groups[-1]}) == len(groups[-1])
    running.send("setoption name MultiPV value 1", "position startpos moves d2d4", "go depth 3")
    depth_lines = running.read_until("bestmove")
    final = [info_fields(line) for line in depth_lines if line.startswith("info depth")][-1]
    assert final["depth"] >= 3 and "multipv" not in final
    running.quit()


class _TreePrograms:
    """The engine's compiled programs as the growing tree asks after them: which are compiled, which chunks."""

    def __init__(self, compiled: bool):
        self.compiled = compiled

    def is_compiled(self, key) -> bool:
        return self.compiled

    def compiled_chunks(self) -> list[int]:
        return [16] if self.compiled else []


def test_a_timed_move_grows_the_kept_tree_only_once_its_programs_are_compiled_and_analysis_always_does():
    """A timed PUCT move grows the kept tree only when the tree's programs and a chunk are compiled (else it would
    compile inside its time: it plays fresh searches); a timed Gumbel move never; analysis (MultiPV above 1, go
    infinite) grows it whatever is compiled."""
    from zerolab.frontends.growing_tree import GrowingTree

    timed = SearchBudget(move_time=0.3, time_budget=0.3)
    for compiled in (False, True):
        tree = GrowingTree(_TreePrograms(compiled), timing=None, next_key=lambda: None)
        assert tree.grows(timed, "muzero") is compiled
        assert tree.grows(timed, "gumbel") is False
        assert tree.grows(SearchBudget(infinite=True), "gumbel") is True
        tree.multipv = 2
        assert tree.grows(timed, "muzero") is True and tree.grows(timed, "gumbel") is True
