"""The GTP server (zerolab.frontends.gtp): protocol handling with a random chooser, pgx as the referee."""

from __future__ import annotations

import io
import os
import pathlib
import subprocess
import sys

import jax
import pytest

from zerolab.play.agent_specs import make_agent
from zerolab.play.engine_agents import GTPEngineAgent
from zerolab.play.search_agents import load_search_agent
from zerolab.games.go import GoGame
from zerolab.engines.gtp_client import GTPEngine, GTPEngineOptions
from zerolab.frontends.gtp import GTPServer, format_score, random_chooser


def run_script(script: str) -> list[str]:
    server = GTPServer(GoGame(size=7, komi=7.5), random_chooser)
    output = io.StringIO()
    server.serve(io.StringIO(script), output)
    text = output.getvalue()
    assert text.endswith("\n\n")
    return text[:-2].split("\n\n")


def test_malformed_input_answers_question_mark_and_the_loop_goes_on():
    script = (
        "# a comment line\n"
        "\n"
        "1 protocol_version\r\n"
        "2 frobnicate\n"
        "3 play X Z9\n"
        "4 play b Z9\n"
        "play b A8\n"
        "5 boardsize 0\n"
        "6 boardsize\n"
        "7 play b\n"
        "8 komi lots\n"
        "9 play black D4   # a comment after a move\r\n"
        "10 play w D4\n"
        "11 known_command genmove\n"
        "12 known_command frobnicate\n"
        "13 genmove w\n"
        "14 undo\n"
        "15 undo\n"
        "16 undo\n"
        "17 boardsize 7\n"
        "18 quit\n"
        "19 name\n"
    )
    responses = run_script(script)
    assert responses[0] == "=1 2"
    for response, identifier in zip(responses[1:8], ["2", "3", "4", "", "5", "6", "7"]):
        assert response.startswith(f"?{identifier} "), response
    assert "unknown command" in responses[1]
    assert "color" in responses[2] and "vertex" in responses[3] and "size" in responses[5]
    assert responses[8].startswith("?8 ")
    assert responses[9] == "=9"
    assert responses[10].startswith("?10 illegal move")
    assert responses[11:13] == ["=11 true", "=12 false"]
    assert responses[13].startswith("=13 ") and responses[13][4:] != "D4"
    GoGame(7).gtp_to_action(responses[13][4:])  # a well-formed vertex
    assert responses[14:16] == ["=14", "=15"]
    assert responses[16].startswith("?16 cannot undo")
    assert responses[17:] == ["=17", "=18"]  # nothing answered after quit


def test_out_of_turn_play_inserts_a_pass_and_final_score_counts_area_minus_komi():
    server = GTPServer(GoGame(size=7, komi=7.5), random_chooser)
    assert server.handle("play w D4") == "=\n\n"  # Black passes first
    assert [server.game.action_to_gtp(action) for action in server.moves] == ["pass", "D4"]
    assert server.handle("final_score") == "= W+56.5\n\n"
    assert server.handle("komi -60.5") == "=\n\n"
    assert server.handle("final_score") == "= B+11.5\n\n"
    assert server.handle("komi 0") == "=\n\n"
    for text in ("inf", "-inf", "nan"):  # refused, the komi kept
        assert server.handle(f"komi {text}") == f"? komi must be finite, got {text!r}\n\n"
    assert server.game.komi == 0.0
    server.handle("play b pass")
    server.handle("play w pass")
    assert bool(server.state.terminated)
    assert server.handle("play b A1").startswith("? the game is over")
    assert server.handle("genmove b") == "= pass\n\n"
    assert server.handle("final_score") == "= W+49\n\n"
    assert "O" in server.handle("showboard")


@pytest.mark.parametrize("size", ["0", "9", "-1"])
def test_board_size_the_chooser_cannot_play_is_refused(size):
    server = GTPServer(GoGame(size=7), random_chooser)
    assert server.handle(f"boardsize {size}") == f"? unacceptable size {size}: this engine plays 7\n\n"
    assert server.handle("boardsize seven") == "? boardsize expects a board size (7), got 'seven'\n\n"
    assert server.handle("genmove b").startswith("= ")


