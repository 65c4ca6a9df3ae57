"""GATEAU against a literal reading of equations 4–7, and the AlphaGateau network as a zerolab network."""

from __future__ import annotations

import functools
import types

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest

from alphagateau.graph import NON_EDGE_LOGIT, board_graph, graph_features
from alphagateau.layers import GATEAU, AttentionPooling, GraphBatch
from alphagateau.topology import Topology
from alphagateau.network import make_alphagateau, parameter_counts
from zerolab.networks.network import apply_network, init_variables, make_network

TINY_MODEL = {"name": "alphagateau.network:make_alphagateau", "channels": 8, "num_blocks": 2}


def _leaky_relu(x, negative_slope=0.2):
    return np.where(x > 0, x, negative_slope * x)


def test_gateau_follows_equations_4_to_6():
    """A loop over edges and nodes, written from the equations, on a graph whose edges are not symmetric."""
    rng = np.random.default_rng(0)
    senders = np.array([0, 2, 1, 0, 3, 3])  # j
    receivers = np.array([1, 1, 0, 2, 1, 0])  # i
    nodes = rng.normal(size=(4, 3)).astype(np.float32)
    edges = rng.normal(size=(6, 2)).astype(np.float32)
    topology = Topology(senders, receivers, num_nodes=4)
    graphs = GraphBatch(nodes=jnp.asarray(nodes)[None], edges=topology.to_slots(jnp.asarray(edges)[None]))
    layer = GATEAU(features=5)
    params = layer.init(jax.random.key(0), graphs, topology)["params"]
    params = jax.tree.map(lambda x: x + 0.1 * jax.random.normal(jax.random.key(1), x.shape), params)  # nonzero biases
    out = layer.apply({"params": params}, graphs, topology)
    out = GraphBatch(nodes=out.nodes[0], edges=topology.to_edges(out.edges)[0])
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
    nodes = rng.normal(size=(2, 3, 3)).astype(np.float32)  # two graphs of three nodes
    pooling = AttentionPooling(features=4)
    params = pooling.init(jax.random.key(0), jnp.asarray(nodes))["params"]
    pooled = np.asarray(pooling.apply({"params": params}, jnp.asarray(nodes)))
    a = np.asarray(params["attention"]["kernel"])[:, 0]
    W, b = np.asarray(params["value"]["kernel"]), np.asarray(params["value"]["bias"])
    for graph, members in enumerate(nodes):
        scores = members @ a
        weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
        np.testing.assert_allclose(pooled[graph], weights @ (members @ W + b), rtol=1e-5, atol=1e-6)


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
    config = ml_collections.ConfigDict({"name": "x", "channels": 16, "num_blocks": 3})
    network = make_alphagateau(config, gardner_game)
    assert (network.channels, network.num_blocks) == (16, 3)
    network = make_alphagateau(ml_collections.ConfigDict({"name": "x"}), gardner_game)
    assert (network.channels, network.num_blocks) == (128, 5)
    network = make_alphagateau(ml_collections.ConfigDict({"name": "x", "channels": 32, "num_blocks": 2}), gardner_game)
    assert (network.channels, network.num_blocks) == (32, 2)  # a ResNet config switches with model.name only
    legacy = ml_collections.ConfigDict({"name": "x", "channels": 32, "embedding_size": 16})  # recorded before the rename
    assert make_alphagateau(legacy, gardner_game).channels == 16
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


def paper_alphagateau_parameters(size: int, blocks: int) -> int:
    """The paper's architecture: no value projection in the pooling; each head gains BNR → Linear H → BNR."""
    pooling_projection = size * size + size
    head_layers = 2 * (2 * 2 * size + size * size + size)  # per head: two BatchNorms and a Linear H
    return alphagateau_parameters(size, blocks) - pooling_projection + head_layers


def test_parameter_counts():
    counts = parameter_counts()
    assert counts["alphagateau_legacy"] == alphagateau_parameters(128, 5)
    assert counts["alphagateau"] == paper_alphagateau_parameters(128, 5) == 1_043_842
    assert counts["alphazero_resnet"] == resnet_parameters(128, 5)
    # The paper's sizes: AlphaGateau about 1.0M (10 GATEAU layers of 6 128×128 matrices ≈ 0.98M), the ResNet 2.2M.
    assert round(counts["alphagateau"] / 1e5) == 10 and round(counts["alphazero_resnet"] / 1e5) == 22
    smaller = parameter_counts(channels=32, num_blocks=2)
    assert smaller == {"alphagateau": paper_alphagateau_parameters(32, 2), "alphagateau_legacy": alphagateau_parameters(32, 2),
                       "alphazero_resnet": resnet_parameters(32, 2)}

# --- the paper's architecture (model.block, model.heads, model.pooling) ---------------------------------------------


PAPER_MODEL = {**TINY_MODEL, "block": "pre_activation", "heads": "paper", "pooling": "paper"}


