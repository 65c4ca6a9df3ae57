"""The search-contempt UCI engine plays whole games against Stockfish through python-chess with ScLimit 1, 5 and off
(every move searched with the simulations asked, no error line), its ``ScLimit`` and ``SearchKind`` options change
the search the engine compiles and runs, and it refuses bad options with the UCI protocol's error lines."""

from __future__ import annotations

import dataclasses
import sys

import chess
import chess.engine
import pytest

import zerolab.search.mcts
from contempt_search.experiment import CONTEMPT_RULES
from contempt_search.uci import ENGINE_NAME, SC_LIMIT_OFF, contempt_loader, contempt_options, contempt_search_changes
from zerolab.training import train
from experiments.configs import load_config


@pytest.fixture(scope="module")
def chess_network(tmp_path_factory):
    """An untrained 8×8 ResNet saved as a run (0 iterations: the initial network's checkpoint only)."""
    workdir = tmp_path_factory.mktemp("contempt-uci") / "run"
    config = load_config("quickstart", "tiny", ["game.name=chess", "model.name=resnet", "model.channels=8",
                                                 "model.num_blocks=1", "iterations=0", "progress=False"])
    train.run(config, workdir)
    return workdir


def play_game(engine, stockfish, max_game_plies=300):
    """Engine (white, 2 simulations a move) against Stockfish; every engine move must be a search of 2 simulations
    (``info ... nodes 2``), with no ``info string error`` (a failed search falls back to a move without searching)."""
    board = chess.Board()
    while not board.is_game_over(claim_draw=True) and board.ply() < max_game_plies:
        if board.turn == chess.WHITE:
            result = engine.play(board, chess.engine.Limit(nodes=2), info=chess.engine.INFO_ALL)
            assert not result.info.get("string", "").startswith("error"), (board.fen(), result.info)
            assert result.info.get("nodes") == 2, (board.fen(), result.info)
        else:
            result = stockfish.play(board, chess.engine.Limit(nodes=500))
        assert result.move in board.legal_moves, (board.fen(), result.move)
        board.push(result.move)
    return board


@pytest.mark.slow
def test_plays_whole_games_with_each_sc_limit(chess_network, stockfish_path):
    """Whole games against Stockfish with contempt's search (N_scl 5, as launched) and the plain one (ScLimit off, set
    through UCI); the spin's range is python-chess's to check."""
    command = [sys.executable, "-m", "contempt_search.uci", "--checkpoint", str(chess_network), "--simulations", "2",
               "--sc-limit", "5"]
    engine = chess.engine.SimpleEngine.popen_uci(command, timeout=300)
    stockfish = chess.engine.SimpleEngine.popen_uci(stockfish_path)
    try:
        assert {"ScLimit", "SearchKind", "Simulations"} <= set(engine.options)
        assert (engine.options["ScLimit"].min, engine.options["ScLimit"].max) == (1, SC_LIMIT_OFF)
        stockfish.configure({"Skill Level": 0})
        for sc_limit in (5, SC_LIMIT_OFF):
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
    assert contempt_search_changes("gumbel", SC_LIMIT_OFF) == {"kind": "gumbel", "selection": "mctx", "rules": "",
                                                               "rule_options": ()}
    assert contempt_search_changes("muzero", 5)["rule_options"] == {"sc_limit": 5}
    assert "selection" not in contempt_search_changes("muzero", 5)  # the loaded search's PUCT rule is kept
    assert contempt_search_changes("muzero", 5, "lc0")["selection"] == "lc0"
    from zerolab.search import SearchConfig

    lc0 = SearchConfig(kind="muzero", selection="lc0")  # a run searching with lc0's PUCT switches to Gumbel and back
    gumbel = dataclasses.replace(lc0, **contempt_search_changes("gumbel", 5))
    assert (gumbel.kind, gumbel.selection) == ("gumbel", "mctx")
    assert dataclasses.replace(gumbel, **contempt_search_changes("muzero", 5, "lc0")).selection == "lc0"
    with pytest.raises(ValueError, match="search kind"):
        contempt_search_changes("alphabeta", 5)


