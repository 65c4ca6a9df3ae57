"""The search-contempt UCI engine plays whole games against Stockfish through python-chess with ScLimit 1, 5 and off,
and refuses bad options with the UCI protocol's error lines."""

from __future__ import annotations

import sys

import chess
import chess.engine
import pytest

from contempt_search.uci import SC_LIMIT_OFF, contempt_search_changes
from zerolab import train
from zerolab.config import load_config


@pytest.fixture(scope="module")
def chess_network(tmp_path_factory):
    """An untrained 8×8 ResNet saved as a run (0 iterations: the initial network's checkpoint only)."""
    workdir = tmp_path_factory.mktemp("contempt-uci") / "run"
    config = load_config("quickstart", "tiny", ["game.name=chess", "model.name=resnet", "model.channels=8",
                                                 "model.num_blocks=1", "iterations=0", "progress=False"])
    train.run(config, workdir)
    return workdir


def play_game(engine, stockfish, max_plies=300):
    board = chess.Board()
    while not board.is_game_over(claim_draw=True) and board.ply() < max_plies:
        player = engine if board.turn == chess.WHITE else stockfish
        move = player.play(board, chess.engine.Limit(nodes=2 if player is engine else 500)).move
        assert move in board.legal_moves, (board.fen(), move)
        board.push(move)
    return board


@pytest.mark.slow
def test_plays_whole_games_with_each_sc_limit(chess_network, stockfish_path):
    command = [sys.executable, "-m", "contempt_search.uci", "--checkpoint", str(chess_network), "--simulations", "2",
               "--sc-limit", "1"]
    engine = chess.engine.SimpleEngine.popen_uci(command, timeout=300)
    stockfish = chess.engine.SimpleEngine.popen_uci(stockfish_path)
    try:
        assert {"ScLimit", "SearchKind", "Simulations"} <= set(engine.options)
        assert (engine.options["ScLimit"].min, engine.options["ScLimit"].max) == (1, SC_LIMIT_OFF)
        stockfish.configure({"Skill Level": 0})
        for sc_limit in (1, 5, SC_LIMIT_OFF):
            engine.configure({"ScLimit": sc_limit})
            board = play_game(engine, stockfish)
            assert board.is_game_over(claim_draw=True), board.fen()  # played to the end (Stockfish mates it)
        with pytest.raises(chess.engine.EngineError):  # python-chess checks the spin's range itself
            engine.configure({"ScLimit": 0})
    finally:
        engine.quit()
        stockfish.quit()


@pytest.mark.parametrize("bad", [0, -1, 2.5, "x", True, SC_LIMIT_OFF + 1])
def test_bad_sc_limits_are_refused_with_the_range(bad):
    with pytest.raises(ValueError, match="sc_limit must be an integer from 1 to 1000000000"):
        contempt_search_changes("muzero", bad)


def test_sc_limit_off_is_the_plain_search():
    assert contempt_search_changes("gumbel", SC_LIMIT_OFF) == {"kind": "gumbel", "rules": "", "rule_options": ()}
    assert contempt_search_changes("muzero", 5)["rule_options"] == {"sc_limit": 5}
    with pytest.raises(ValueError, match="search kind"):
        contempt_search_changes("alphabeta", 5)