def test_the_papers_pooling_follows_equation_7():
    """α_i = softmax_i(LeakyReLU(aᵀ h_i)), H = Σ_i α_i h_i: no projection of the nodes."""
    rng = np.random.default_rng(2)
    nodes = rng.normal(size=(2, 3, 3)).astype(np.float32)  # two graphs of three nodes
    pooling = AttentionPooling(features=3, pooling="paper", negative_slope=0.2)
    params = pooling.init(jax.random.key(0), jnp.asarray(nodes))["params"]
    assert sorted(params) == ["attention"]
    params = {"attention": {"kernel": jnp.array([[1.5], [-2.0], [0.5]])}}  # scores of both signs: LeakyReLU shows
    pooled = np.asarray(pooling.apply({"params": params}, jnp.asarray(nodes)))
    a = np.asarray(params["attention"]["kernel"])[:, 0]
    assert (nodes @ a < 0).sum() >= 2 and (nodes @ a > 0).sum() >= 2
    for graph, members in enumerate(nodes):
        scores = _leaky_relu(members @ a)
        weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
        np.testing.assert_allclose(pooled[graph], weights @ members, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="features must be 3"):
        AttentionPooling(features=4, pooling="paper").init(jax.random.key(0), jnp.asarray(nodes))


def _batch_norm(x, params, statistics, epsilon=1e-5):
    """Flax's BatchNorm with running statistics (inference)."""
    return (x - statistics["mean"]) / np.sqrt(statistics["var"] + epsilon) * params["scale"] + params["bias"]


def _bnr(x, params, statistics):
    return np.maximum(_batch_norm(x, params, statistics), 0.0)


def _gateau(graphs, params, topology):
    return GATEAU(features=params["self_to_node"]["kernel"].shape[1]).apply({"params": params}, graphs, topology)


def _perturbed(variables):
    """Variables with non-trivial BatchNorm scales, biases and running statistics (so every norm shows)."""
    keys = iter(jax.random.split(jax.random.key(7), 1000))
    params = jax.tree.map(lambda x: x + 0.3 * jax.random.normal(next(keys), x.shape), variables["params"])
    statistics = jax.tree.map(lambda x: x + 0.5 * jnp.abs(jax.random.normal(next(keys), x.shape)), variables["batch_stats"])
    return {"params": params, "batch_stats": statistics}


def test_the_papers_residual_block_follows_equation_9(gardner_game, network_inputs):
    """(h, g) + GATEAU(BNR(GATEAU(BNR(h, g)))) on real Gardner graphs, inference mode."""
    from alphagateau.layers import ResGATEAU

    inputs = network_inputs["gardner_chess"]
    topology = board_graph(5).topology
    nodes, edges = graph_features(inputs.observation, inputs.legal_action_mask)
    rng = np.random.default_rng(3)
    graphs = GraphBatch(nodes=jnp.asarray(rng.normal(size=nodes.shape[:2] + (6,)), jnp.float32),
                        edges=topology.to_slots(jnp.asarray(rng.normal(size=edges.shape[:2] + (6,)), jnp.float32)))
    valid = topology.incoming_mask[None, :, :, None]  # empty slots: values nothing reads

    def same(got, expected, **kwargs):
        np.testing.assert_allclose(np.where(valid, got, 0) if got.ndim == 4 else got,
                                   np.where(valid, expected, 0) if got.ndim == 4 else expected,
                                   rtol=1e-4, atol=1e-4, **kwargs)

    block = ResGATEAU(features=6, block="pre_activation")
    variables = _perturbed(block.init(jax.random.key(0), graphs, topology, train=False))
    out = block.apply(variables, graphs, topology, train=False)
    p, s = jax.tree.map(np.asarray, variables["params"]), jax.tree.map(np.asarray, variables["batch_stats"])
    inner = GraphBatch(nodes=_bnr(np.asarray(graphs.nodes), p["node_norm_1"], s["node_norm_1"]),
                       edges=_bnr(np.asarray(graphs.edges), p["edge_norm_1"], s["edge_norm_1"]))
    inner = _gateau(inner, p["gateau_1"], topology)
    inner = GraphBatch(nodes=_bnr(np.asarray(inner.nodes), p["node_norm_2"], s["node_norm_2"]),
                       edges=_bnr(np.asarray(inner.edges), p["edge_norm_2"], s["edge_norm_2"]))
    inner = _gateau(inner, p["gateau_2"], topology)
    same(out.nodes, np.asarray(graphs.nodes) + np.asarray(inner.nodes))
    same(out.edges, np.asarray(graphs.edges) + np.asarray(inner.edges))
    # The tower's output is not normalised: values below 0 remain (the post-activation block ends with a ReLU).
    assert (np.asarray(out.nodes) < 0).any()
    # The post-activation block on the same graphs: ReLU(x + BN(GATEAU(BNR(GATEAU(x))))), nodes and edges alike.
    block = ResGATEAU(features=6, block="post_activation")
    variables = _perturbed(block.init(jax.random.key(0), graphs, topology, train=False))
    out = block.apply(variables, graphs, topology, train=False)
    p, s = jax.tree.map(np.asarray, variables["params"]), jax.tree.map(np.asarray, variables["batch_stats"])
    inner = _gateau(graphs, p["gateau_1"], topology)
    inner = GraphBatch(nodes=_bnr(np.asarray(inner.nodes), p["node_norm_1"], s["node_norm_1"]),
                       edges=_bnr(np.asarray(inner.edges), p["edge_norm_1"], s["edge_norm_1"]))
    inner = _gateau(inner, p["gateau_2"], topology)
    for name in ("nodes", "edges"):
        residual = np.asarray(getattr(graphs, name)) + _batch_norm(np.asarray(getattr(inner, name)),
                                                                  p[f"{name[:4]}_norm_2"], s[f"{name[:4]}_norm_2"])
        assert (residual < 0).any()  # the final ReLU has something to clip
        same(np.asarray(getattr(out, name)), np.maximum(residual, 0.0), err_msg=name)


