"""SAI's GTP engine: a scripted session (malformed input, handicap, SAI's commands) and then a whole game against
GNU Go, both through one ``python -m sai_go.gtp`` process; bad options and checkpoints; ``final_score`` against GNU
Go's own count; ``sai-lambda`` changing the moves played, and ``genmove`` refusing a positional-superko repetition
that the search prefers."""

from __future__ import annotations

import io
import pathlib
import queue
import subprocess
import sys
import threading

import jax
import numpy as np
import pytest

from zerolab import GoGame, SearchChanges, train
from experiments.configs import load_config
from zerolab.engines.gtp_client import GTPEngine, GTPEngineOptions
from sai_go.agents import SaiAgent
from sai_go.gtp import SaiGTPServer, main
from tests.fast_compile import fast_jit, subprocess_env

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
TINY = ["model.channels=8", "model.num_blocks=1", "model.value_hidden=8", "search.num_simulations=2",
        "iterations=0", "progress=False"]


@pytest.fixture(scope="module")
def sai_run(tmp_path_factory):
    """An SAI run directory holding its initial network (step 0): no self-play needed to play it."""
    workdir = tmp_path_factory.mktemp("sai") / "run"
    train.run(load_config("sai-go", "tiny", TINY), workdir)
    return workdir


def session(server, script: str) -> list[str]:
    output = io.StringIO()
    server.serve(io.StringIO(script), output)
    return output.getvalue()[:-2].split("\n\n")


class GTPProcess:
    """``python -m sai_go.gtp`` on the run (2 simulations a move, the tests' XLA flags), driven over its pipes: raw
    text in, whole responses (``=id text`` / ``?id text``) out; ``send`` and ``generate_move`` like the core's
    GTPEngine, so that :func:`play_out` plays it."""

    def __init__(self, sai_run, *options: str, log: pathlib.Path):
        command = [sys.executable, "-m", "sai_go.gtp", "--checkpoint", str(sai_run), "--simulations", "2", *options]
        self.log = log
        self.process = subprocess.Popen(command, cwd=REPOSITORY, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=open(log, "w"), text=True, bufsize=1, env=subprocess_env())
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [*map(self.lines.put, self.process.stdout), self.lines.put(None)],
                         daemon=True).start()

    def write(self, text: str) -> None:
        self.process.stdin.write(text)
        self.process.stdin.flush()

    def response(self, timeout: float = 900.0) -> str:
        """The next response, its lines joined by newlines (the blank line that ends it dropped)."""
        lines = []
        while True:
            line = self.lines.get(timeout=timeout)
            assert line is not None, f"the engine exited; its log: {self.log.read_text()[-3000:]}"
            if line.strip() == "":
                if lines:
                    return "\n".join(lines)
                continue
            lines.append(line.rstrip("\n"))

    def send(self, command: str) -> str:
        self.write(command + "\n")
        answer = self.response()
        assert answer.startswith("="), (command, answer)
        return answer[1:].strip()

    def generate_move(self, colour: str) -> str:
        return self.send(f"genmove {colour}").lower()


