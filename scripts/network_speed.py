"""Time networks against each other in one process: an evaluation (inference forward pass) and a training step.

    python scripts/network_speed.py --game chess --width 128 --blocks 5 --batch 64
    python scripts/network_speed.py --game gardner_chess --width 32 --blocks 2 --batch 256 --dtype bfloat16

For each network (the AlphaZero ResNet and AlphaGateau with the paper's architecture, same width and blocks) it
times, on positions 20 random plies deep:

* ``evaluation``: the jitted ``apply_network`` in inference mode on a batch;
* ``training``: one jitted update — the AlphaZero loss (policy cross-entropy over the legal moves + value squared
  error) through the network in training mode, its gradient and an Adam step — on a batch.

The networks are timed in rounds, each round timing every network once (``zerolab.interleaved_best_times``), so a
busy spell on a shared machine slows them alike; each figure is the best round.  One JSON line per network, then
one with AlphaGateau's times over the ResNet's.  ``--dtype`` is ``model.dtype`` (left out of the config when
float32, so the script also runs on trees older than the key).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys

import jax
import jax.numpy as jnp
import ml_collections
import optax

from zerolab import NetworkInputs, init_variables, interleaved_best_times, make_game, make_network
from zerolab.networks import apply_network

ALPHAGATEAU = {"name": "alphagateau.network:make_alphagateau", "block": "pre_activation", "heads": "paper",
               "pooling": "paper"}


def random_positions(game, batch_size: int, plies: int, seed: int = 0) -> NetworkInputs:
    """Positions after ``plies`` uniformly random legal moves (a game that ends keeps its final state)."""

    def ply(states, key):
        logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
        actions = jax.vmap(jax.random.categorical)(jax.random.split(key, batch_size), logits)
        stepped = jax.vmap(game.step)(states, actions)
        done = states.terminated | states.truncated
        return jax.tree.map(lambda old, new: jnp.where(done.reshape((-1,) + (1,) * (new.ndim - 1)), old, new),
                            states, stepped), None

    @jax.jit
    def play(key):
        init_key, play_key = jax.random.split(key)
        states = jax.vmap(game.init)(jax.random.split(init_key, batch_size))
        states, _ = jax.lax.scan(ply, states, jax.random.split(play_key, plies))
        return NetworkInputs.from_states(states)

    return play(jax.random.key(seed))


def network_programs(network, variables, inputs):
    """(evaluate, train) zero-argument callables that run one jitted evaluation and one jitted update."""
    optimizer = optax.adam(1e-3)
    mask = inputs.legal_action_mask
    target_policy = mask / jnp.maximum(mask.sum(-1, keepdims=True), 1)
    target_value = jnp.linspace(-1.0, 1.0, mask.shape[0])

    evaluate = jax.jit(functools.partial(apply_network, network))

    def loss(params, batch_stats):
        output, new_stats = apply_network(network, {"params": params, "batch_stats": batch_stats}, inputs, train=True)
        logits = jnp.where(mask, output.policy_logits, -1e9)
        policy_loss = optax.softmax_cross_entropy(logits, target_policy).mean()
        return policy_loss + jnp.mean((output.value - target_value) ** 2), new_stats

    @jax.jit
    def update(params, batch_stats, optimizer_state):
        (value, batch_stats), gradients = jax.value_and_grad(loss, has_aux=True)(params, batch_stats)
        updates, optimizer_state = optimizer.update(gradients, optimizer_state, params)
        return optax.apply_updates(params, updates), batch_stats, optimizer_state, value

    params, batch_stats = variables["params"], variables["batch_stats"]
    optimizer_state = optimizer.init(params)
    return (lambda: jax.block_until_ready(evaluate(variables, inputs)),
            lambda: jax.block_until_ready(update(params, batch_stats, optimizer_state)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="chess", choices=("chess", "gardner_chess"))
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)

    game = make_game(args.game)
    inputs = random_positions(game, args.batch, plies=20)
    dtype = {} if args.dtype == "float32" else {"dtype": args.dtype}
    models = {
        "resnet": {"name": "resnet", "channels": args.width, "num_blocks": args.blocks, **dtype},
        "alphagateau": {**ALPHAGATEAU, "channels": args.width, "num_blocks": args.blocks, **dtype},
    }
    functions = {}
    for name, model in models.items():
        network = make_network(ml_collections.ConfigDict(model), game)
        variables = init_variables(network, game, jax.random.key(0))
        evaluate, train = network_programs(network, variables, inputs)
        evaluate(), train()  # compile
        functions[f"{name}/evaluation"], functions[f"{name}/training"] = evaluate, train
    seconds = interleaved_best_times(functions, args.repeats)
    setting = {"game": args.game, "width": args.width, "blocks": args.blocks, "batch": args.batch, "dtype": args.dtype,
               "device": jax.devices()[0].device_kind, "repeats": args.repeats}
    for name in models:
        print(json.dumps({**setting, "network": name,
                          **{f"{what}_ms": round(1000 * seconds[f"{name}/{what}"], 3) for what in ("evaluation", "training")},
                          **{f"{what}_us_per_sample": round(1e6 * seconds[f"{name}/{what}"] / args.batch, 2)
                             for what in ("evaluation", "training")}}))
    print(json.dumps({**setting, "alphagateau_over_resnet": {
        what: round(seconds[f"alphagateau/{what}"] / seconds[f"resnet/{what}"], 2) for what in ("evaluation", "training")}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
