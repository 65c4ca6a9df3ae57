"""GATEAU (graph attention with edge features), its residual block and attention pooling, as Flax linen modules.

All layers read and write :class:`GraphBatch` batches of graphs that share one fixed :class:`Topology`: ``nodes``
[B, N, H], ``edges`` [B, E, H].  An edge goes from its sender ``j`` to its receiver ``i``; following the paper (and
GAT), ``g_ij`` is the edge ``j → i``, ``N(i)`` the senders of ``i``'s incoming edges, and node ``i`` attends over its
incoming edges.  On the chess graph an edge is a move, so a square gathers information from the squares that can
move onto it.  Edges live in the topology's incoming-slot layout [B, N, D, H] (:class:`Topology`).

Message passing uses only gathers with constant tables and dense products (:mod:`alphagateau.topology`): the
compiled forward pass and its gradient hold no scatter.  Every module computes in ``dtype`` (``bfloat16`` on
accelerators) with float32 parameters; softmaxes and BatchNorm statistics are computed in float32.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from alphagateau.topology import Topology, masked_softmax


class GraphBatch(NamedTuple):
    """A batch of B graphs with one topology, edges in its incoming-slot layout (:class:`Topology`).

    Attributes:
      nodes: [B, N, H] node features.
      edges: [B, N, D, H_edge] edge features: slot ``(i, d)`` holds node ``i``'s d-th incoming edge; empty slots
        (``topology.incoming_mask`` false) hold values that nothing reads.
    """

    nodes: jax.Array
    edges: jax.Array


class SlotBatchNorm(nn.Module):
    """BatchNorm of edge features in the slot layout [B, N, D, H]: statistics over the batch and the slots that hold
    an edge, so they equal those over the edges themselves; the same variables as ``nn.BatchNorm`` (params
    ``scale`` and ``bias``, batch_stats ``mean`` and ``var``), so checkpoints carry over.

    The moments are sums weighted by the [N, D] slot mask over a count known when tracing (a masked ``nn.BatchNorm``
    would count a broadcast mask of the whole batch, which XLA folds at compile time, seconds a layer at 8×8), in
    float32; the output is in ``dtype``.

    Attributes:
      use_running_average: use the running statistics (inference) instead of the batch's.
      momentum: momentum of the running statistics.
      epsilon: added to the variance.
      dtype: the computation dtype.
    """

    use_running_average: bool
    momentum: float = 0.9
    epsilon: float = 1e-5
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: jax.Array, topology: Topology) -> jax.Array:
        features = x.shape[-1]
        scale = self.param("scale", nn.initializers.ones, (features,), jnp.float32)
        bias = self.param("bias", nn.initializers.zeros, (features,), jnp.float32)
        running_mean = self.variable("batch_stats", "mean", lambda: jnp.zeros((features,), jnp.float32))
        running_var = self.variable("batch_stats", "var", lambda: jnp.ones((features,), jnp.float32))
        if self.use_running_average:
            mean, var = running_mean.value, running_var.value
        else:
            weights = jnp.asarray(topology.incoming_mask, jnp.float32)[None, :, :, None]
            count = x.shape[0] * int(topology.incoming_mask.sum())
            values = x.astype(jnp.float32)
            mean = jnp.sum(values * weights, axis=(0, 1, 2)) / count
            var = jnp.maximum(jnp.sum(jnp.square(values) * weights, axis=(0, 1, 2)) / count - jnp.square(mean), 0.0)
            if not self.is_initializing():
                running_mean.value = self.momentum * running_mean.value + (1 - self.momentum) * mean
                running_var.value = self.momentum * running_var.value + (1 - self.momentum) * var
        # one affine map of x (x·m + (bias − mean·m)): no centred copy of the [B, N, D, H] edges is kept
        multiplier = jax.lax.rsqrt(var + self.epsilon) * scale
        offset = bias - mean * multiplier
        return (x * multiplier.astype(x.dtype) + offset.astype(x.dtype)).astype(self.dtype)


class GATEAU(nn.Module):
    """Graph Attention with Edge features, Attention-Updated (paper, equations 4–6).

    With ``i`` the receiver and ``j`` the sender of edge ``g_ij``::

        g'_ij = W_u h_i + W_e g_ij + W_v h_j                                   (4) edge update
        α_ij  = softmax over j ∈ N(i) of LeakyReLU(aᵀ g'_ij)                    (5) attention
        h'_i  = W_0 h_i + Σ_{j ∈ N(i)} α_ij (W_h h_j + W_g g'_ij)              (6) node update

    Same function, less work: ``W_u h`` and ``W_v h`` are projected once per node and then moved onto the edges,
    and by linearity ``Σ_j α_ij (W_h h_j + W_g g'_ij) = W_h Σ_j α_ij h_j + W_g Σ_j α_ij g'_ij``, so ``W_h`` and
    ``W_g`` act on the N aggregated node vectors instead of the edges (1858 on 8×8 against N = 64): the only matrix
    product over edges is ``W_e g``.  Each sum carries one bias (on ``W_e`` and ``W_0``); the attention vector ``a``
    has none, as a softmax ignores it.

    Without scatters, in the slot layout: ``W_u h_i`` is broadcast over node i's slots, ``W_v h_j`` gathered from
    each slot's sender; (5) is a masked softmax along the slot axis; ``Σ_j α_ij g'_ij`` a reduction along it; and
    ``Σ_j α_ij h_j`` the product of the dense attention matrix [B, N, N] (slots summed per sender) with the nodes.

    Attributes:
      features: H', the size of the output node and edge features.
      negative_slope: slope of the LeakyReLU in (5).
      dtype: the computation dtype (parameters stay float32).
    """

    features: int
    negative_slope: float = 0.2
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, graphs: GraphBatch, topology: Topology) -> GraphBatch:
        """Nodes [B, N, H] and edges [B, N, D, H_edge] → nodes [B, N, features] and edges [B, N, D, features]."""
        nodes, edges = graphs

        def linear(name: str, use_bias: bool = False) -> nn.Dense:
            return nn.Dense(self.features, use_bias=use_bias, dtype=self.dtype, name=name)

        # (4) g'_ij = W_u h_i + W_e g_ij + W_v h_j
        new_edges = (
            linear("receiver_to_edge")(nodes)[:, :, None, :]  # W_u h_i
            + linear("edge_to_edge", use_bias=True)(edges)  # W_e g_ij
            + topology.slot_senders(linear("sender_to_edge")(nodes))  # W_v h_j
        )
        # (5) α_ij: softmax over the incoming edges of each receiver i, in float32
        scores = nn.Dense(1, use_bias=False, dtype=self.dtype, name="attention")(new_edges)[..., 0]
        scores = nn.leaky_relu(scores, negative_slope=self.negative_slope)
        attention = masked_softmax(scores, topology.incoming_mask).astype(new_edges.dtype)  # [B, N, D]
        # (6) h'_i = W_0 h_i + Σ_j α_ij (W_h h_j + W_g g'_ij) = W_0 h_i + W_h Σ_j α_ij h_j + W_g Σ_j α_ij g'_ij
        # The sums over a node's 14–35 incoming edges accumulate in float32, whatever the computation dtype.
        attention_matrix = jnp.einsum("bid,idj->bij", attention, topology.incoming_senders.astype(attention.dtype),
                                      preferred_element_type=jnp.float32).astype(attention.dtype)
        weighted_senders = jnp.einsum("bij,bjh->bih", attention_matrix, nodes.astype(attention.dtype),
                                      preferred_element_type=jnp.float32).astype(new_edges.dtype)
        weighted_edges = jnp.einsum("bid,bidh->bih", attention, new_edges,
                                    preferred_element_type=jnp.float32).astype(new_edges.dtype)
        new_nodes = (
            linear("self_to_node", use_bias=True)(nodes)  # W_0 h_i
            + linear("sender_message")(weighted_senders)  # W_h Σ α_ij h_j
            + linear("edge_message")(weighted_edges)  # W_g Σ α_ij g'_ij
        )
        return GraphBatch(nodes=new_nodes, edges=new_edges)


#: ``ResGATEAU.block`` values: the paper's pre-activation block (equation 9) and the post-activation block this
#: package trained with before (an AlphaZero-style ``ReLU(x + BN(GATEAU(BNR(GATEAU(x)))))``).
BLOCKS = ("pre_activation", "post_activation")


class ResGATEAU(nn.Module):
    """Residual GATEAU block, applied to nodes and edges alike, each with BatchNorms of its own.

    * ``block='pre_activation'`` (the paper's equation 9):  ``x ← x + GATEAU(BNR(GATEAU(BNR(x))))``, with
      ``BNR(x) = ReLU(BatchNorm(x))`` (equation 8); the tower's output is not normalised (the heads start with BNR).
    * ``block='post_activation'``: ``x ← ReLU(x + BN(GATEAU(BNR(GATEAU(x)))))``, AlphaZero's residual block with
      GATEAU for the convolutions (the checkpoints written before ``model.block`` existed).

    BatchNorm statistics (over the batch and the nodes, or the batch and the edges: :class:`SlotBatchNorm`) update
    when ``train`` is true;
    under ``jit`` with a batch sharded over a device mesh the batch moments are those of the global batch, so they are
    synchronised across devices without an axis name.

    Attributes:
      features: H, the size of the node and edge features (in and out).
      negative_slope: LeakyReLU slope of the attention.
      batch_norm_momentum: momentum of the BatchNorm running statistics.
      block: one of :data:`BLOCKS`.
      dtype: the computation dtype (parameters and BatchNorm statistics stay float32).
    """

    features: int
    negative_slope: float = 0.2
    batch_norm_momentum: float = 0.9
    block: str = "post_activation"
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, graphs: GraphBatch, topology: Topology, train: bool) -> GraphBatch:
        """Nodes [B, N, H] and edges [B, N, D, H] → the same shapes."""
        if self.block not in BLOCKS:
            raise ValueError(f"model.block must be one of {BLOCKS}, got {self.block!r}")

        def batch_norm(name: str) -> nn.BatchNorm:
            return nn.BatchNorm(use_running_average=not train, momentum=self.batch_norm_momentum, dtype=self.dtype,
                                name=name)

        def edge_norm(name: str, edges: jax.Array) -> jax.Array:
            return SlotBatchNorm(not train, self.batch_norm_momentum, dtype=self.dtype, name=name)(edges, topology)

        def bnr(graphs: GraphBatch, index: int) -> GraphBatch:
            return GraphBatch(nodes=nn.relu(batch_norm(f"node_norm_{index}")(graphs.nodes)),
                              edges=nn.relu(edge_norm(f"edge_norm_{index}", graphs.edges)))

        def gateau(name: str) -> GATEAU:
            return GATEAU(self.features, self.negative_slope, self.dtype, name=name)

        residual = graphs
        if self.block == "pre_activation":
            graphs = gateau("gateau_1")(bnr(graphs, 1), topology)
            graphs = gateau("gateau_2")(bnr(graphs, 2), topology)
            return GraphBatch(nodes=residual.nodes + graphs.nodes, edges=residual.edges + graphs.edges)
        graphs = gateau("gateau_1")(graphs, topology)
        graphs = bnr(graphs, 1)
        graphs = gateau("gateau_2")(graphs, topology)
        return GraphBatch(
            nodes=nn.relu(residual.nodes + batch_norm("node_norm_2")(graphs.nodes)),
            edges=nn.relu(residual.edges + edge_norm("edge_norm_2", graphs.edges)),
        )


#: ``AttentionPooling.pooling`` values: the paper's equation 7 and the projected pooling trained with before.
POOLINGS = ("paper", "projected")


class AttentionPooling(nn.Module):
    """Attention pooling of each graph's node features into one vector.

    * ``pooling='paper'`` (equation 7, after Li et al.): ``α_i = softmax over the nodes i of graph G of
      LeakyReLU(aᵀ h_i)``, ``H_G = Σ_i α_i h_i`` (``features`` must be H: the nodes are not projected);
    * ``pooling='projected'``: ``H_G = Σ_i β_i W h_i`` with ``β_i = softmax_i(aᵀ h_i)`` (the checkpoints written
      before ``model.pooling`` existed).

    The softmax runs in float32 along the node axis.

    Attributes:
      features: size of the pooled vector.
      pooling: one of :data:`POOLINGS`.
      negative_slope: LeakyReLU slope of the paper's scores.
      dtype: the computation dtype.
    """

    features: int
    pooling: str = "projected"
    negative_slope: float = 0.2
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, nodes: jax.Array) -> jax.Array:
        """Nodes [B, N, H] → [B, features]."""
        if self.pooling not in POOLINGS:
            raise ValueError(f"model.pooling must be one of {POOLINGS}, got {self.pooling!r}")
        scores = nn.Dense(1, use_bias=False, dtype=self.dtype, name="attention")(nodes)[..., 0]
        if self.pooling == "paper":
            if nodes.shape[-1] != self.features:
                raise ValueError(f"the paper's pooling keeps the node features: features must be "
                                 f"{nodes.shape[-1]}, got {self.features}")
            scores = nn.leaky_relu(scores, negative_slope=self.negative_slope)
            values = nodes
        else:
            values = nn.Dense(self.features, dtype=self.dtype, name="value")(nodes)
        weights = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(values.dtype)  # [B, N]
        return jnp.einsum("bn,bnh->bh", weights, values, preferred_element_type=jnp.float32).astype(values.dtype)


__all__ = ["BLOCKS", "GATEAU", "POOLINGS", "AttentionPooling", "GraphBatch", "ResGATEAU", "SlotBatchNorm"]
