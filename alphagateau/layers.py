"""GATEAU (graph attention with edge features), its residual block and attention pooling, as Flax linen modules.

All layers read and write :class:`jraph.GraphsTuple` batches: ``nodes`` [total_nodes, H], ``edges`` [total_edges, H],
``senders`` / ``receivers`` [total_edges] indexing ``nodes``.  An edge goes from its sender ``j`` to its receiver
``i``; following the paper (and GAT), ``g_ij`` is the edge ``j → i``, ``N(i)`` the senders of ``i``'s incoming
edges, and node ``i`` attends over its incoming edges.  On the chess graph an edge is a move, so a square gathers
information from the squares that can move onto it.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import jraph


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


#: ``ResGATEAU.block`` values: the paper's pre-activation block (equation 9) and the post-activation block this
#: package trained with before (an AlphaZero-style ``ReLU(x + BN(GATEAU(BNR(GATEAU(x)))))``).
BLOCKS = ("pre_activation", "post_activation")


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


#: ``AttentionPooling.pooling`` values: the paper's equation 7 and the projected pooling trained with before.
POOLINGS = ("paper", "projected")


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


__all__ = ["BLOCKS", "GATEAU", "POOLINGS", "AttentionPooling", "ResGATEAU", "node_graph_index"]
