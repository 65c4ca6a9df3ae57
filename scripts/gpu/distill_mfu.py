"""Throughput and model-FLOP utilisation of the searchless-chess transformer's training step on one accelerator.

For each dtype: the step of ``distill.train`` (the run's own jitted step, state replicated, batch sharded over a
one-device mesh) compiled at ``--batch-size`` on random token sequences, XLA's FLOPs for one step, then ``--steps``
timed steps after two warm-up steps.  One JSON line per case: samples/s, the model's FLOPs a step and the rate
achieved and, with ``--peak-tflops``, the model-FLOP utilisation against that peak.  The model's FLOPs are PaLM's
count (6 × parameters per token, plus 12 × layers × width × sequence length per token for attention's scores and
mixing): XLA's cost analysis on a GPU leaves out the matrix products it hands to cuBLAS (it reported 190 GFLOP for a
4,400 GFLOP step on an H200), so its figure is printed beside, not used.  Run in the repository root
(``source scripts/gpu/setup.sh`` on a device machine).

    python scripts/gpu/distill_mfu.py --model-size 9M --batch-size 1024 --dtype float32 bfloat16 --peak-tflops 790
"""
import argparse
import json
import time

import jax
import jax.numpy as jnp

from distill import train as distill_train
from zerolab import make_mesh


def measure(model_size: str, dtype: str, batch_size: int, steps: int, peak_tflops: float | None) -> dict:
    settings = distill_train.TrainingSettings(model_size=model_size, dtype=dtype, batch_size=batch_size)
    model_config = settings.model_config()
    mesh = make_mesh(jax.devices()[:1])
    step = distill_train.make_train_step(settings, mesh)
    state = distill_train.init_train_state(model_config, distill_train.make_optimizer(settings), jax.random.key(0))
    token_key, target_key = jax.random.split(jax.random.key(1))
    batch = {"tokens": jax.random.randint(token_key, (batch_size, model_config.sequence_length), 0,
                                          model_config.vocabulary_size, jnp.int32),
             "targets": jax.random.randint(target_key, (batch_size,), 0, model_config.output_size, jnp.int32)}
    start = time.perf_counter()
    compiled = step.lower(state, batch).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    flops = float(cost.get("flops", 0.0))
    for _ in range(2):
        state, metrics = step(state, batch)
    jax.block_until_ready(metrics)
    first_s = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(steps):
        state, metrics = step(state, batch)
    jax.block_until_ready(metrics)
    seconds = (time.perf_counter() - start) / steps
    parameters = sum(leaf.size for leaf in jax.tree.leaves(state.params))
    tokens = batch_size * model_config.sequence_length
    model_flops = tokens * (6 * parameters + 12 * model_config.num_layers * model_config.embedding_dim
                            * model_config.sequence_length)
    result = {"case": "distill_train_step", "model_size": model_size, "dtype": dtype, "batch_size": batch_size,
              "parameters": int(parameters), "sequence_length": model_config.sequence_length,
              "model_gflop": round(model_flops / 1e9, 1), "xla_gflop": round(flops / 1e9, 1),
              "step_ms": round(seconds * 1e3, 2), "samples_per_s": round(batch_size / seconds, 1),
              "model_tflops_per_s": round(model_flops / seconds / 1e12, 2),
              "compile_and_two_steps_s": round(first_s, 1), "loss": float(metrics["loss"]),
              "device": jax.devices()[0].device_kind}
    if peak_tflops:
        result["model_flop_utilisation"] = round(model_flops / seconds / 1e12 / peak_tflops, 3)
        result["peak_tflops"] = peak_tflops
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-size", default="9M")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--dtype", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the device's dense matrix peak to divide by (e.g. 790, measured bf16 on an H200 here)")
    arguments = parser.parse_args()
    for dtype in arguments.dtype:
        print(json.dumps(measure(arguments.model_size, dtype, arguments.batch_size, arguments.steps,
                                 arguments.peak_tflops)), flush=True)


if __name__ == "__main__":
    main()