@pytest.mark.slow  # 23 s of CPU with a cold compilation cache, the SAI run included
def test_a_scripted_session_then_a_whole_game_against_gnugo_through_the_command(sai_run, gnugo_path, tmp_path):
    """One engine process (one compilation of its search) for both: the script, then a game against GNU Go level 1
    at λ = 0.5, then ``quit``."""
    script = (
        "1 protocol_version\n"
        "2 KOMI inf\r\n"
        "3 komi 9.5  # the evaluation komi\n"
        "4 boardsize 9\n"
        "5 list_commands\n"
        "6 fixed_handicap 5\n"
        "7 fixed_handicap 2\n"
        "8 fixed_handicap 2\n"
        "9 genmove w\n"
        "10 sai-lambda 0.5\n"
        "11 sai-lambda 2\n"
        "12 sai-winrate 0.5\n"
        "13 sai-winrate 30.5\n"
        "14 sai-winrate lots\n"
        "15 sai-estimate_score\n"
        "16 time_settings 300 10 5\n"
        "17 time_left b 290 0\n"
        "18 time_left b\n"
        "\n"
        "19 set_free_handicap D4 D5\n"
        "20 final_score\n"
        "21 clear_board\n"
        "22 set_free_handicap D4 D4\n"
        "23 set_free_handicap D4 B2 F6\n"
        "24 showboard\n"
        "25 genmove b\n"
        "26 sai-lambda\n"
    )
    sai = GTPProcess(sai_run, "--lambda", "0", "--seed", "1", log=tmp_path / "gtp.log")
    try:
        sai.write(script)
        responses = [sai.response() for _ in range(26)]
        assert responses[0] == "=1 2"
        assert responses[1].startswith("?2 komi must be finite")
        assert responses[2] == "=3"
        assert responses[3].startswith("?4 unacceptable size 9")
        listed = responses[4][3:].split("\n")
        assert {"sai-lambda", "sai-estimate_score", "sai-winrate", "fixed_handicap", "time_left"} <= set(listed)
        assert responses[5].startswith("?6 invalid number of handicap stones")
        assert responses[6] == "=7 C3 E5"
        assert responses[7].startswith("?8 handicap stones go on an empty board")
        assert responses[8].startswith("=9 ") and responses[8][4:] not in ("C3", "E5")
        assert responses[9] == "=10 0.5" and responses[10].startswith("?11 lambda must be in [0, 1]")
        low, high = float(responses[11][4:]), float(responses[12][4:])
        assert 0.0 < high < low < 1.0  # Black's winrate falls as the komi grows
        assert responses[13].startswith("?14 ")
        assert responses[14][:5] in ("=15 B", "=15 W") or responses[14] == "=15 0"
        assert responses[15:17] == ["=16", "=17"] and responses[17].startswith("?18 time_left expects 3")
        assert responses[18].startswith("?19 handicap stones go on an empty board")
        assert responses[19].startswith("=20 ")
        assert responses[20] == "=21" and responses[21].startswith("?22 bad handicap vertex")
        assert responses[22] == "=23"
        board = responses[23]
        assert "White to move, komi 9.5" in board and board.count("X") == 3 and board.count("O") == 0
        # After a handicap White is to move: genmove b inserts a White pass, then Black moves.
        assert responses[24].startswith("=25 ")
        assert responses[25] == "=26 0.5"

        # A whole game against GNU Go level 1 (legal moves only, pgx referees), then final_score and quit.
        game = GoGame(size=7, komi=9.5)
        with GTPEngine(GTPEngineOptions(engine=gnugo_path, level=1, komi=9.5)) as gnugo:
            for command in ("boardsize 7", "komi 9.5", "clear_board", "sai-lambda 0.5"):
                sai.send(command)
            moves, state = play_out(sai, gnugo, game)
        assert len(moves) > 2
        expected = float(game.area_difference(state)) - 9.5
        winner = "B" if expected > 0 else "W"
        assert sai.send("final_score") == ("0" if expected == 0 else f"{winner}+{abs(expected):g}")
        sai.write("27 quit\n")
        assert sai.response() == "=27"
        assert sai.process.wait(timeout=60) == 0
    finally:
        if sai.process.poll() is None:
            sai.process.kill()
            sai.process.wait()


def test_bad_checkpoints_and_options_fail_naming_them(sai_run, tmp_path, capsys):
    assert main(["--checkpoint", str(sai_run), "--lambda", "1.5"]) == 2  # python -m sai_go.gtp's exit status
    assert "--lambda must be in [0, 1], got 1.5" in capsys.readouterr().err
    assert main(["--checkpoint", str(sai_run), "--simulations", "0"]) == 2
    assert "--simulations must be at least 1, got 0" in capsys.readouterr().err
    other = tmp_path / "resnet"
    train.run(load_config("sai-go", "tiny", TINY + ["model.name=resnet", "method="]), other)
    with pytest.raises(ValueError, match=f"{other} is not an SAI run: its model.name is 'resnet'"):
        SaiAgent.from_checkpoint(other)


def play_out(black, white, game, referee_moves=None):
    """Plays ``black`` against ``white`` (GTPEngine-like) to the end, checking every move with pgx; the moves."""
    step = fast_jit(game.step)
    state = game.init(jax.random.key(0))
    moves = []
    while not bool(state.terminated):
        colour = "b" if bool(game.black_to_move(state)) else "w"
        mover, other = (black, white) if colour == "b" else (white, black)
        vertex = mover.generate_move(colour)
        assert vertex != "resign"
        action = game.text_to_action(vertex, state)  # raises on an illegal move
        state = step(state, action)
        assert not bool(game.ended_by_rule_violation(state)), f"{vertex} repeats a position"
        other.send(f"play {colour} {vertex}")
        moves.append(vertex)
    return moves, state


GNUGO_FLAGS = ["--mode", "gtp", "--boardsize", "7", "--chinese-rules", "--positional-superko", "--capture-all-dead",
               "--level", "1"]


@pytest.mark.parametrize("komi,seed", [(9.5, 1), (2.5, 2), (0.0, 3)])
def test_final_score_agrees_with_gnugo_on_gnugo_games(sai_run, gnugo_path, komi, seed):
    game = GoGame(size=7, komi=komi)
    flags = GNUGO_FLAGS + ["--komi", f"{komi:g}"]
    engines = [GTPEngine(GTPEngineOptions(timeout=60.0), command=[gnugo_path, *flags], name=f"gnugo-{colour}")
               for colour in "bw"]
    with engines[0] as black, engines[1] as white:
        for index, engine in enumerate((black, white)):
            engine.send(f"set_random_seed {seed * 2 + index}")
        moves, state = play_out(black, white, game)
        gnugo_score = black.send("final_score")
    assert bool(game.ended_by_two_passes(state))
    server = SaiGTPServer(SaiAgent.from_checkpoint(sai_run, search=SearchChanges.of(num_simulations=2)))
    colours = ["b", "w"]
    script = f"komi {komi:g}\n" + "".join(f"play {colours[index % 2]} {vertex}\n" for index, vertex in enumerate(moves))
    responses = session(server, script + "final_score\n")
    assert all(response == "=" for response in responses[:-1])
    assert responses[-1].startswith("= ") and black_margin(responses[-1][2:]) == black_margin(gnugo_score)


