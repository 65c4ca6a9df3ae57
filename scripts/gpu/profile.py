"""Where the time goes: a ``jax.profiler`` trace of one self-play scan and of training steps, summarised by kernel.

``python scripts/gpu/profile.py --out DIR [--model NAME] [--width W] [--blocks N] [--games B] [--plies T]
[--simulations S] [--batch-size N]`` compiles each program, traces one more run into ``DIR/trace-<name>/`` (a
TensorBoard profile with a Perfetto trace; never commit traces) and prints, per program, the device's busy share of
the traced wall-clock and the kernels that took the most device time, their numeric suffixes dropped
(``loop_gather_fusion.12`` and ``.13`` count together), as JSON lines.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import pathlib
import re
import time

import jax

from zerolab.frontends import BenchCase, selfplay_program, training_program


def read_perfetto_trace(trace_dir: pathlib.Path) -> dict:
    paths = sorted(trace_dir.rglob("*.trace.json.gz")) or sorted(trace_dir.rglob("perfetto_trace.json.gz"))
    if not paths:
        raise FileNotFoundError(f"no Perfetto trace under {trace_dir}")
    with gzip.open(paths[-1], "rt") as stream:
        return json.load(stream)


def device_kernel_times(trace: dict) -> tuple[collections.Counter, float, float]:
    """``(microseconds per kernel family, device-busy microseconds, traced span)`` over the GPU/TPU processes."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    device_pids = {
        event["pid"] for event in events
        if event.get("ph") == "M" and event.get("name") == "process_name"
        and re.search(r"/device:(GPU|TPU)", str(event.get("args", {}).get("name", "")))
    }
    totals: collections.Counter = collections.Counter()
    starts, ends = [], []
    for event in events:
        if event.get("ph") != "X" or event.get("pid") not in device_pids:
            continue
        name = re.sub(r"[._]\d+$", "", str(event.get("name", "?")))
        totals[name] += float(event.get("dur", 0.0))
        starts.append(float(event["ts"]))
        ends.append(float(event["ts"]) + float(event.get("dur", 0.0)))
    span = (max(ends) - min(starts)) if starts else 0.0
    return totals, sum(totals.values()), span


def profile(name: str, run, out: pathlib.Path, top: int) -> dict:
    jax.block_until_ready(run())  # compile
    trace_dir = out / f"trace-{name}"
    started = time.perf_counter()
    with jax.profiler.trace(str(trace_dir), create_perfetto_trace=True):
        jax.block_until_ready(run())
    wall_us = (time.perf_counter() - started) * 1e6
    totals, busy, span = device_kernel_times(read_perfetto_trace(trace_dir))
    return {
        "program": name,
        "backend": jax.default_backend(),
        "device": jax.devices()[0].device_kind,
        "wall_s": wall_us / 1e6,
        "device_busy_s": busy / 1e6,
        "device_span_s": span / 1e6,
        "top_kernels": [
            {"kernel": kernel, "share_of_busy": microseconds / busy, "seconds": microseconds / 1e6}
            for kernel, microseconds in totals.most_common(top)
        ] if busy else [],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=pathlib.Path)
    parser.add_argument("--game", default="chess", choices=["chess", "gardner_chess"])
    parser.add_argument("--model", default="alphagateau.network:make_alphagateau")
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--games", type=int, default=256)
    parser.add_argument("--plies", type=int, default=2)
    parser.add_argument("--simulations", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--only", nargs="+", choices=["selfplay", "train"], default=["selfplay", "train"])
    args = parser.parse_args()
    case = BenchCase(game=args.game, model=args.model, channels=args.width, num_blocks=args.blocks,
                     num_games=args.games, plies=args.plies, num_simulations=args.simulations,
                     train_batch_size=args.batch_size)
    programs = {"selfplay": lambda: selfplay_program(case).run, "train": lambda: training_program(case, updates=2)}
    for name in args.only:
        print(json.dumps({"case": vars(args) | {"out": str(args.out)}, **profile(name, programs[name](), args.out,
                                                                                  args.top)}), flush=True)


if __name__ == "__main__":
    main()
