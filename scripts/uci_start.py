"""Start-up and analysis of ``python -m zerolab uci`` through python-chess, as zerolab/README.md reports them.

Usage: ``python scripts/uci_start.py RUN CACHE_DIR [SECONDS]``.  A cold start (CACHE_DIR emptied first; a 300 s
time-out; the engine stays up SECONDS after its first move so that its background compilations fill the cache), then a
second start with python-chess's default time-outs throughout, whose first call is ``play(board, Limit(time=1))``,
then analysis on it: ``analysis(board)`` for six seconds after its first info, MultiPV 3, ``go depth 3``.
"""

import shutil
import sys
import time

import chess
import chess.engine


def main(run: str, cache: str, linger: float = 0.0) -> None:
    shutil.rmtree(cache, ignore_errors=True)
    command = [sys.executable, "-m", "zerolab", "uci", "--checkpoint", run, "--compilation-cache", cache]
    board = chess.Board()

    launched = time.perf_counter()
    engine = chess.engine.SimpleEngine.popen_uci(command, timeout=300)
    uciok = time.perf_counter() - launched
    engine.ping()
    ready = time.perf_counter() - launched
    engine.timeout = 10.0
    result = engine.play(board, chess.engine.Limit(time=1), info=chess.engine.INFO_ALL)
    print(f"cold: uciok {uciok:.2f} s, readyok {ready:.2f} s, first timed move {result.move} at "
          f"{time.perf_counter() - launched:.2f} s, {result.info.get('nodes')} nodes", flush=True)
    time.sleep(linger)
    engine.quit()

    launched = time.perf_counter()
    engine = chess.engine.SimpleEngine.popen_uci(command)  # python-chess's defaults: 10 s a command
    uciok = time.perf_counter() - launched
    called = time.perf_counter()
    result = engine.play(board, chess.engine.Limit(time=1), info=chess.engine.INFO_ALL)
    print(f"second start: uciok {uciok:.2f} s, first call play(Limit(time=1)) -> {result.move} in "
          f"{time.perf_counter() - called:.2f} s ({time.perf_counter() - launched:.2f} s from launch), "
          f"{result.info.get('nodes')} nodes", flush=True)
    infos, started = [], time.perf_counter()
    with engine.analysis(board) as analysis:
        for info in analysis:
            if "nodes" in info:
                infos.append((round(time.perf_counter() - started, 2), info.get("depth"), info["nodes"]))
            if infos and infos[-1][0] - infos[0][0] > 6:
                break
    print(f"analysis(board): {len(infos)} infos over {infos[-1][0]} s (seconds, depth, nodes): first {infos[0]}, "
          f"last {infos[-1]}", flush=True)
    lines = engine.analyse(board, chess.engine.Limit(time=2), multipv=3)
    print("MultiPV 3:", [(line["pv"][0].uci(), line["score"].relative.score(), line["nodes"]) for line in lines])
    deep = engine.analyse(board, chess.engine.Limit(depth=3))
    print(f"go depth 3: depth {deep['depth']}, seldepth {deep['seldepth']}, nodes {deep['nodes']}")
    engine.quit()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 0.0)
