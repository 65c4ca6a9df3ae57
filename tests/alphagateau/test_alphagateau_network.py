"""GATEAU against a literal reading of equations 4–7, and the AlphaGateau network as a zerolab network."""

from __future__ import annotations

import functools
import types

import jax
import jax.numpy as jnp
import jraph
import ml_collections
import numpy as np
import optax
import pytest

from alphagateau.graph import NON_EDGE_LOGIT, board_graph
from alphagateau.layers import GATEAU, AttentionPooling
from alphagateau.network import make_alphagateau, parameter_counts
from zerolab.networks import apply_network, init_variables, make_network

TINY_MODEL = {"name": "alphagateau.network:make_alphagateau", "embedding_size": 8, "num_blocks": 2}


def _leaky_relu(x, negative_slope=0.2):
    return np.where(x > 0, x, negative_slope * x)


def test_gateau_follows_equations_4_to_6():
    """A loop over edges and nodes, written from the equations, on a graph whose edges are not symmetric."""
    rng = np.random.default_rng(0)
    senders = np.array([0, 2, 1, 0, 3, 3])  # j
    receivers = np.array([1, 1, 0, 2, 1, 0])  # i
    nodes = rng.normal(size=(4, 3)).astype(np.float32)
    edges = rng.normal(size=(6, 2)).astype(np.float32)
    graphs = jraph.GraphsTuple(
        nodes=jnp.asarray(nodes), edges=jnp.asarray(edges), senders=jnp.asarray(senders),
        receivers=jnp.asarray(receivers), n_node=jnp.array([4]), n_edge=jnp.array([6]), globals=None,
    )
    layer = GATEAU(features=5)
    params = layer.init(jax.random.key(0), graphs)["params"]
    params = jax.tree.map(lambda x: x + 0.1 * jax.random.normal(jax.random.key(1), x.shape), params)  # nonzero biases
    out = layer.apply({"params": params}, graphs)
    p = jax.tree.map(np.asarray, params)
    W_u, W_v = p["receiver_to_edge"]["kernel"], p["sender_to_edge"]["kernel"]
    W_e, b_e = p["edge_to_edge"]["kernel"], p["edge_to_edge"]["bias"]
    a = p["attention"]["kernel"][:, 0]
    W_0, b_0 = p["self_to_node"]["kernel"], p["self_to_node"]["bias"]
    W_h, W_g = p["sender_message"]["kernel"], p["edge_message"]["kernel"]

    new_edges = np.zeros((6, 5))
    for edge, (j, i) in enumerate(zip(senders, receivers)):
        new_edges[edge] = nodes[i] @ W_u + edges[edge] @ W_e + b_e + nodes[j] @ W_v  # (4)
    new_nodes = np.zeros((4, 5))
    for i in range(4):
        new_nodes[i] = nodes[i] @ W_0 + b_0  # (6); node 3 has no incoming edge: no sum
        incoming = np.flatnonzero(receivers == i)
        if not incoming.size:
            continue
        scores = np.array([_leaky_relu(a @ new_edges[edge]) for edge in incoming])
        attention = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()  # (5)
        for weight, edge in zip(attention, incoming):
            new_nodes[i] += weight * (nodes[senders[edge]] @ W_h + new_edges[edge] @ W_g)
    np.testing.assert_allclose(out.edges, new_edges, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.nodes, new_nodes, rtol=1e-5, atol=1e-5)


def test_attention_pooling_follows_equation_7():
    rng = np.random.default_rng(1)
    nodes = rng.normal(size=(5, 3)).astype(np.float32)
    graphs = jraph.GraphsTuple(
        nodes=jnp.asarray(nodes), edges=None, senders=jnp.zeros(0, jnp.int32), receivers=jnp.zeros(0, jnp.int32),
        n_node=jnp.array([2, 3]), n_edge=jnp.array([0, 0]), globals=None,
    )
    pooling = AttentionPooling(features=4)
    params = pooling.init(jax.random.key(0), graphs)["params"]
    pooled = np.asarray(pooling.apply({"params": params}, graphs))
    a = np.asarray(params["attention"]["kernel"])[:, 0]
    W, b = np.asarray(params["value"]["kernel"]), np.asarray(params["value"]["bias"])
    for graph, members in enumerate((slice(0, 2), slice(2, 5))):
        scores = nodes[members] @ a
        weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
        np.testing.assert_allclose(pooled[graph], weights @ (nodes[members] @ W + b), rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="session")
