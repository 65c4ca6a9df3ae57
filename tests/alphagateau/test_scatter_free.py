"""The scatter-free AlphaGateau against the jraph one it replaced: same outputs, statistics and gradients; no scatter.

One set of variables runs both (tests/alphagateau/jraph_reference.py keeps b4fed2c's modules, parameter names
unchanged).  Each case compiles one program per implementation that returns the inference outputs, the training
outputs with the new BatchNorm statistics, and the gradient of a loss through the training pass, so equality and the
scatter count read the same compiled code.

Tolerance: both compute in float32 and differ only in the order of their sums (a segment sum over a node's 14–35
incoming edges against a reduction along the slot axis, BatchNorm moments over the edges in slot order).  Evaluated
against the jraph network in float64 (random 8×8 positions, these sizes and perturbations), each float32
implementation is off by the same amount: 1.9e-6 (new) and 1.8e-6 (jraph) on inference logits, 5.8e-6 and 5.3e-6
in training mode, where BatchNorm's batch moments (E[x²] − E[x]² over a few thousand edges) amplify rounding, and
relative 1.5e-4 and 1.2e-4 on gradients.  So: relative 1e-4 with an absolute floor of 1e-5 on inference outputs and
1e-4 on training outputs and gradients.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest

from alphagateau.network import PAPER_ARCHITECTURE
from tests.alphagateau import jraph_reference
from zerolab.networks.network import init_variables, make_network

SIZE = {"name": "alphagateau.network:make_alphagateau", "channels": 8, "num_blocks": 2}


def _perturbed(variables):
    """Non-trivial BatchNorm statistics and biases, so every term of every layer shows in the outputs."""
    keys = iter(jax.random.split(jax.random.key(11), 1000))
    params = jax.tree.map(lambda x: x + 0.2 * jax.random.normal(next(keys), x.shape), variables["params"])
    statistics = jax.tree.map(lambda x: x + 0.5 * jnp.abs(jax.random.normal(next(keys), x.shape)),
                              variables["batch_stats"])
    return {"params": params, "batch_stats": statistics}


def _program(network, inputs):
    """jit(variables) -> (inference output, training output, new batch statistics, gradient of a loss)."""
    mask = inputs.legal_action_mask
    target = mask / mask.sum(-1, keepdims=True)

    def loss(params, batch_stats):
        output, updates = network.apply({"params": params, "batch_stats": batch_stats}, inputs, train=True,
                                        mutable=["batch_stats"])
        logits = jnp.where(mask, output.policy_logits, -1e9)
        value = jnp.mean((output.value - jnp.linspace(-1, 1, mask.shape[0])) ** 2)
        return optax.softmax_cross_entropy(logits, target).mean() + value, (output, updates["batch_stats"])

    def run(variables):
        inference = network.apply(variables, inputs, train=False)
        (_, (training, statistics)), gradient = jax.value_and_grad(loss, has_aux=True)(
            variables["params"], variables["batch_stats"])
        return inference, training, statistics, gradient

    return jax.jit(run)


def _scatters(lowered) -> tuple[int, int]:
    """Scatter ops in the program JAX hands to XLA (StableHLO) and in the HLO XLA compiled from it."""
    return lowered.as_text().count("stablehlo.scatter"), lowered.compile().as_text().count(" scatter(")


@pytest.mark.parametrize("game_name, architecture", [
    ("gardner_chess", PAPER_ARCHITECTURE),
    ("chess", PAPER_ARCHITECTURE),
    ("gardner_chess", {}),  # the architecture of the checkpoints written before the paper's (post-activation, linear)
])
def test_the_scatter_free_network_equals_the_jraph_one_with_no_scatter(game_name, architecture, network_inputs,
                                                                       gardner_game, chess_game):
    game = {"gardner_chess": gardner_game, "chess": chess_game}[game_name]
    inputs = network_inputs[game_name]
    network = make_network(ml_collections.ConfigDict({**SIZE, **architecture}), game)
    reference = jraph_reference.AlphaGateau(**{field: getattr(network, field) for field in (
        "channels", "num_blocks", "negative_slope", "batch_norm_momentum", "block", "heads", "pooling")})
    variables = _perturbed(init_variables(network, game, jax.random.key(0)))

    lowered = {name: _program(module, inputs).lower(variables) for name, module in (("scatter_free", network),
                                                                                    ("jraph", reference))}
    assert _scatters(lowered["scatter_free"]) == (0, 0)
    assert _scatters(lowered["jraph"])[0] > 0  # the count sees the segment sums the reference is made of
    compiled = {name: program.compile() for name, program in lowered.items()}

    got, expected = (jax.device_get(compiled[name](variables)) for name in ("scatter_free", "jraph"))
    for name, got_output, expected_output, floor in zip(("inference", "training"), got[:2], expected[:2], (1e-5, 1e-4)):
        np.testing.assert_allclose(got_output.policy_logits, expected_output.policy_logits, rtol=1e-4, atol=floor,
                                   err_msg=f"{name} policy")
        np.testing.assert_allclose(got_output.value, expected_output.value, rtol=1e-4, atol=floor,
                                   err_msg=f"{name} value")
    paths = jax.tree_util.tree_leaves_with_path
    assert [path for path, _ in paths(got[2])] == [path for path, _ in paths(expected[2])]
    for (path, got_leaf), expected_leaf in zip(paths(got[2:]), jax.tree.leaves(expected[2:])):
        np.testing.assert_allclose(got_leaf, expected_leaf, rtol=1e-4, atol=1e-4, err_msg=jax.tree_util.keystr(path))
    assert max(float(np.abs(leaf).max()) for leaf in jax.tree.leaves(got[3])) > 1e-2  # gradients that say something