# --- a Go checkpoint against GNU Go ------------------------------------------------------------------------------

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def go_run(tmp_path_factory):
    """A tiny trained 7×7 Go run directory (one iteration)."""
    from zerolab.training.runs import default_config
    from zerolab.training import train

    config = default_config()
    config.game.name, config.game.go_size = "go", 7
    config.model.channels, config.model.num_blocks = 4, 1
    config.iterations = 1
    config.selfplay.num_games, config.selfplay.plies_per_iteration = 4, 4
    config.search.num_simulations, config.search.max_num_considered_actions = 2, 2
    config.train.batch_size = 8
    config.progress = False
    workdir = tmp_path_factory.mktemp("go_run")
    train.run(config, workdir)
    return workdir


def test_gnugo_spec_is_parsed_with_clear_errors():
    options = GTPEngineOptions.parse("gnugo:level=5,timeout=3", board_size=7, komi=5.5)
    assert (options.engine, options.level, options.timeout, options.komi) == ("gnugo", 5, 3.0, 5.5)
    with pytest.raises(ValueError, match="unknown option 'depth'"):
        GTPEngineOptions.parse("gnugo:depth=3")
    with pytest.raises(ValueError, match="level expects"):
        GTPEngineOptions.parse("gnugo:level=strong")


@pytest.mark.slow  # 40 s of CPU with a cold compilation cache, the Go run included
def test_checkpoint_plays_gnugo_through_the_arena(go_run, gnugo_path):
    from zerolab.play.arena import play_match

    agent = load_search_agent(go_run, {"num_simulations": "2"})
    gnugo = make_agent("gnugo:level=1", agent.game)
    assert isinstance(gnugo, GTPEngineAgent)
    try:
        match = play_match(agent.game, agent, gnugo, 2, jax.random.key(0), max_game_plies=agent.game.max_game_plies,
                           show_progress=False)
    finally:
        gnugo.close()
    assert len(match.games) == 2
    for record in match.games:
        assert record.plies > 0 and record.first_player_score in (0.0, 1.0)  # Go has no draws at komi 7.5
    # The agent rebuilt the game it gave GNU Go from the states alone: its moves are the game's moves.
    last_game = match.games[-1]
    agent_moves = [agent.game.action_to_gtp(action) for action in gnugo._moves[0]]
    assert len(agent_moves) >= last_game.plies - 1
    assert agent_moves == last_game.moves[: len(agent_moves)]
    assert gnugo.fallback_moves <= 2  # GNU Go's own moves are legal under pgx except for rare ko differences


def test_gnugo_plays_handicap_games_from_arena_start_positions(gnugo_path, tmp_path, caplog):
    """Two GNU Go levels from a two-stone handicap (``C3 pass E5``: White to move), each giving it once: every game
    lane starts with the handicap moves in both engines' records, neither engine ever plays a move pgx refuses (as it
    would on a board without the stones), the SGF has the setup."""
    from zerolab.play.arena import play_match, write_pgn

    game = GoGame(size=7, komi=0.5)
    weak, strong = make_agent("gnugo:level=1", game), make_agent("gnugo:level=2", game)
    try:
        match = play_match(game, weak, strong, 2, jax.random.key(0), max_game_plies=game.max_game_plies,
                           show_progress=False, start_fens=["C3 pass E5"])
    finally:
        weak.close()
        strong.close()
    assert [record.start_fen for record in match.games] == ["C3 pass E5"] * 2
    assert [record.first_player for record in match.games] == [weak.name, strong.name]  # White moves first
    assert not [r.message for r in caplog.records if "illegal" in r.message or "failed" in r.message]
    last = match.games[-1]  # strong as White from the handicap; both engines kept the game from its start
    for agent in (weak, strong):
        moves = [game.action_to_gtp(action) for action in agent._moves[0]]
        assert moves[:3] == ["C3", "pass", "E5"] and moves[3:] == last.moves[: len(moves) - 3]
        assert len(moves) - 3 >= last.plies - 1
    sgf = write_pgn(game, match, tmp_path / "handicap.sgf").read_text().splitlines()[-1]
    assert f"PB[{weak.name}]" in sgf and f"PW[{strong.name}]" in sgf
    assert "C[start position: C3 pass E5]" in sgf and ";B[ce];W[];B[ec];W[" in sgf