def tiny_network(gardner_game):
    return make_network(ml_collections.ConfigDict(TINY_MODEL), gardner_game)


@pytest.fixture(scope="session")
def gardner_variables(tiny_network, gardner_game):
    return init_variables(tiny_network, gardner_game, jax.random.key(0))


@pytest.fixture(scope="session")
def forward(tiny_network):
    return jax.jit(functools.partial(apply_network, tiny_network), static_argnames="train")


def test_factory_reads_the_model_config(gardner_game):
    config = ml_collections.ConfigDict({"name": "x", "embedding_size": 16, "num_blocks": 3})
    network = make_alphagateau(config, gardner_game)
    assert (network.embedding_size, network.num_blocks) == (16, 3)
    network = make_alphagateau(ml_collections.ConfigDict({"name": "x"}), gardner_game)
    assert (network.embedding_size, network.num_blocks) == (128, 5)
    network = make_alphagateau(ml_collections.ConfigDict({"name": "x", "channels": 32, "num_blocks": 2}), gardner_game)
    assert (network.embedding_size, network.num_blocks) == (32, 2)  # a ResNet config switches with model.name only
    with pytest.raises(ValueError, match="AlphaGateau plays"):
        make_alphagateau(ml_collections.ConfigDict({}), types.SimpleNamespace(name="go"))


def test_variables_have_params_and_batch_stats(gardner_variables):
    assert set(gardner_variables) == {"params", "batch_stats"}
    assert "block_0" in gardner_variables["batch_stats"]


@pytest.mark.parametrize("game_name", ["gardner_chess", "chess"])
def test_forward_shapes_on_both_boards_with_the_same_parameters(game_name, gardner_variables, forward, network_inputs):
    """Parameters initialised on 5×5 run unchanged on 5×5 and 8×8 inputs."""
    inputs = network_inputs[game_name]
    batch_size, num_actions = inputs.legal_action_mask.shape
    (logits, value, _), batch_stats = forward(gardner_variables, inputs, train=False)
    assert logits.shape == (batch_size, num_actions) and value.shape == (batch_size,)
    assert np.all(np.isfinite(logits)) and np.all(np.isfinite(value)) and np.all(np.abs(value) <= 1)
    graph = board_graph(8 if game_name == "chess" else 5)
    assert np.all(np.asarray(logits)[:, graph.action_edge < 0] == NON_EDGE_LOGIT)
    assert np.all(np.asarray(logits)[:, graph.edge_action] > NON_EDGE_LOGIT / 2)
    for old, new in zip(jax.tree.leaves(gardner_variables["batch_stats"]), jax.tree.leaves(batch_stats)):
        assert np.array_equal(old, new)  # inference leaves the statistics alone


def test_parameter_shapes_do_not_depend_on_the_board(tiny_network, chess_game, gardner_variables):
    chess_shapes = jax.eval_shape(lambda key: init_variables(tiny_network, chess_game, key), jax.random.key(0))
    shapes = lambda tree: jax.tree.map(lambda x: x.shape, tree)  # noqa: E731
    assert shapes(chess_shapes) == shapes(gardner_variables)


def test_batch_norm_statistics_update_in_training(gardner_variables, forward, network_inputs):
    _, new_stats = forward(gardner_variables, network_inputs["gardner_chess"], train=True)
    old, new = jax.tree.leaves(gardner_variables["batch_stats"]), jax.tree.leaves(new_stats)
    assert len(old) == len(new) == 2 * 4 * TINY_MODEL["num_blocks"]  # mean and var of 4 BatchNorms per block
    assert all(not np.allclose(a, b) for a, b in zip(old, new))


