"""The jraph AlphaGateau of commit b4fed2c, kept as the oracle of the scatter-free one (tests only).

Segment sums and segment softmaxes over a ``jraph.GraphsTuple`` of the flattened batch: the implementation
:mod:`alphagateau.layers` replaced.  Its modules have the same parameter and statistics names, so one set of
variables runs both, and ``tests/alphagateau/test_scatter_free.py`` compares outputs and gradients.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import jraph

from alphagateau.graph import edge_logits_to_action_logits
from alphagateau.graph_tools import build_graphs
from alphagateau.network import LEGACY_ARCHITECTURE
from zerolab import NetworkInputs, NetworkOutput

BLOCKS = ("pre_activation", "post_activation")
POOLINGS = ("paper", "projected")
HEADS = ("paper", "linear")


class GATEAU(nn.Module):
    """Graph Attention with Edge features, Attention-Updated (paper, equations 4–6).

    With ``i`` the receiver and ``j`` the sender of edge ``g_ij``::

        g'_ij = W_u h_i + W_e g_ij + W_v h_j                                   (4) edge update
        α_ij  = softmax over j ∈ N(i) of LeakyReLU(aᵀ g'_ij)                    (5) attention
        h'_i  = W_0 h_i + Σ_{j ∈ N(i)} α_ij (W_h h_j + W_g g'_ij)              (6) node update

    Same function, less work: ``W_u h`` and ``W_v h`` are projected once per node and then gathered onto the edges,
    and by linearity ``Σ_j α_ij (W_h h_j + W_g g'_ij) = W_h Σ_j α_ij h_j + W_g Σ_j α_ij g'_ij``, so ``W_h`` and
    ``W_g`` act on the N aggregated node vectors instead of the E edges (E = 1858 against N = 64 on 8×8): the only
    matrix product over edges is ``W_e g``.  Each sum carries one bias (on ``W_e`` and ``W_0``); the attention
    vector ``a`` has none, as a softmax ignores it.

    Attributes:
      features: H', the size of the output node and edge features.
      negative_slope: slope of the LeakyReLU in (5).
    """

    features: int
    negative_slope: float = 0.2

    @nn.compact
    def __call__(self, graphs: jraph.GraphsTuple) -> jraph.GraphsTuple:
        """Nodes [total_nodes, H] and edges [total_edges, H_edge] → nodes and edges [.., features]."""
        nodes, edges = graphs.nodes, graphs.edges
        senders, receivers = graphs.senders, graphs.receivers
        num_nodes = nodes.shape[0]

        def linear(name: str, use_bias: bool = False) -> nn.Dense:
            return nn.Dense(self.features, use_bias=use_bias, name=name)

        # (4) g'_ij = W_u h_i + W_e g_ij + W_v h_j
        new_edges = (
            linear("receiver_to_edge")(nodes)[receivers]  # W_u h_i
            + linear("edge_to_edge", use_bias=True)(edges)  # W_e g_ij
            + linear("sender_to_edge")(nodes)[senders]  # W_v h_j
        )
        # (5) α_ij: softmax over the incoming edges of each receiver i
        scores = nn.Dense(1, use_bias=False, name="attention")(new_edges)[:, 0]
        scores = nn.leaky_relu(scores, negative_slope=self.negative_slope)
        attention = jraph.segment_softmax(scores, receivers, num_segments=num_nodes)
        # (6) h'_i = W_0 h_i + Σ_j α_ij (W_h h_j + W_g g'_ij) = W_0 h_i + W_h Σ_j α_ij h_j + W_g Σ_j α_ij g'_ij
        weighted_senders = jraph.segment_sum(attention[:, None] * nodes[senders], receivers, num_segments=num_nodes)
        weighted_edges = jraph.segment_sum(attention[:, None] * new_edges, receivers, num_segments=num_nodes)
        new_nodes = (
            linear("self_to_node", use_bias=True)(nodes)  # W_0 h_i
            + linear("sender_message")(weighted_senders)  # W_h Σ α_ij h_j
            + linear("edge_message")(weighted_edges)  # W_g Σ α_ij g'_ij
        )
        return graphs._replace(nodes=new_nodes, edges=new_edges)


class ResGATEAU(nn.Module):
    """Residual GATEAU block, applied to nodes and edges alike, each with BatchNorms of its own.

    * ``block='pre_activation'`` (the paper's equation 9):  ``x ← x + GATEAU(BNR(GATEAU(BNR(x))))``, with
      ``BNR(x) = ReLU(BatchNorm(x))`` (equation 8); the tower's output is not normalised (the heads start with BNR).
    * ``block='post_activation'``: ``x ← ReLU(x + BN(GATEAU(BNR(GATEAU(x)))))``, AlphaZero's residual block with
      GATEAU for the convolutions (the checkpoints written before ``model.block`` existed).

    BatchNorm statistics update when ``train`` is true; under ``jit`` with a batch sharded over a device mesh the
    batch moments are those of the global batch, so they are synchronised across devices without an axis name.

    Attributes:
      features: H, the size of the node and edge features (in and out).
      negative_slope: LeakyReLU slope of the attention.
      batch_norm_momentum: momentum of the BatchNorm running statistics.
      block: one of :data:`BLOCKS`.
    """

    features: int
    negative_slope: float = 0.2
    batch_norm_momentum: float = 0.9
    block: str = "post_activation"

    @nn.compact
    def __call__(self, graphs: jraph.GraphsTuple, train: bool) -> jraph.GraphsTuple:
        """Nodes [total_nodes, H] and edges [total_edges, H] → the same shapes."""
        if self.block not in BLOCKS:
            raise ValueError(f"model.block must be one of {BLOCKS}, got {self.block!r}")

        def batch_norm(name: str) -> nn.BatchNorm:
            return nn.BatchNorm(use_running_average=not train, momentum=self.batch_norm_momentum, name=name)

        def bnr(graphs: jraph.GraphsTuple, index: int) -> jraph.GraphsTuple:
            return graphs._replace(nodes=nn.relu(batch_norm(f"node_norm_{index}")(graphs.nodes)),
                                   edges=nn.relu(batch_norm(f"edge_norm_{index}")(graphs.edges)))

        residual = graphs
        if self.block == "pre_activation":
            graphs = GATEAU(self.features, self.negative_slope, name="gateau_1")(bnr(graphs, 1))
            graphs = GATEAU(self.features, self.negative_slope, name="gateau_2")(bnr(graphs, 2))
            return graphs._replace(nodes=residual.nodes + graphs.nodes, edges=residual.edges + graphs.edges)
        graphs = GATEAU(self.features, self.negative_slope, name="gateau_1")(graphs)
        graphs = bnr(graphs, 1)
        graphs = GATEAU(self.features, self.negative_slope, name="gateau_2")(graphs)
        return graphs._replace(
            nodes=nn.relu(residual.nodes + batch_norm("node_norm_2")(graphs.nodes)),
            edges=nn.relu(residual.edges + batch_norm("edge_norm_2")(graphs.edges)),
        )


def node_graph_index(graphs: jraph.GraphsTuple) -> jax.Array:
    """[total_nodes] index of the graph each node belongs to (jit-safe: sizes come from static shapes)."""
    num_graphs = graphs.n_node.shape[0]
    num_nodes = jax.tree_util.tree_leaves(graphs.nodes)[0].shape[0]
    return jnp.repeat(jnp.arange(num_graphs), graphs.n_node, total_repeat_length=num_nodes)


class AttentionPooling(nn.Module):
    """Attention pooling of node features into one vector per graph.

    * ``pooling='paper'`` (equation 7, after Li et al.): ``α_i = softmax over the nodes i of graph G of
      LeakyReLU(aᵀ h_i)``, ``H_G = Σ_i α_i h_i`` (``features`` must be H: the nodes are not projected);
    * ``pooling='projected'``: ``H_G = Σ_i β_i W h_i`` with ``β_i = softmax_i(aᵀ h_i)`` (the checkpoints written
      before ``model.pooling`` existed).

    Attributes:
      features: size of the pooled vector.
      pooling: one of :data:`POOLINGS`.
      negative_slope: LeakyReLU slope of the paper's scores.
    """

    features: int
    pooling: str = "projected"
    negative_slope: float = 0.2

    @nn.compact
    def __call__(self, graphs: jraph.GraphsTuple) -> jax.Array:
        """Nodes [total_nodes, H] → [num_graphs, features]."""
        if self.pooling not in POOLINGS:
            raise ValueError(f"model.pooling must be one of {POOLINGS}, got {self.pooling!r}")
        num_graphs = graphs.n_node.shape[0]
        graph_index = node_graph_index(graphs)
        scores = nn.Dense(1, use_bias=False, name="attention")(graphs.nodes)[:, 0]
        if self.pooling == "paper":
            if graphs.nodes.shape[-1] != self.features:
                raise ValueError(f"the paper's pooling keeps the node features: features must be "
                                 f"{graphs.nodes.shape[-1]}, got {self.features}")
            scores = nn.leaky_relu(scores, negative_slope=self.negative_slope)
            values = graphs.nodes
        else:
            values = nn.Dense(self.features, name="value")(graphs.nodes)
        weights = jraph.segment_softmax(scores, graph_index, num_segments=num_graphs, indices_are_sorted=True)
        return jraph.segment_sum(
            weights[:, None] * values, graph_index, num_segments=num_graphs, indices_are_sorted=True
        )



class AlphaGateau(nn.Module):
    """The network of b4fed2c over ``build_graphs``' GraphsTuple (same attributes as today's, float32 only)."""

    channels: int = 128
    num_blocks: int = 5
    negative_slope: float = 0.2
    batch_norm_momentum: float = 0.9
    block: str = LEGACY_ARCHITECTURE["block"]
    heads: str = LEGACY_ARCHITECTURE["heads"]
    pooling: str = LEGACY_ARCHITECTURE["pooling"]

    @nn.compact
    def __call__(self, inputs: NetworkInputs, train: bool = False) -> NetworkOutput:
        """``(policy_logits [B, A], value [B])`` of a batch of chess (8×8) or Gardner chess (5×5) positions."""
        if self.heads not in HEADS:
            raise ValueError(f"model.heads must be one of {HEADS}, got {self.heads!r}")
        batch_size = inputs.observation.shape[0]
        graphs = build_graphs(inputs.observation, inputs.legal_action_mask)
        graphs = graphs._replace(
            nodes=nn.Dense(self.channels, name="node_embedding")(graphs.nodes),
            edges=nn.Dense(self.channels, name="edge_embedding")(graphs.edges),
        )
        for index in range(self.num_blocks):
            graphs = ResGATEAU(self.channels, self.negative_slope, self.batch_norm_momentum, self.block,
                               name=f"block_{index}")(graphs, train)

        def bnr(features: jax.Array, name: str) -> jax.Array:
            norm = nn.BatchNorm(use_running_average=not train, momentum=self.batch_norm_momentum, name=name)
            return nn.relu(norm(features))

        pooling = AttentionPooling(self.channels, self.pooling, self.negative_slope, name="value_pooling")
        if self.heads == "paper":
            edges = bnr(nn.Dense(self.channels, name="policy_hidden")(bnr(graphs.edges, "policy_norm_1")),
                        "policy_norm_2")
            edge_logits = nn.Dense(1, name="policy_head")(edges).reshape(batch_size, -1)
            nodes = bnr(nn.Dense(self.channels, name="value_hidden")(bnr(graphs.nodes, "value_norm_1")),
                        "value_norm_2")
            pooled = nn.relu(pooling(graphs._replace(nodes=nodes)))
        else:
            edge_logits = nn.Dense(1, name="policy_head")(graphs.edges).reshape(batch_size, -1)
            pooled = pooling(graphs)
        value = jnp.tanh(nn.Dense(1, name="value_head")(pooled))[:, 0]
        return NetworkOutput(edge_logits_to_action_logits(edge_logits), value)


