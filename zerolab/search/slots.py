"""A search node's slots: the K legal actions it keeps instead of one entry per action (:mod:`zerolab.search.tree`).

:func:`slot_actions` lists a node's legal actions in increasing order (:data:`EMPTY_SLOT` after them; with K = A slot
a holds action a, the dense layout), by ranks from a blocked prefix sum (:func:`inclusive_prefix_counts`);
:func:`gather_slots` and :func:`scatter_slots` move per-action values to slots and back.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

EMPTY_SLOT = -1


def slot_actions(legal_action_mask: jax.Array, num_slots: int) -> jax.Array:
    """[..., K] int32: the legal actions of each ``[..., A]`` mask in increasing order, :data:`EMPTY_SLOT` after them.

    With K = A slot a holds action a where it is legal (the dense layout).  A mask with more than K legal actions
    (pgx's all-legal mask of a finished game) keeps its first K.
    """
    num_actions = legal_action_mask.shape[-1]
    if num_slots >= num_actions:
        if num_slots > num_actions:
            raise ValueError(f"a node has at most A = {num_actions} slots, got K = {num_slots}")
        return jnp.where(legal_action_mask, jnp.arange(num_actions, dtype=jnp.int32), EMPTY_SLOT)

    # each legal action's rank among the legal ones, then one scatter of the actions to their ranks (ranks ≥ K are
    # dropped).  The ranks are a blocked prefix sum (inclusive_prefix_counts): small float32 products with triangular
    # matrices of ones, faster on a 2-core CPU than a parallel prefix sum over A (jax.lax.associative_scan), itself
    # faster than cumsum and jnp.nonzero (zerolab/README.md, "Search efficiency")
    flat = legal_action_mask.reshape((-1, num_actions))
    rank = inclusive_prefix_counts(flat.astype(jnp.float32)).astype(jnp.int32) - 1
    target = jnp.where(flat, rank, num_slots)
    rows = jnp.arange(flat.shape[0])[:, None]
    slots = jnp.full((flat.shape[0], num_slots), EMPTY_SLOT, jnp.int32).at[rows, target].set(
        jnp.arange(num_actions, dtype=jnp.int32), mode="drop")
    return slots.reshape(legal_action_mask.shape[:-1] + (num_slots,))


PREFIX_BLOCK_WIDTH = 32


def inclusive_prefix_counts(counts: jax.Array, width: int = PREFIX_BLOCK_WIDTH) -> jax.Array:
    """[R, n] float32 inclusive prefix sums of ``counts`` [R, n] along its last axis, exact for integer counts whose
    total stays below 2^24.

    Blocked: the sums within blocks of ``width`` entries are one product with a triangular matrix of ones, the blocks'
    offsets the same function of the blocks' totals, recursively (about ``width`` + 1 multiply-adds an entry in all).
    Products of small integers summed in float32 are exact in any order, so the result does not depend on how XLA
    orders the sums.
    """
    rows, length = counts.shape
    if length <= 2 * width:
        return jnp.einsum("rn,nm->rm", counts, np.triu(np.ones((length, length), np.float32)),
                          precision=jax.lax.Precision.HIGHEST)
    blocks = -(-length // width)
    blocked = jnp.pad(counts, ((0, 0), (0, blocks * width - length))).reshape(rows, blocks, width)
    within = jnp.einsum("rbw,wv->rbv", blocked, np.triu(np.ones((width, width), np.float32)),
                        precision=jax.lax.Precision.HIGHEST)
    totals = within[..., -1]
    offsets = inclusive_prefix_counts(totals, width) - totals
    return (within + offsets[..., None]).reshape(rows, blocks * width)[:, :length]


def gather_slots(values: jax.Array, actions: jax.Array, fill: chex.Numeric) -> jax.Array:
    """[B, K] ``values[b, actions[b, k]]`` of ``[B, A]`` values, ``fill`` in empty slots."""
    taken = jnp.take_along_axis(values, jnp.maximum(actions, 0), axis=-1)
    return jnp.where(actions != EMPTY_SLOT, taken, jnp.asarray(fill, values.dtype))


def scatter_slots(values: jax.Array, actions: jax.Array, num_actions: int, fill: chex.Numeric = 0) -> jax.Array:
    """[B, A] with ``values[b, k]`` at action ``actions[b, k]`` and ``fill`` elsewhere (empty slots dropped)."""
    batch = jnp.arange(values.shape[0])[:, None]
    target = jnp.where(actions != EMPTY_SLOT, actions, num_actions)
    base = jnp.full((values.shape[0], num_actions), fill, values.dtype)
    return base.at[batch, target].set(values, mode="drop")


__all__ = ["EMPTY_SLOT", "PREFIX_BLOCK_WIDTH", "gather_slots", "inclusive_prefix_counts", "scatter_slots", "slot_actions"]