def test_checkpoint_gtp_server_plays_gnugo_as_subprocesses(go_run, gnugo_path, monkeypatch):
    """A tiny referee relays moves between ``python -m zerolab gtp --checkpoint`` and GNU Go; pgx checks each."""
    monkeypatch.chdir(REPOSITORY)  # where ``python -m zerolab`` finds the package
    game = GoGame(size=7, komi=7.5)
    server_command = [sys.executable, "-m", "zerolab", "gtp", "--checkpoint", str(go_run), "--simulations", "2"]
    zerolab_engine = GTPEngine(GTPEngineOptions(timeout=300.0), command=server_command, name="zerolab gtp").open()
    server = zerolab_engine.process
    step = game.jitted_step
    try:
        with GTPEngine(GTPEngineOptions(engine=gnugo_path, level=1, komi=7.5)) as gnugo:
            assert zerolab_engine.send("protocol_version") == "2"
            for zerolab_colour in ("b", "w"):
                state = game.init(jax.random.key(0))
                for engine in (zerolab_engine, gnugo):
                    engine.send("boardsize 7")
                    engine.send("komi 7.5")
                    engine.send("clear_board")
                plies = 0
                while not bool(state.terminated):
                    colour = "b" if bool(game.black_to_move(state)) else "w"
                    mover, other = (zerolab_engine, gnugo) if colour == zerolab_colour else (gnugo, zerolab_engine)
                    vertex = mover.generate_move(colour)
                    if vertex == "resign":
                        break
                    action = game.text_to_action(vertex, state)  # raises on an illegal move
                    other.send(f"play {colour} {vertex}")
                    state = step(state, action)
                    plies += 1
                assert plies > 0
                expected = format_score(float(game.area_difference(state)) - game.komi)
                assert zerolab_engine.send("final_score") == expected
    finally:
        zerolab_engine.close()
    assert server.returncode == 0


def test_engine_crash_and_hang_raise_errors_naming_the_engine_and_restart_works(gnugo_path):
    from zerolab.engines.gtp_client import GTPEngineError

    with GTPEngine(GTPEngineOptions(timeout=1.0), command=["sleep", "30"], name="sleepy") as hung:
        with pytest.raises(GTPEngineError, match="sleepy gave no answer to 'name' within 1 s"):
            hung.send("name")
    with GTPEngine(GTPEngineOptions(), command=["true"], name="quitter") as crashed:
        with pytest.raises(GTPEngineError, match="quitter"):
            crashed.send("name")
    with GTPEngine(GTPEngineOptions(engine=gnugo_path, level=1)) as gnugo:
        with pytest.raises(GTPEngineError, match="refused 'play b Z9'"):
            gnugo.send("play b Z9")
        gnugo.process.kill()
        gnugo.process.wait()
        with pytest.raises(GTPEngineError, match="level=1"):
            gnugo.send("genmove b")
        gnugo.restart()
        assert GoGame(7).gtp_to_action(gnugo.generate_move("b")) < 49


