"""``model.dtype=bfloat16`` against float32: the same network, the same variables, positions it never saw.

Every network computes in ``model.dtype`` with float32 parameters and float32 outputs (zerolab.networks.network,
"Mixed precision").  bfloat16 keeps 8 bits of mantissa (relative rounding 2⁻⁹ ≈ 0.2 % a value), so outputs move by a
fraction of a percent of their spread.  Each case trains the network in float32 for a few Adam steps on fixed
positions, toward a policy it can learn and carry to new positions (one-hot on the legal move a fixed random ranking
of the action ids prefers), so its choices are decided as a trained network's are — a freshly initialised network's
top two logits are often closer than bfloat16's rounding (median gap 0.036 for AlphaGateau on 8×8, against a median
bfloat16 error of 0.011), a coin flip for float32 too.  Then, on held-out positions:

* the most likely legal move in bfloat16 is float32's on ≥ 95 % of the HELD_OUT positions (≥ 93 % for AlphaGateau on
  8×8), and wherever it is another, that move is a near tie for float32: its float32 probability within 0.01 of the
  best move's.  Seen on 64 positions: 100 % for the ResNet on both boards, AlphaGateau on 5×5 and SAI; 93.8–96.9 %
  for AlphaGateau on 8×8 (after a short training that leaves its 8×8 policy the least decided of these; 94.9 % on
  256 positions); 98.4 % for maia-1900.  The ≥ 99 % that issue 44 asked for
  holds for the first four, not for these two: bfloat16 flips near ties;
* the value differs by at most 0.03 (values in [-1, 1]); SAI's α and β by 0.03 of their size;
* where ``track``: the same training run in bfloat16 from the same initialisation keeps its loss within 10 % of
  float32's at every step (seen: at most 7.7 %, SAI's, whose value is σ(βα) through an exponential), and both fall
  by 15 % or more (float32's fell 24–98 % in these 20 steps).

maia-1900 (trained weights, lc0 format) is checked on positions reached by play in tests/zerolab/lc0/test_oracle.py.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest

from tests.fast_compile import run_jit
from zerolab.networks.network import NetworkInputs, apply_network, init_variables, make_network

POSITIONS = 64  # the training batch
HELD_OUT = 256  # the positions judged: one choice in 256 moves the agreement by 0.4 % (in 64, by 1.6 %)
VALUE_TOLERANCE = 0.03
LOSS_TOLERANCE = 0.1
TRAINING_STEPS = 20

NETWORKS = {
    "resnet": {"name": "resnet", "channels": 8, "num_blocks": 2},
    "alphagateau": {"name": "alphagateau.network:make_alphagateau", "channels": 8, "num_blocks": 2,
                    "block": "pre_activation", "heads": "paper", "pooling": "paper"},
    "sai": {"name": "sai_go.network:make_sai_network", "channels": 8, "num_blocks": 2},
}


@functools.cache
def _game(name: str):
    from zerolab.games import make_game

    return make_game(name)


@functools.cache
def _positions(game, seed: int, count: int) -> NetworkInputs:
    """``count`` positions after 6–40 uniformly random plies (each from its own game), none of them terminal: a game
    stops at its own ply count, or before the ply that would end it.  Stepped by one compiled ply (the game's batched
    step and the stop), and kept for the cases that share the game."""

    @run_jit  # one ply of every game, 40 times: optimised code pays for its compile
    def ply(states, noise, stop):
        actions = jnp.argmax(jnp.where(states.legal_action_mask, noise, -jnp.inf), axis=-1).astype(jnp.int32)
        stepped = game.batched_step(states, actions)
        keep = stepped.terminated | stepped.truncated | stop  # stop before a game's end
        return jax.tree.map(lambda old, new: jnp.where(keep.reshape((-1,) + (1,) * (new.ndim - 1)), old, new),
                            states, stepped)

    states = game.batched_init(jax.random.split(jax.random.key(seed), count))
    rng = np.random.default_rng(seed)
    plies = rng.integers(6, 41, count)
    for index in range(int(plies.max())):
        states = ply(states, rng.gumbel(size=states.legal_action_mask.shape), index >= plies)
    return NetworkInputs.from_states(states)


def _model(network_name: str, dtype: str) -> ml_collections.ConfigDict:
    return ml_collections.ConfigDict({**NETWORKS[network_name], "dtype": dtype})


def _targets(inputs: NetworkInputs, seed: int):
    """A policy target that a network can learn and apply to new positions — one-hot on the legal move that a fixed
    random ranking of the action ids prefers — and random game outcomes as value targets."""
    rng = np.random.default_rng(seed)
    mask = np.asarray(inputs.legal_action_mask)
    ranking = rng.permutation(mask.shape[-1])
    policy = np.eye(mask.shape[-1], dtype=np.float32)[np.argmax(np.where(mask, ranking, -1), axis=-1)]
    return jnp.asarray(policy), jnp.asarray(rng.choice([-1.0, 0.0, 1.0], mask.shape[0]), jnp.float32)


def _training_run(network, variables, inputs, targets, steps: int = TRAINING_STEPS):
    """(final params, losses [steps]) of Adam on the AlphaZero loss over one fixed batch, from ``variables``."""
    optimizer = optax.adam(3e-3)
    mask = inputs.legal_action_mask
    target_policy, target_value = targets

    def loss_fn(params, batch_stats):
        output, new_stats = apply_network(network, {"params": params, "batch_stats": batch_stats}, inputs, train=True)
        logits = jnp.where(mask, output.policy_logits, -1e9)
        loss = optax.softmax_cross_entropy(logits, target_policy).mean() + jnp.mean((output.value - target_value) ** 2)
        return loss, new_stats

    def step(carry, _):
        params, batch_stats, state = carry
        (loss, batch_stats), gradients = jax.value_and_grad(loss_fn, has_aux=True)(params, batch_stats)
        updates, state = optimizer.update(gradients, state, params)
        return (optax.apply_updates(params, updates), batch_stats, state), loss

    carry = (variables["params"], variables["batch_stats"], optimizer.init(variables["params"]))
    (params, batch_stats, _), losses = jax.lax.scan(step, carry, None, length=steps)
    return {"params": params, "batch_stats": batch_stats}, losses


# The ResNet on Gardner chess only: its convolutions do not change with the board (100 % agreement was seen on 8×8
# too); AlphaGateau on both boards, whose graphs differ (and on 8×8 its policy is the least decided).
@pytest.mark.parametrize("network_name, game_name, track", [
    ("resnet", "gardner_chess", True), ("alphagateau", "gardner_chess", True), ("alphagateau", "chess", False),
    ("sai", "go", True),
])
def test_bfloat16_trains_and_chooses_as_float32_does(network_name, game_name, track):
    """``track``: also train in bfloat16 and compare the losses (on one board per network, for the suite's time)."""
    game = _game(game_name)
    networks = {dtype: make_network(_model(network_name, dtype), game) for dtype in ("float32", "bfloat16")}
    assert networks["bfloat16"].dtype == jnp.bfloat16 and networks["float32"].dtype == jnp.float32
    initial = init_variables(networks["float32"], game, jax.random.key(3))
    positions = _positions(game, seed=7, count=POSITIONS + HELD_OUT)  # one program a game: training, then held out
    training, held_out = (jax.tree.map(lambda leaf, part=part: leaf[part], positions)
                          for part in (slice(POSITIONS), slice(POSITIONS, None)))
    targets = _targets(training, seed=0)

    @run_jit  # 20 Adam steps and 256 held-out positions in two dtypes: optimised code pays for its compile
    def run(initial, training, held_out):
        runs = {dtype: _training_run(network, initial, training, targets) for dtype, network in networks.items()
                if track or dtype == "float32"}
        trained = runs["float32"][0]  # both dtypes judge the float32-trained network on the held-out positions
        outputs = {dtype: apply_network(network, trained, held_out)[0] for dtype, network in networks.items()}
        return {dtype: losses for dtype, (_, losses) in runs.items()}, outputs

    losses, outputs = jax.device_get(run(initial, training, held_out))
    # the training runs: bfloat16's losses track float32's at every step, and both fall
    if track:
        relative = np.abs(losses["bfloat16"] - losses["float32"]) / losses["float32"]
        assert relative.max() <= LOSS_TOLERANCE, (losses, relative)
    for dtype_losses in losses.values():
        assert dtype_losses[-1] < 0.85 * dtype_losses[0], losses
    # held-out positions: the same choices, values within the bound, float32 outputs
    assert all(output.policy_logits.dtype == np.float32 and output.value.dtype == np.float32
               for output in outputs.values())
    mask = np.asarray(held_out.legal_action_mask)
    best = {dtype: np.argmax(np.where(mask, output.policy_logits, -np.inf), axis=-1)
            for dtype, output in outputs.items()}
    agreement = np.mean(best["bfloat16"] == best["float32"])
    assert agreement >= (0.93 if (network_name, game_name) == ("alphagateau", "chess") else 0.95), agreement
    probabilities = np.asarray(jax.nn.softmax(np.where(mask, outputs["float32"].policy_logits, -np.inf), axis=-1))
    rows = np.arange(mask.shape[0])
    assert np.all(probabilities[rows, best["bfloat16"]] >= probabilities[rows, best["float32"]] - 0.01)
    value_difference = np.abs(outputs["bfloat16"].value - outputs["float32"].value).max()
    assert 0 < value_difference <= VALUE_TOLERANCE, value_difference  # > 0: bfloat16 really computed in bfloat16
    for name, extra in outputs["float32"].extras.items():  # SAI's α and β: the same bound, relative to their size
        scale = max(1.0, float(np.abs(extra).max()))
        assert np.abs(outputs["bfloat16"].extras[name] - extra).max() <= VALUE_TOLERANCE * scale, name