def test_a_gradient_step_lowers_a_simple_loss(tiny_network, gardner_variables, network_inputs):
    inputs = network_inputs["gardner_chess"]
    mask = inputs.legal_action_mask
    target_policy = mask / mask.sum(axis=-1, keepdims=True)
    target_value = jnp.array([1.0, -1.0, 0.5, 0.0])
    optimizer = optax.adam(1e-2)

    def loss_fn(params, batch_stats):
        (logits, value, _), new_stats = apply_network(
            tiny_network, {"params": params, "batch_stats": batch_stats}, inputs, train=True
        )
        logits = jnp.where(mask, logits, jnp.finfo(logits.dtype).min)
        policy_loss = optax.softmax_cross_entropy(logits, target_policy).mean()
        return policy_loss + jnp.mean((value - target_value) ** 2), new_stats

    @jax.jit
    def step(params, batch_stats, optimizer_state):
        (loss, batch_stats), gradients = jax.value_and_grad(loss_fn, has_aux=True)(params, batch_stats)
        updates, optimizer_state = optimizer.update(gradients, optimizer_state)
        return optax.apply_updates(params, updates), batch_stats, optimizer_state, loss

    params, batch_stats = gardner_variables["params"], gardner_variables["batch_stats"]
    optimizer_state = optimizer.init(params)
    losses = []
    for _ in range(8):
        params, batch_stats, optimizer_state, loss = step(params, batch_stats, optimizer_state)
        losses.append(float(loss))
    assert np.all(np.isfinite(losses))
    assert losses[-1] < 0.8 * losses[0], losses


def alphagateau_parameters(size: int, blocks: int, node_features: int = 119, edge_features: int = 15) -> int:
    """AlphaGateau's parameter count from its layer shapes (H = ``size``)."""
    gateau = 6 * size * size + 2 * size + size  # 6 H×H matrices, 2 biases, the H×1 attention vector
    block = 2 * gateau + 4 * 2 * size  # two GATEAU layers, four BatchNorms (scale and bias) on nodes and edges
    embeddings = (node_features + 1) * size + (edge_features + 1) * size
    heads = (size + 1) + (size + 1)  # edge policy logit, value
    pooling = size + size * size + size  # attention vector, value projection with its bias
    return blocks * block + embeddings + heads + pooling


def resnet_parameters(channels: int, blocks: int, input_planes: int = 119, squares: int = 64, actions: int = 4672) -> int:
    """The AlphaZero ResNet's parameter count from its layer shapes (3×3 convolutions without bias, BatchNorms)."""
    stem = 9 * input_planes * channels + 2 * channels
    tower = blocks * (2 * 9 * channels * channels + 2 * 2 * channels)
    policy = channels * 2 + 2 * 2 + (2 * squares + 1) * actions  # 1×1 conv to 2 planes, BatchNorm, dense
    value = channels * 1 + 2 * 1 + (squares + 1) * squares + (squares + 1)  # 1×1 conv, BatchNorm, 64 hidden, 1
    return stem + tower + policy + value


def test_parameter_counts():
    counts = parameter_counts()
    assert counts["alphagateau"] == alphagateau_parameters(128, 5)
    assert counts["alphazero_resnet"] == resnet_parameters(128, 5)
    # The paper's sizes: AlphaGateau about 1.0M (10 GATEAU layers of 6 128×128 matrices ≈ 0.98M), the ResNet 2.2M.
    assert round(counts["alphagateau"] / 1e5) == 10 and round(counts["alphazero_resnet"] / 1e5) == 22
    smaller = parameter_counts(embedding_size=32, num_blocks=2)
    assert smaller == {"alphagateau": alphagateau_parameters(32, 2), "alphazero_resnet": resnet_parameters(32, 2)}