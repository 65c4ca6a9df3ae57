"""The standard selection rules over a :class:`~zerolab.search.tree.Tree`'s slots: Gumbel MuZero's (sequential
halving at the root, the deterministic rule below), mctx's PUCT, with their Q transforms, and lc0's PUCT
(:func:`lc0_action_selection`: raw Q, a visit-dependent c, first-play urgency).

Each is mctx's function (``mctx._src.action_selection``, ``qtransforms``) written over a node's K slots and returning
a slot.  The numbers are mctx's: a dense tree's illegal actions have prior logit ``finfo.min`` and no visits, so they
drop out of every sum and softmax as empty slots do; where mctx's min/max of completed Q values includes the value
given to illegal actions, the slot version includes it whenever a node has fewer slots than A.  What may differ is the
order of float additions over K rather than A slots (a few ulps in a softmax), never which elements are summed.
PUCT's tie-breaking noise is mctx's own: :func:`slot_uniform` computes ``jax.random.uniform(key, (A,))`` at the
slots' actions only.

lc0's PUCT has no mctx counterpart to equal: it follows lc0's classic search (its documented parameters and their
defaults in ``src/search/classic/params.cc``, ``GetFpu`` and ``ComputeCpuct`` in ``search.cc``) on the same slots.

Selection functions have the signature ``(key, tree, node_index, depth) -> slot`` (:data:`SelectionFn`); the root's
receives ``depth = 0``.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry_2x32

# Sequential halving's schedule and score are pure functions of their arguments, the same over slots as over actions;
# mctx is pinned (==0.0.71) and the equivalence tests in tests/zerolab/test_search.py guard this use.
from mctx._src import seq_halving

from zerolab.search.slots import EMPTY_SLOT
from zerolab.search.tree import Tree


def slot_uniform(key: jax.Array, actions: jax.Array, num_actions: int) -> jax.Array:
    """[K] float32 ``jax.random.uniform(key, (num_actions,))[actions]``, computed for the K actions only.

    JAX's threefry generator (partitionable, the default) gives element i of a length-A draw from the counter
    ``(0, i)``, so one element costs one hash: K hashes, not A.  Other generators fall back to the full draw.
    """
    if jax.config.jax_threefry_partitionable and _is_threefry(key):
        key_words = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
        counters = jnp.concatenate([jnp.zeros(actions.shape, jnp.uint32), jnp.maximum(actions, 0).astype(jnp.uint32)])
        hashed = threefry_2x32((key_words[0], key_words[1]), counters)
        bits = hashed[:actions.shape[0]] ^ hashed[actions.shape[0]:]
        mantissa = jax.lax.shift_right_logical(bits, jnp.uint32(32 - 23)) | jnp.uint32(np.float32(1.0).view(np.uint32))
        return jax.lax.bitcast_convert_type(mantissa, jnp.float32) - jnp.float32(1.0)
    return jax.random.uniform(key, (num_actions,))[jnp.maximum(actions, 0)]


def _is_threefry(key: jax.Array) -> bool:
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return "threefry" in str(jax.random.key_impl(key))
    return key.shape == (2,) and "threefry" in jax.config.jax_default_prng_impl


def masked_argmax(to_argmax: jax.Array, valid: jax.Array) -> jax.Array:
    """The first slot with the highest ``to_argmax`` among the ``valid`` ones (mctx's ``masked_argmax``).

    ``jnp.argmax`` exactly (the first maximum; the first NaN if there is one; slot 0 if none is valid), computed as
    the first index equal to the maximum: two plain reductions, which XLA's CPU backend runs faster than argmax's
    reduction over (value, index) pairs.
    """
    masked = jnp.where(valid, to_argmax, -jnp.inf)
    top = jnp.max(masked, axis=-1, keepdims=True)  # NaN where some entry is NaN (XLA's max propagates it)
    index = jax.lax.broadcasted_iota(jnp.int32, masked.shape, masked.ndim - 1)
    first = (masked == top) | jnp.isnan(masked)
    return jnp.min(jnp.where(first, index, masked.shape[-1]), axis=-1).astype(jnp.int32)


def has_unslotted_actions(tree: Tree, node_index: chex.Numeric) -> jax.Array:
    """Whether some action of the space is in none of the node's slots (illegal, or beyond K)."""
    return jnp.sum(tree.children_actions[node_index] != EMPTY_SLOT) < tree.num_actions


def qtransform_by_parent_and_siblings(tree: Tree, node_index: chex.Numeric, epsilon: float = 1e-8) -> jax.Array:
    """[K] mctx's PUCT values: Q rescaled to [0, 1] over the node's value and its visited children, 0 unvisited."""
    qvalues = tree.qvalues(node_index)
    visited = tree.children_visits[node_index] > 0
    node_value = tree.node_values[node_index]
    safe_qvalues = jnp.where(visited, qvalues, node_value)
    min_value = jnp.minimum(node_value, jnp.min(safe_qvalues, axis=-1))
    max_value = jnp.maximum(node_value, jnp.max(safe_qvalues, axis=-1))
    completed_by_min = jnp.where(visited, qvalues, min_value)
    return (completed_by_min - min_value) / jnp.maximum(max_value - min_value, epsilon)


def mixed_value(raw_value: jax.Array, qvalues: jax.Array, visit_counts: jax.Array, prior_probs: jax.Array) -> jax.Array:
    """Gumbel MuZero's value of a node's unvisited children: its raw value mixed with its visited children's Q,
    weighted by their priors (Appendix D of "Policy improvement by planning with Gumbel")."""
    sum_visit_counts = jnp.sum(visit_counts, axis=-1)
    prior_probs = jnp.maximum(jnp.finfo(prior_probs.dtype).tiny, prior_probs)
    visited = visit_counts > 0
    sum_probs = jnp.sum(jnp.where(visited, prior_probs, 0.0), axis=-1)
    weighted_q = jnp.sum(jnp.where(visited, prior_probs * qvalues / jnp.where(visited, sum_probs, 1.0), 0.0), axis=-1)
    return (raw_value + sum_visit_counts * weighted_q) / (sum_visit_counts + 1)


def qtransform_completed_by_mix_value(tree: Tree, node_index: chex.Numeric, value_scale: float = 0.1,
                                      maxvisit_init: float = 50.0, epsilon: float = 1e-8) -> jax.Array:
    """[K] Gumbel MuZero's completed Q values: unvisited slots take the mixed value, all are rescaled to [0, 1]
    (the mixed value in the range whenever some action is unvisited, as illegal actions are in a dense tree) and
    scaled by ``(maxvisit_init + max visits) · value_scale``."""
    qvalues = tree.qvalues(node_index)
    visit_counts = tree.children_visits[node_index]
    prior_probs = jax.nn.softmax(tree.children_prior_logits[node_index])
    value = mixed_value(tree.raw_values[node_index], qvalues, visit_counts, prior_probs)
    completed = jnp.where(visit_counts > 0, qvalues, value)
    outside = has_unslotted_actions(tree, node_index)
    min_value = jnp.where(outside, jnp.minimum(jnp.min(completed), value), jnp.min(completed))
    max_value = jnp.where(outside, jnp.maximum(jnp.max(completed), value), jnp.max(completed))
    completed = (completed - min_value) / jnp.maximum(max_value - min_value, epsilon)
    return (maxvisit_init + jnp.max(visit_counts, axis=-1)) * value_scale * completed


def muzero_action_selection(key: jax.Array, tree: Tree, node_index: chex.Numeric, depth: chex.Numeric, *,
                            pb_c_init: float = 1.25, pb_c_base: float = 19652.0) -> jax.Array:
    """mctx's PUCT: ``Q̂ + √N · (c₁ + ln((N + c₂ + 1) / c₂)) · P / (1 + n)`` plus 1e-7 uniform noise, over the node's
    occupied slots (Appendix B of the MuZero paper)."""
    del depth
    visit_counts = tree.children_visits[node_index]
    node_visit = tree.node_visits[node_index]
    pb_c = pb_c_init + jnp.log((node_visit + pb_c_base + 1.0) / pb_c_base)
    prior_probs = jax.nn.softmax(tree.children_prior_logits[node_index])
    policy_score = jnp.sqrt(node_visit) * pb_c * prior_probs / (visit_counts + 1)
    value_score = qtransform_by_parent_and_siblings(tree, node_index)
    actions = tree.children_actions[node_index]
    noise = 1e-7 * slot_uniform(key, actions, tree.num_actions)
    return masked_argmax(value_score + policy_score + noise, actions != EMPTY_SLOT)


def gumbel_muzero_root_action_selection(key: jax.Array, tree: Tree, node_index: chex.Numeric, *, num_simulations: int,
                                        max_num_considered_actions: int) -> jax.Array:
    """Sequential halving with Gumbel at the root: among the slots with the visit count the schedule considers now,
    the highest ``gumbel + logits + completed Q`` (``tree.extra_data.root_gumbel`` [K])."""
    del key
    visit_counts = tree.children_visits[node_index]
    valid = tree.children_actions[node_index] != EMPTY_SLOT
    completed_qvalues = qtransform_completed_by_mix_value(tree, node_index)
    table = jnp.array(seq_halving.get_table_of_considered_visits(max_num_considered_actions, num_simulations))
    num_considered = jnp.minimum(max_num_considered_actions, jnp.sum(valid).astype(jnp.int32))
    considered_visit = table[num_considered, jnp.sum(visit_counts)]
    to_argmax = seq_halving.score_considered(considered_visit, tree.extra_data.root_gumbel,
                                             tree.children_prior_logits[node_index], completed_qvalues, visit_counts)
    return masked_argmax(to_argmax, valid)


def gumbel_muzero_interior_action_selection(key: jax.Array, tree: Tree, node_index: chex.Numeric,
                                            depth: chex.Numeric) -> jax.Array:
    """Gumbel MuZero's deterministic rule below the root: visits follow ``softmax(logits + completed Q)``."""
    del key, depth
    visit_counts = tree.children_visits[node_index]
    completed_qvalues = qtransform_completed_by_mix_value(tree, node_index)
    probs = jax.nn.softmax(tree.children_prior_logits[node_index] + completed_qvalues)
    to_argmax = probs - visit_counts / (1 + jnp.sum(visit_counts, keepdims=True, axis=-1))
    return masked_argmax(to_argmax, tree.children_actions[node_index] != EMPTY_SLOT)


def lc0_puct_scores(tree: Tree, node_index: chex.Numeric, *, cpuct: float = 1.745, cpuct_base: float = 38739.0,
                    cpuct_factor: float = 3.894, fpu_reduction: float = 0.330) -> jax.Array:
    """[K] lc0's PUCT score ``Q + U`` of a node's slots (lc0's classic search at its default parameters, draw
    score 0, no moves-left utility).

    * Q: a visited child's raw ``reward + discount · value`` in [−1, 1], from the node's player's view (no rescaling);
      an unvisited child's first-play urgency ``V − fpu_reduction · √(Σ P of the visited children)``, V the node's
      searched value from its player's view (lc0's ``GetFpu`` with ``FpuStrategy=reduction``; the root is no
      exception, as lc0's ``FpuStrategyAtRoot=same``).
    * U: ``c(N) · P · √max(Σ children visits, 1) / (1 + n)`` with ``c(N) = cpuct + cpuct_factor · ln((N + cpuct_base)
      / cpuct_base)`` (lc0's ``ComputeCpuct``), N the node's visits (its own expansion plus its children's visits),
      n the child's visits, P the softmax of the slots' prior logits (empty slots: 0).

    Empty slots get scores too (P = 0, the first-play value); :func:`lc0_action_selection` masks them.
    """
    visit_counts = tree.children_visits[node_index]
    visited = visit_counts > 0
    prior_probs = jax.nn.softmax(tree.children_prior_logits[node_index])
    dtype = prior_probs.dtype
    node_visit = tree.node_visits[node_index].astype(dtype)
    exploration = cpuct + cpuct_factor * jnp.log((node_visit + cpuct_base) / cpuct_base)
    children_visits = jnp.sum(visit_counts).astype(dtype)
    policy_score = exploration * prior_probs * jnp.sqrt(jnp.maximum(children_visits, 1.0)) / (1.0 + visit_counts)
    visited_policy = jnp.sum(jnp.where(visited, prior_probs, 0.0))
    first_play = tree.node_values[node_index] - fpu_reduction * jnp.sqrt(visited_policy)
    value_score = jnp.where(visited, tree.qvalues(node_index), first_play)
    return value_score + policy_score


def lc0_action_selection(key: jax.Array, tree: Tree, node_index: chex.Numeric, depth: chex.Numeric, *,
                         cpuct: float = 1.745, cpuct_base: float = 38739.0, cpuct_factor: float = 3.894,
                         fpu_reduction: float = 0.330) -> jax.Array:
    """lc0's PUCT (:func:`lc0_puct_scores`) over the node's occupied slots, at the root and below (lc0's defaults
    give the root the same parameters).  Deterministic, without mctx's 1e-7 noise (``key`` is unused): of equal
    scores the first slot wins, i.e. the lowest action id (lc0 keeps the first of equal scores in its edge order,
    which sorts edges by prior; equal scores with unequal priors need equal-and-opposite Q differences)."""
    del key, depth
    scores = lc0_puct_scores(tree, node_index, cpuct=cpuct, cpuct_base=cpuct_base, cpuct_factor=cpuct_factor,
                             fpu_reduction=fpu_reduction)
    return masked_argmax(scores, tree.children_actions[node_index] != EMPTY_SLOT)