def test_the_papers_heads_follow_figures_3_and_4(gardner_game, network_inputs):
    """Policy: edges → BNR → Linear H → BNR → Linear 1; value: nodes → BNR → Linear H → BNR → pooling (eq. 7) → ReLU
    → Linear 1 → tanh; computed by hand from the tower's output and compared with the network's."""
    from alphagateau.graph import edge_logits_to_action_logits

    topology = board_graph(5).topology
    network = make_alphagateau(ml_collections.ConfigDict(PAPER_MODEL), gardner_game)
    assert (network.block, network.heads, network.pooling) == ("pre_activation", "paper", "paper")
    inputs = network_inputs["gardner_chess"]
    variables = _perturbed(init_variables(network, gardner_game, jax.random.key(0)))
    output, state = network.apply(variables, inputs, train=False, capture_intermediates=True, mutable=["intermediates"])
    tower = state["intermediates"]["block_1"]["__call__"][0]  # the last ResGATEAU block's output
    p, s = jax.tree.map(np.asarray, variables["params"]), jax.tree.map(np.asarray, variables["batch_stats"])

    def dense(x, params):
        return x @ params["kernel"] + params["bias"]

    tower_edges = np.asarray(topology.to_edges(tower.edges))  # [B, E, H] in edge order
    edges = _bnr(dense(_bnr(tower_edges, p["policy_norm_1"], s["policy_norm_1"]), p["policy_hidden"]),
                 p["policy_norm_2"], s["policy_norm_2"])
    edge_logits = dense(edges, p["policy_head"]).reshape(inputs.observation.shape[0], -1)
    np.testing.assert_allclose(output.policy_logits, edge_logits_to_action_logits(jnp.asarray(edge_logits)),
                               rtol=1e-4, atol=1e-4)
    nodes = _bnr(dense(_bnr(np.asarray(tower.nodes), p["value_norm_1"], s["value_norm_1"]), p["value_hidden"]),
                 p["value_norm_2"], s["value_norm_2"])  # [B, 25, H]
    a = p["value_pooling"]["attention"]["kernel"][:, 0]
    scores = _leaky_relu(nodes @ a)
    weights = np.exp(scores - scores.max(1, keepdims=True))
    weights /= weights.sum(1, keepdims=True)
    pooled = np.maximum(np.einsum("bn,bnh->bh", weights, nodes), 0.0)
    np.testing.assert_allclose(output.value, np.tanh(dense(pooled, p["value_head"]))[:, 0], rtol=1e-4, atol=1e-5)


def test_architecture_keys_are_checked_and_absent_ones_load_earlier_checkpoints(gardner_game, gardner_variables):
    with pytest.raises(ValueError, match=r"model.heads must be one of 'paper', 'linear', got 'conv'"):
        make_alphagateau(ml_collections.ConfigDict({**TINY_MODEL, "heads": "conv"}), gardner_game)
    with pytest.raises(ValueError, match="model.block must be one of"):
        make_alphagateau(ml_collections.ConfigDict({**TINY_MODEL, "block": "pre"}), gardner_game)
    # A config without the keys (every run written before them) builds the network its checkpoints hold.
    legacy = make_alphagateau(ml_collections.ConfigDict(TINY_MODEL), gardner_game)
    assert (legacy.block, legacy.heads, legacy.pooling) == ("post_activation", "linear", "projected")
    assert sorted(gardner_variables["params"]) == ["block_0", "block_1", "edge_embedding", "node_embedding",
                                                   "policy_head", "value_head", "value_pooling"]
    paper = init_variables(make_alphagateau(ml_collections.ConfigDict(PAPER_MODEL), gardner_game), gardner_game,
                           jax.random.key(0))
    assert {"policy_hidden", "value_hidden", "policy_norm_1", "value_norm_2"} <= set(paper["params"])


@pytest.mark.parametrize("key, value, message", [
    ("channels", 0, "model.channels must be at least 1, got 0"),
    ("num_blocks", -1, "model.num_blocks must be at least 0, got -1"),
    ("heads", "wide", "model.heads must be one of 'paper', 'linear', got 'wide'"),
    ("channels", 2.5, r"model.channels must be int, got 2.5"),
])
def test_a_bad_model_value_is_refused_naming_its_key(key, value, message):
    from alphagateau.network import make_alphagateau
    from zerolab import make_game

    with pytest.raises(ValueError, match=message):
        make_alphagateau({"name": "alphagateau.network:make_alphagateau", key: value}, make_game("gardner_chess"))