def test_a_controller_that_closes_the_answers_ends_the_session_quietly():
    """gnugo's twogtp closes its end right after ``quit``: the server stops without a traceback, exit status 0."""

    class ClosedPipe(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    server = GTPServer(GoGame(size=5, komi=0.5), random_chooser)
    server.serve(io.StringIO("name\nprotocol_version\n"), ClosedPipe())  # returns instead of raising
    script = ("from zerolab.games.go import GoGame\nfrom zerolab.frontends.gtp import random_chooser, serve\n"
              "serve(GoGame(size=5, komi=0.5), random_chooser)\n")
    read_end, write_end = os.pipe()
    process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=write_end,
                               stderr=subprocess.PIPE, cwd=REPOSITORY)
    os.close(write_end)
    os.close(read_end)  # nobody will read the answers
    _, errors = process.communicate(b"name\nprotocol_version\nquit\n", timeout=300)
    assert process.returncode == 0, errors.decode()
    assert b"Traceback" not in errors and b"BrokenPipe" not in errors, errors.decode()


def test_a_subclass_adds_commands_that_list_commands_and_known_command_see():
    class EchoServer(GTPServer):
        extra_commands = ("zerolab-echo",)

        def command_zerolab_echo(self, arguments):
            return " ".join(arguments)

    server = EchoServer(GoGame(size=7, komi=7.5), random_chooser)
    output = io.StringIO()
    server.serve(io.StringIO("1 ZEROLAB-ECHO a b\n2 known_command zerolab-echo\n3 list_commands\n"), output)
    responses = output.getvalue()[:-2].split("\n\n")
    assert responses[:2] == ["=1 a b", "=2 true"]
    assert responses[2].split("\n")[-1] == "zerolab-echo" and responses[2].startswith("=3 protocol_version")
    assert run_script("1 zerolab-echo x\n")[0].startswith("?1 unknown command")  # the base server has no such command


def test_gnugo_is_started_with_a_seed_so_its_moves_repeat(gnugo_path):
    """Without --seed GNU Go seeds from the clock and answers the same commands differently from run to run; the
    options give it one (spec ``seed=K``, default 1), and two engines with the same seed agree move for move."""
    options = GTPEngineOptions.parse("gnugo:level=1,seed=7", board_size=7, komi=9.5)
    assert options.seed == 7 and options.command_line()[-2:] == ["--seed", "7"]
    assert GTPEngineOptions.parse("gnugo", board_size=7).command_line()[-2:] == ["--seed", "1"]
    with pytest.raises(ValueError, match="seed expects"):
        GTPEngineOptions.parse("gnugo:seed=often")
    games = []
    for _ in range(2):
        with GTPEngine(GTPEngineOptions.parse("gnugo:level=1", board_size=7, komi=9.5)) as engine:
            engine.send("clear_board")
            games.append([engine.generate_move(colour) for colour in "bwbwbwbw"])
    assert games[0] == games[1]


def test_a_warmed_up_chooser_compiles_on_the_empty_board_first_and_genmove_waits_for_it():
    """``gtp.warmed_up``: the search is run once on the empty board in a background thread as soon as the server is
    built (GTP has no isready; the tool's first commands are answered meanwhile), and ``genmove`` waits for it rather
    than compiling a second time."""
    import threading
    import time

    from zerolab.frontends import gtp
    from zerolab.games import GoGame

    game, calls, release = GoGame(size=5), [], threading.Event()

    def slow_chooser(game, state, key):
        calls.append(int(state._step_count))  # 0: the empty board
        release.wait(5)
        return gtp.random_chooser(game, state, key)

    chooser = gtp.warmed_up(slow_chooser, game)
    deadline = time.monotonic() + 30
    while not calls and time.monotonic() < deadline:  # pgx's init compiles first
        time.sleep(0.05)
    assert calls == [0]  # the warm-up started at once, on the empty board
    answered = []
    thread = threading.Thread(target=lambda: answered.append(chooser(game, game.init(jax.random.key(1)),
                                                                     jax.random.key(1))))
    thread.start()
    time.sleep(0.2)
    assert answered == [] and len(calls) == 1  # genmove waits for the warm-up
    release.set()
    thread.join(5)
    assert len(answered) == 1 and len(calls) == 2
