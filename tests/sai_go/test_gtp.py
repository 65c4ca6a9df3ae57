"""SAI's GTP engine: a scripted session (malformed input, handicap, SAI's commands), a whole game against GNU Go
through ``python -m sai_go.gtp``, and ``final_score`` against GNU Go's own count."""

from __future__ import annotations

import io
import pathlib
import subprocess
import sys

import jax
import pytest

from zerolab.api import GoGame, GTPEngine, GTPEngineOptions, load_config, train
from sai_go.agents import SaiAgent
from sai_go.gtp import SaiGTPServer

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


def test_a_scripted_session(sai_run):
    server = SaiGTPServer(SaiAgent.from_checkpoint(sai_run, lam=0.0, simulations=2), seed=1)
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
        "27 quit\n"
    )
    responses = session(server, script)
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
    assert responses[25] == "=26 0.5" and responses[26] == "=27"


def test_bad_checkpoints_and_options_fail_naming_them(sai_run, tmp_path):
    result = subprocess.run([sys.executable, "-m", "sai_go.gtp", "--checkpoint", str(sai_run), "--lambda", "1.5"],
                            cwd=REPOSITORY, capture_output=True, text=True, timeout=900)
    assert result.returncode == 2 and "--lambda must be in [0, 1], got 1.5" in result.stderr
    other = tmp_path / "resnet"
    train.run(load_config("sai-go", "tiny", TINY + ["model.name=resnet", "method=", "game.go_size=5"]), other)
    with pytest.raises(ValueError, match=f"{other} is not an SAI run: its model.name is 'resnet'"):
        SaiAgent.from_checkpoint(other)


def play_out(black, white, game, referee_moves=None):
    """Plays ``black`` against ``white`` (GTPEngine-like) to the end, checking every move with pgx; the moves."""
    step = jax.jit(game.step)
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


def test_a_whole_game_against_gnugo_through_the_command(sai_run, gnugo_path):
    game = GoGame(size=7, komi=9.5)
    command = [sys.executable, "-m", "sai_go.gtp", "--checkpoint", str(sai_run), "--simulations", "2",
               "--lambda", "0.5"]
    with GTPEngine(GTPEngineOptions(timeout=900.0), command=command, name="sai_go gtp") as sai, \
            GTPEngine(GTPEngineOptions(engine=gnugo_path, level=1, komi=9.5)) as gnugo:
        sai.send("boardsize 7")
        sai.send("komi 9.5")
        sai.send("clear_board")
        moves, state = play_out(sai, gnugo, game)
        assert len(moves) > 2
        expected = float(game.area_difference(state)) - 9.5
        assert sai.send("final_score") == ("0" if expected == 0 else f"{'B' if expected > 0 else 'W'}+{abs(expected):g}")


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
    server = SaiGTPServer(SaiAgent.from_checkpoint(sai_run, simulations=2))
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
