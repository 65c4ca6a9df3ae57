"""Search-contempt (Joshi, 2025) as :class:`zerolab.api.SearchRules`.

The root's side to move is the *player*; nodes at odd depth (plies from the root) belong to the *opponent*.  With
C(s) = Σₐ N(s, a) the simulations that went from node s into a child:

1. even depth, the root included: the search kind's standard rule (Gumbel's or PUCT's), unchanged;
2. odd depth with C(s) < N_scl: the standard interior rule, called with the key it would get without contempt;
3. when a backup makes C(s) = N_scl, the visit distribution F(s, ·) = N(s, ·) is frozen (ΣF = N_scl);
4. odd depth with C(s) ≥ N_scl: a ~ Categorical(F(s, ·) / N_scl), drawn with the simulation's key; Q, priors and the
   current visits are ignored, so a child unvisited at freezing is never entered.

Step 4 follows the reference lc0 fork, which samples as soon as 1 + C(s) > ``ScLimit`` (the visits of the edge into
s exceed the limit); the paper's eq. 5 reads as PUCT while C ≤ N_scl, one more standard step.

The snapshot is kept as the first K = min(N_scl, num_simulations) actions taken from each node, in order
(``tree.extra_data.node_state``); their counts are F, so drawing one of the first N_scl uniformly is step 4 and costs
O(1).  Only the nodes on each simulation's path are updated.  ``sc_limit`` may be a traced value (a sweep over it
compiles once) when ``max_sc_limit`` bounds it statically; otherwise K comes from ``sc_limit`` itself.  With
N_scl ≥ num_simulations no node can freeze and the search equals the standard one bit for bit.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mctx

from zerolab.api import SearchConfig, SearchRules, selection_functions

UNRECORDED = -1


def validate_sc_limit(sc_limit) -> int:
    """``sc_limit`` as an int ≥ 1, or a ValueError naming the value and the range."""
    if isinstance(sc_limit, bool) or not isinstance(sc_limit, int) or sc_limit < 1:
        raise ValueError(f"sc_limit must be an integer from 1 to 1000000000, got {sc_limit!r}")
    return sc_limit


def record_path_actions(first_actions: jax.Array, parents: jax.Array, children_visits: jax.Array,
                        action_from_parent: jax.Array, leaf_index: jax.Array) -> jax.Array:
    """``first_actions`` [N, K] of one tree with this simulation's actions written in: for each node p on the path from
    the root to ``leaf_index``, the action taken from p goes to slot C(p) − 1 (C counted after the backup), if < K."""

    def has_parent(carry):
        _, node = carry
        return parents[node] != mctx.Tree.NO_PARENT

    def climb(carry):
        first_actions, node = carry
        parent = parents[node]
        slot = jnp.sum(children_visits[parent]) - 1
        first_actions = first_actions.at[parent, slot].set(action_from_parent[node], mode="drop")
        return first_actions, parent

    first_actions, _ = jax.lax.while_loop(has_parent, climb, (first_actions, jnp.asarray(leaf_index, jnp.int32)))
    return first_actions


def node_depths(parents: jax.Array) -> jax.Array:
    """[N] depth of each node of one tree (the root 0); a child's index is always above its parent's."""

    def set_depth(index, depths):
        parent = parents[index]
        return depths.at[index].set(jnp.where(parent >= 0, depths[jnp.maximum(parent, 0)] + 1, 0))

    return jax.lax.fori_loop(1, parents.shape[0], set_depth, jnp.zeros(parents.shape[0], jnp.int32))


def sampled_visit_fraction(tree: mctx.Tree, sc_limit) -> jax.Array:
    """[B] Σ_odd max(C − N_scl, 0) / Σ_odd C over the opponent nodes of each search (0 when they have no visits)."""
    depths = jax.vmap(node_depths)(tree.parents)
    opponent = (depths % 2 == 1) & (tree.parents != mctx.Tree.NO_PARENT)
    counts = jnp.sum(tree.children_visits, axis=-1)
    sampled = jnp.sum(jnp.where(opponent, jnp.maximum(counts - sc_limit, 0), 0), axis=-1)
    total = jnp.sum(jnp.where(opponent, counts, 0), axis=-1)
    return (sampled / jnp.maximum(total, 1)).astype(jnp.float32)


def contempt_rules(search_config: SearchConfig, sc_limit, max_sc_limit: int | None = None) -> SearchRules:
    """Search-contempt rules for ``search_config``'s kind with N_scl = ``sc_limit`` (see the module docstring).

    ``sc_limit``: a Python int ≥ 1, or a traced integer with a static bound ``max_sc_limit``.
    """
    if max_sc_limit is None:
        sc_limit = validate_sc_limit(sc_limit)
        bound = sc_limit
    else:
        bound = validate_sc_limit(max_sc_limit)
    slots = min(bound, search_config.num_simulations)
    _, standard_interior = selection_functions(search_config)

    def init_node_state(tree: mctx.Tree) -> jax.Array:
        return jnp.full(tree.node_visits.shape + (slots,), UNRECORDED, jnp.int32)

    def update_node_state(tree, parent_index, action, leaf_index):
        del parent_index, action
        return jax.vmap(record_path_actions)(tree.extra_data.node_state, tree.parents, tree.children_visits,
                                             tree.action_from_parent, leaf_index)

    def interior_action_selection_fn(key, tree, node_index, depth):
        standard = standard_interior(key, tree, node_index, depth)
        visits = jnp.sum(tree.children_visits[node_index])
        frozen = (depth % 2 == 1) & (visits >= sc_limit)
        slot = jax.random.randint(key, (), 0, jnp.minimum(sc_limit, slots))
        drawn = tree.extra_data.node_state[node_index, slot]
        return jnp.where(frozen, drawn, standard).astype(standard.dtype)

    return SearchRules(
        interior_action_selection_fn=interior_action_selection_fn,
        init_node_state=init_node_state,
        update_node_state=update_node_state,
        summary_fn=lambda tree: {"sampled_visit_fraction": sampled_visit_fraction(tree, sc_limit)},
    )