def black_margin(score: str) -> float:
    """Black's margin of a GTP score (``B+3.5``, ``W+11.0``, ``0``)."""
    if score == "0":
        return 0.0
    assert score[:2] in ("B+", "W+"), score
    return float(score[2:]) * (1 if score[0] == "B" else -1)


# --- λ and the superko filter, observed through GTP -------------------------------------------------------------------

LAMBDA_SIMULATIONS = 8  # 2 simulations leave the same moves at λ 0 and 1 for this untrained network; 8 do not


def genmoves(server, *setup: str, moves: int = 10) -> list[str]:
    """``genmove`` for both colours in turn, ``moves`` times, after the ``setup`` commands (all must succeed)."""
    colours = "bw" * moves
    responses = session(server, "".join(f"{line}\n" for line in setup)
                        + "".join(f"genmove {colour}\n" for colour in colours[:moves]))
    assert all(response.startswith("=") for response in responses), responses
    return [response[2:] for response in responses[len(setup):]]


def test_lambda_set_through_gtp_changes_the_moves_the_agent_plays(sai_run):
    """``sai-lambda 1`` sent to the server plays the moves of an agent built with λ = 1, which are not λ = 0's: the
    λ the server is told reaches the search (same seed, same commands, so only λ differs)."""
    agent = SaiAgent.from_checkpoint(sai_run, search=SearchChanges.of(num_simulations=LAMBDA_SIMULATIONS))
    at_zero = genmoves(SaiGTPServer(agent.with_options(lam=0.0), seed=0), "komi 0.5", "sai-lambda 0")
    told_one = genmoves(SaiGTPServer(agent.with_options(lam=0.0), seed=0), "komi 0.5", "sai-lambda 1")
    built_one = genmoves(SaiGTPServer(agent.with_options(lam=1.0), seed=0), "komi 0.5")
    assert told_one == built_one
    assert sum(a != b for a, b in zip(at_zero, told_one)) >= 3, (at_zero, told_one)
    told_zero = genmoves(SaiGTPServer(agent.with_options(lam=1.0), seed=0), "komi 0.5", "sai-lambda 0")
    assert told_zero == at_zero


#: A random 7×7 game (found with pgx, seed 0 of 512 random games) whose last move, Black's B7 after White's pass,
#: repeats an earlier position: pgx allows it and ends the game by positional superko.
SUPERKO_GAME = ("C6 C3 E1 C7 G4 G6 E5 D6 D1 C2 F3 B1 A1 B2 D2 C5 E6 D3 E7 B4 G7 E4 D5 F4 A4 B3 G5 E3 G3 E2 A3 F7 A7 "
                "C1 A6 A2 C4 F1 G2 G7 D4 A5 B7 F5 B5 G1 D2 A4 F6 A1 D1 F7 G7 E1 G6 B6 D1 C5 D7 A3 B7 A6 F7 B5 C6 F2 "
                "A7 C7 A7 pass B7").split()


def test_genmove_never_plays_a_superko_repetition_through_gtp(sai_run):
    """The network is made to want B7, the move that repeats a position (policy bias +20 on it): the search visits
    it most, and ``genmove b`` still answers a move that keeps the game going (the agent's superko filter)."""
    agent = SaiAgent.from_checkpoint(sai_run, search=SearchChanges.of(num_simulations=LAMBDA_SIMULATIONS))
    game = agent.game
    *played, repeating = SUPERKO_GAME
    step = fast_jit(game.step)
    state = game.init(jax.random.key(0))
    for vertex in played:
        state = step(state, game.text_to_action(vertex, state))
    target = game.text_to_action(repeating, state)
    assert bool(state.legal_action_mask[target])  # legal for pgx ...
    assert bool(game.ended_by_rule_violation(step(state, target)))  # ... and a positional-superko repetition
    variables = jax.tree.map(np.array, agent.variables)  # a copy; the policy head's last layer is Dense_0
    variables["params"]["Dense_0"]["bias"][target] += 20.0
    wanting = agent.with_options(variables=variables)
    searched = wanting.analyse(jax.tree.map(lambda leaf: leaf[None], state), jax.random.key(1))
    assert int(searched.visit_counts[0].argmax()) == target  # the search prefers the repetition

    colours = "bw" * len(SUPERKO_GAME)
    script = "".join(f"play {colour} {vertex}\n" for colour, vertex in zip(colours, played))
    responses = session(SaiGTPServer(wanting, seed=1), script + "genmove b\n")
    assert all(response == "=" for response in responses[:-1]), responses
    answer = responses[-1][2:]
    assert responses[-1].startswith("= ") and answer.upper() != repeating, responses[-1]
    following = step(state, game.text_to_action(answer, state))
    assert not bool(game.ended_by_rule_violation(following)), answer