@pytest.mark.slow  # 23 s of CPU after the games above (51 s alone: four 8×8 searches)
def test_sc_limit_and_search_kind_change_the_search_the_engine_runs(chess_network, monkeypatch):
    """``setoption`` ScLimit / SearchKind through the UCI server re-set the engine's search (``set_search``): the
    searches compiled afterwards, and the moves played, use contempt's rules with that N_scl and that kind; ScLimit
    off is the plain search again.  Every ``go`` searches the nodes asked (no fallback, no error line).

    The engine is the command's (:func:`contempt_loader` on the module's run, 2 simulations), so the PUCT searches
    it compiles are those the games above compiled, read from the compilation cache."""
    import io

    from zerolab.frontends.uci_search import SearchEngine, SearchServer

    compiled = []  # (kind, rules, rule_options) of every search the engine builds (fresh or growing), in order
    run_search = zerolab.search.mcts.run_search

    def recording_run_search(config, *arguments, **keywords):
        compiled.append((config.kind, config.rules, dict(config.rule_options)))
        return run_search(config, *arguments, **keywords)

    grow_tree = zerolab.search.mcts.grow_tree

    def recording_grow_tree(config, *arguments, **keywords):  # a PUCT engine's moves grow its kept tree
        compiled.append((config.kind, config.rules, dict(config.rule_options)))
        return grow_tree(config, *arguments, **keywords)

    monkeypatch.setattr(zerolab.search.mcts, "run_search", recording_run_search)
    monkeypatch.setattr(zerolab.search.mcts, "grow_tree", recording_grow_tree)
    engine = SearchEngine(contempt_loader(chess_network, 2, "muzero", SC_LIMIT_OFF), 2)
    engine.warm_up(background_sizes=False)
    server = SearchServer(engine, ENGINE_NAME, 2, contempt_options("muzero", SC_LIMIT_OFF)(engine))
    output = io.StringIO()
    server._output = output  # what run() sets; handle() is then called line by line in this thread
    assert compiled == [("muzero", "", {})]

    def command(line, nodes=None):
        del compiled[:]
        output.seek(0), output.truncate()
        server.handle(line)
        if nodes is not None:
            server._search_thread.join(60)
        lines = output.getvalue().splitlines()
        assert not [text for text in lines if text.startswith("info string error")], lines
        if nodes is not None:
            assert any(f" nodes {nodes} " in text for text in lines if text.startswith("info ")), lines
            assert lines[-1].startswith("bestmove "), lines
        return compiled[:]

    assert command("setoption name ScLimit value 5") == [("muzero", CONTEMPT_RULES, {"sc_limit": 5})]
    assert engine.loaded.search.rules == CONTEMPT_RULES and engine.loaded.search.make_rules() is not None
    server.handle("position startpos moves e2e4")
    assert command("go nodes 2", nodes=2) == []  # played with the search the setoption compiled
    assert command("setoption name SearchKind value gumbel") == [("gumbel", CONTEMPT_RULES, {"sc_limit": 5})]
    assert command(f"setoption name ScLimit value {SC_LIMIT_OFF}") == [("gumbel", "", {})]
    assert engine.loaded.search.make_rules() is None  # the plain search
    assert command("go nodes 2", nodes=2) == []


def test_an_unusable_checkpoint_is_refused_at_launch_in_one_line(tmp_path, capsys):
    from contempt_search.uci import main

    assert main(["--checkpoint", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip() == f"error: --checkpoint {tmp_path / 'missing'}: no such run or checkpoint directory"
    (tmp_path / "run" / "checkpoints" / "0").mkdir(parents=True)
    (tmp_path / "run" / "config.json").write_text('{"game": {"name": "go"}}')
    assert main(["--checkpoint", str(tmp_path / "run")]) == 2
    assert "the run plays go; a UCI engine plays 8x8 chess" in capsys.readouterr().err
