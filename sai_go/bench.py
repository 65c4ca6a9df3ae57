"""``python -m sai_go.bench``: the cost of SAI's λ search against stock mctx on the same network.

One batch of 7×7 positions (random legal plies from the empty board) is searched with PUCT, the same SAI network
(random weights), key, batch and simulations, four ways:

* ``core_mctx``: stock mctx — the core's ``run_search(..., mctx_loop=True)``: ``mctx.muzero_policy`` with mctx's own
  simulation loop and backup, pgx states as nodes, the network's plain value (komi 0);
* ``sai_mctx``: SAI's nodes (α, β, komi per node, value ``2ρ(0) − 1``) in mctx's own loop and backup
  (``sai_search(..., mctx_loop=True)``);
* ``sai_lambda_0`` / ``sai_lambda_half``: SAI's search as it is used (the project's loop, the λ backup) at λ = 0
  and λ = 0.5.

Each is compiled first (one call), then all are timed in interleaved rounds, the best of ``--repeats`` each.  One
JSON line: seconds per search and ``ratio`` = ``sai_lambda_half / core_mctx`` (the issue's bar: ≤ 1.15), with
``ratio_vs_sai_mctx`` = ``sai_lambda_half / sai_mctx``.  A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from zerolab import SearchConfig, init_variables, interleaved_best_times, make_game, run_search
from sai_go.network import make_sai_network
from sai_go.search import sai_search


def random_positions(game, batch_size: int, plies: int, seed: int = 0):
    """``batch_size`` positions after ``plies`` random legal non-pass moves (fewer where none is left)."""
    states = game.batched_init(jax.random.split(jax.random.key(seed), batch_size))
    step = game.batched_step
    rng = np.random.default_rng(seed)
    for _ in range(plies):
        legal = np.asarray(states.legal_action_mask)[:, :-1]
        states = step(states, jnp.asarray([rng.choice(np.flatnonzero(row)) if row.any() else game.pass_action
                                           for row in legal], jnp.int32))
    return states


def bench(batch_size: int, simulations: int, channels: int, num_blocks: int, repeats: int, komi: float = 9.5) -> dict:
    game = make_game("go", go_size=7, komi=komi)
    network = make_sai_network(ml_collections.ConfigDict({"channels": channels, "num_blocks": num_blocks}), game)
    variables = init_variables(network, game, jax.random.key(0))
    states = random_positions(game, batch_size, plies=10)
    komi_per_game = jnp.full(batch_size, komi)
    config = SearchConfig(kind="muzero", num_simulations=simulations, dirichlet_alpha=0.03 * 361 / 49)
    key = jax.random.key(1)
    searches = {
        "core_mctx": jax.jit(lambda v, k, s: run_search(config, game, network, v, k, s, mctx_loop=True).visit_counts),
        "sai_mctx": jax.jit(lambda v, k, s: sai_search(config, game, network, v, k, s, komi_per_game,
                                                       mctx_loop=True).visit_counts),
        "sai_lambda_0": jax.jit(lambda v, k, s: sai_search(config, game, network, v, k, s, komi_per_game,
                                                           0.0).visit_counts),
        "sai_lambda_half": jax.jit(lambda v, k, s: sai_search(config, game, network, v, k, s, komi_per_game,
                                                              0.5).visit_counts),
    }
    compile_seconds = {}
    for name, search in searches.items():
        started = time.perf_counter()
        jax.block_until_ready(search(variables, key, states))
        compile_seconds[name] = time.perf_counter() - started
    seconds = interleaved_best_times({name: functools.partial(search, variables, key, states)
                                      for name, search in searches.items()}, repeats)
    return {"batch_size": batch_size, "simulations": simulations, "channels": channels, "num_blocks": num_blocks,
            "repeats": repeats, "device": jax.devices()[0].device_kind, "first_call_seconds": compile_seconds,
            "seconds": seconds, "ratio": seconds["sai_lambda_half"] / seconds["core_mctx"],
            "ratio_vs_sai_mctx": seconds["sai_lambda_half"] / seconds["sai_mctx"]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sai_go.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--simulations", type=int, default=64)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--num-blocks", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(json.dumps(bench(args.batch_size, args.simulations, args.channels, args.num_blocks, args.repeats)))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
