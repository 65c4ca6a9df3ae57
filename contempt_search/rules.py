"""Search-contempt (Joshi, 2025) as :class:`zerolab.SearchRules`.

The root's side to move is the *player*; nodes at odd depth (plies from the root) belong to the *opponent*.  With
C(s) = Σₐ N(s, a) the simulations that went from node s into a child:

1. even depth, the root included: the search kind's standard rule (Gumbel's or PUCT's), unchanged;
2. odd depth with C(s) < N_scl: the standard interior rule, called with the key it would get without contempt;
3. when a backup makes C(s) = N_scl, the visit distribution F(s, ·) = N(s, ·) is frozen (ΣF = N_scl);
4. odd depth with C(s) ≥ N_scl: a ~ Categorical(F(s, ·) / N_scl), drawn with the simulation's key; Q, priors and the
   current visits are ignored, so a child unvisited at freezing is never entered.

Step 4 follows the reference lc0 fork, which samples as soon as 1 + C(s) > ``ScLimit`` (the visits of the edge into
s exceed the limit); the paper's eq. 5 reads as PUCT while C ≤ N_scl, one more standard step.

The snapshot is kept as the first M = min(N_scl, num_simulations) slots taken from each node of the search's
compact tree, in order (:class:`ContemptNodeState` in ``tree.extra_data.node_state``); their counts are F, so drawing
one of the first N_scl uniformly is step 4 and costs O(1).  C(s) and each node's depth are kept there too, so no step sums a node's
children.  Only the nodes on each simulation's path are updated.  ``sc_limit`` may be a traced value (a sweep over it
compiles once) when ``max_sc_limit`` bounds it statically; otherwise K comes from ``sc_limit`` itself.  With
N_scl ≥ num_simulations no node can freeze and the search equals the standard one bit for bit.
"""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp

from zerolab import SearchConfig, SearchRules, Tree
from zerolab.search import selection_functions

UNRECORDED = -1


def validate_sc_limit(sc_limit) -> int:
    """``sc_limit`` as an int ≥ 1, or a ValueError naming the value and the range."""
    if isinstance(sc_limit, bool) or not isinstance(sc_limit, int) or sc_limit < 1:
        raise ValueError(f"sc_limit must be an integer from 1 to 1000000000, got {sc_limit!r}")
    return sc_limit


@flax.struct.dataclass
class ContemptNodeState:
    """What the rules keep per node, in ``tree.extra_data.node_state`` (leaves ``[B, N, ...]``).

    Attributes:
      first_slots: [B, N, M] the slots of the first M actions taken from each node, in order (``UNRECORDED`` after
        them); ``tree.children_actions`` names their actions.
      child_visits: [B, N] C(s) = Σₐ N(s, a), kept equal to the tree's ``children_visits`` sums (so that reading it
        costs O(1), not O(K)).
      depth: [B, N] plies from the root (the root and nodes not yet in the tree: 0).
    """

    first_slots: jax.Array
    child_visits: jax.Array
    depth: jax.Array


def record_path_slots(first_slots: jax.Array, child_visits: jax.Array, parents: jax.Array,
                      slot_from_parent: jax.Array, leaf_index: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(first_slots [N, M], child_visits [N])`` of one tree after a simulation to ``leaf_index``: for each node p
    on its path, the slot taken from p is recorded at position C(p) (counted before this simulation), if < M, and
    C(p) grows by one."""

    def has_parent(carry):
        _, _, node = carry
        return parents[node] != Tree.NO_PARENT

    def climb(carry):
        first_slots, child_visits, node = carry
        parent = parents[node]
        first_slots = first_slots.at[parent, child_visits[parent]].set(slot_from_parent[node], mode="drop")
        return first_slots, child_visits.at[parent].add(1), parent

    first_slots, child_visits, _ = jax.lax.while_loop(
        has_parent, climb, (first_slots, child_visits, jnp.asarray(leaf_index, jnp.int32)))
    return first_slots, child_visits


def sampled_visit_fraction(node_state: ContemptNodeState, sc_limit) -> jax.Array:
    """[B] Σ_odd max(C − N_scl, 0) / Σ_odd C over the opponent nodes of each search (0 when they have no visits)."""
    opponent = node_state.depth % 2 == 1  # nodes not in the tree have depth 0
    counts = node_state.child_visits
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
    snapshot_size = min(bound, search_config.num_simulations)
    _, standard_interior = selection_functions(search_config)

    def init_node_state(tree) -> ContemptNodeState:
        nodes = tree.node_visits.shape
        return ContemptNodeState(first_slots=jnp.full(nodes + (snapshot_size,), UNRECORDED, jnp.int32),
                                 child_visits=jnp.zeros(nodes, jnp.int32), depth=jnp.zeros(nodes, jnp.int32))

    def update_node_state(tree, parent_index, slot, leaf_index):
        del slot
        state = tree.extra_data.node_state
        first_slots, child_visits = jax.vmap(record_path_slots)(
            state.first_slots, state.child_visits, tree.parents, tree.slot_from_parent, leaf_index)
        batch = jnp.arange(leaf_index.shape[0])
        depth = state.depth.at[batch, leaf_index].set(state.depth[batch, parent_index] + 1)
        return ContemptNodeState(first_slots=first_slots, child_visits=child_visits, depth=depth)

    def interior_action_selection_fn(key, tree, node_index, depth):
        standard = standard_interior(key, tree, node_index, depth)
        state = tree.extra_data.node_state
        frozen = (depth % 2 == 1) & (state.child_visits[node_index] >= sc_limit)
        draw = jax.random.randint(key, (), 0, jnp.minimum(sc_limit, snapshot_size))
        drawn = state.first_slots[node_index, draw]
        return jnp.where(frozen, drawn, standard).astype(standard.dtype)

    return SearchRules(
        interior_action_selection_fn=interior_action_selection_fn,
        init_node_state=init_node_state,
        update_node_state=update_node_state,
        summary_fn=lambda tree: {"sampled_visit_fraction": sampled_visit_fraction(tree.extra_data.node_state,
                                                                                  sc_limit)},
    )
