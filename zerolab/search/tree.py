"""The search tree over legal moves: each node keeps K slots, one a legal action, instead of one per action.

mctx's tree is dense over the action space: every node carries ``[A]`` children arrays (4,672 for chess) although a
position has about 35 legal moves.  :class:`Tree` keeps, for each of its N nodes, K *slots* — K is the game's most
legal actions in any position (:attr:`zerolab.games.Game.max_legal_actions`: chess 218, Gardner 128; 7×7 Go keeps
K = A) — and each slot's action id in ``children_actions``.  A node's slots are its legal actions in increasing action
order, filled once when the node is expanded (:func:`zerolab.search.slots.slot_actions`); unused slots hold
:data:`~zerolab.search.slots.EMPTY_SLOT`.  With K = A the slot of an action is the action itself (the dense layout,
mctx's arrays exactly).

Everything else is mctx's tree and loop (``mctx._src.search``), written over slots: :func:`instantiate_tree`,
:func:`simulate`, :func:`expand`, :func:`standard_backup` (mctx's running mean, the tree written once per simulation)
and :func:`root_visit_counts`.  Selection functions (:mod:`zerolab.search.selection`) return a *slot*; the loop turns
it into an action through ``children_actions`` before calling the game.

pgx marks every action legal in a finished game, so a terminal node's slots are its first K actions: what lies below
a terminal node is worth 0 (discount 0) whichever actions are there, so no value or visit count above it changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import flax.struct
import jax
import jax.numpy as jnp

from zerolab.search.slots import EMPTY_SLOT, gather_slots, scatter_slots, slot_actions

ROOT_INDEX = 0
NO_PARENT = -1
UNVISITED = -1


@chex.dataclass(frozen=True)
class RecurrentOutput:
    """What the search learns from one step into a new node (mctx's ``RecurrentFnOutput`` plus the legal moves).

    Attributes:
      reward: [B] the reward of the step, to the player who moved.
      discount: [B] −1 between two-player nodes, 0 once the game has ended.
      prior_logits: [B, A] the new node's prior logits (illegal actions at the dtype's minimum).
      value: [B] the new node's value, to its player to move.
      legal_action_mask: [B, A] the new node's legal actions (its slots).
    """

    reward: jax.Array
    discount: jax.Array
    prior_logits: jax.Array
    value: jax.Array
    legal_action_mask: jax.Array


RecurrentFn = Callable[[Any, jax.Array, jax.Array, Any], tuple[RecurrentOutput, Any]]
"""``(params, key, action [B], embedding [B, ...]) -> (RecurrentOutput, new embedding [B, ...])``."""


@flax.struct.dataclass
class Tree:
    """A batch of search trees with N = simulations + 1 nodes of K slots each.

    Attributes:
      node_visits: [B, N] visits of each node.
      raw_values: [B, N] the network's value of each node.
      node_values: [B, N] the searched value of each node (running mean of its backups).
      parents: [B, N] each node's parent (:data:`NO_PARENT` for the root and unused nodes).
      action_from_parent: [B, N] the action that leads to each node.
      slot_from_parent: [B, N] the slot of that action in the parent.
      children_actions: [B, N, K] each slot's action id (:data:`EMPTY_SLOT` where a node has fewer legal actions).
      children_index: [B, N, K] the node a slot leads to (:data:`UNVISITED` before it is expanded).
      children_prior_logits: [B, N, K] prior logits (empty slots at the dtype's minimum).
      children_visits, children_values, children_rewards, children_discounts: [B, N, K] as in mctx's tree.
      embeddings: [B, N, ...] what the recurrent function needs to step from each node.
      extra_data: what the search keeps beside the tree (the root's Gumbel noise [B, K], the rules' node state).
      num_actions: A, the size of the action space (static).
    """

    node_visits: jax.Array
    raw_values: jax.Array
    node_values: jax.Array
    parents: jax.Array
    action_from_parent: jax.Array
    slot_from_parent: jax.Array
    children_actions: jax.Array
    children_index: jax.Array
    children_prior_logits: jax.Array
    children_visits: jax.Array
    children_values: jax.Array
    children_rewards: jax.Array
    children_discounts: jax.Array
    embeddings: Any
    extra_data: Any = None
    num_actions: int = flax.struct.field(pytree_node=False, default=0)

    ROOT_INDEX = ROOT_INDEX
    NO_PARENT = NO_PARENT
    UNVISITED = UNVISITED

    @property
    def num_slots(self) -> int:
        """K, the slots of a node."""
        return self.children_actions.shape[-1]

    @property
    def num_simulations(self) -> int:
        return self.node_visits.shape[-1] - 1

    @property
    def children_valid(self) -> jax.Array:
        """[..., N, K] whether each slot holds an action."""
        return self.children_actions != EMPTY_SLOT

    def qvalues(self, node_index: chex.Numeric) -> jax.Array:
        """[K] ``reward + discount · value`` of a node's slots, in an unbatched tree."""
        return (self.children_rewards[node_index]
                + self.children_discounts[node_index] * self.children_values[node_index])


"""The block width of :func:`inclusive_prefix_counts`: chess (A = 4,672) recurses twice, Gardner (1,225) once.
Widths 8 to 32 measured alike on chess, where the two-level sum it replaced (blocks of √A) did 69 multiply-adds an
action; on Gardner 32 keeps that sum's two products."""


def minimum_logit(dtype) -> jax.Array:
    return jnp.asarray(jnp.finfo(dtype).min, dtype)


#: Fields :func:`instantiate_tree` keeps per node and per slot (4 bytes each: int32 or float32).
NODE_FIELDS, SLOT_FIELDS = 6, 7


def tree_bytes(num_simulations: int, num_slots: int, embedding_bytes: int) -> int:
    """Bytes of one game's tree as :func:`instantiate_tree` makes it (float32 values, no ``extra_data``):
    ``num_simulations + 1`` nodes, each with its node fields, ``num_slots`` slots and an embedding of
    ``embedding_bytes``.  What a search cannot do without, for checking a config before anything is compiled."""
    return (num_simulations + 1) * (4 * NODE_FIELDS + 4 * SLOT_FIELDS * num_slots + embedding_bytes)


def instantiate_tree(prior_logits: jax.Array, value: jax.Array, embedding: Any, legal_action_mask: jax.Array,
                     num_simulations: int, num_slots: int, extra_data: Any = None) -> Tree:
    """An empty tree of ``num_simulations + 1`` nodes with the root expanded: its slots from ``legal_action_mask``
    [B, A] and their priors from ``prior_logits`` [B, A] (mctx's ``instantiate_tree_from_root``)."""
    batch_size, num_actions = prior_logits.shape
    num_nodes = num_simulations + 1
    nodes, slots = (batch_size, num_nodes), (batch_size, num_nodes, num_slots)
    data_dtype = value.dtype

    def zeros(leaf):
        return jnp.zeros(nodes + leaf.shape[1:], leaf.dtype)

    tree = Tree(
        node_visits=jnp.zeros(nodes, jnp.int32),
        raw_values=jnp.zeros(nodes, data_dtype),
        node_values=jnp.zeros(nodes, data_dtype),
        parents=jnp.full(nodes, NO_PARENT, jnp.int32),
        action_from_parent=jnp.full(nodes, NO_PARENT, jnp.int32),
        slot_from_parent=jnp.full(nodes, NO_PARENT, jnp.int32),
        children_actions=jnp.full(slots, EMPTY_SLOT, jnp.int32),
        children_index=jnp.full(slots, UNVISITED, jnp.int32),
        children_prior_logits=jnp.zeros(slots, prior_logits.dtype),
        children_visits=jnp.zeros(slots, jnp.int32),
        children_values=jnp.zeros(slots, data_dtype),
        children_rewards=jnp.zeros(slots, data_dtype),
        children_discounts=jnp.zeros(slots, data_dtype),
        embeddings=jax.tree.map(zeros, embedding),
        extra_data=extra_data,
        num_actions=num_actions,
    )
    root = jnp.full((batch_size,), ROOT_INDEX, jnp.int32)
    return update_node(tree, root, prior_logits, value, embedding, legal_action_mask)


def update_node(tree: Tree, node_index: jax.Array, prior_logits: jax.Array, value: jax.Array, embedding: Any,
                legal_action_mask: jax.Array) -> Tree:
    """The tree with node ``node_index`` [B] (new, or expanded again at the depth limit) evaluated: its slots, their
    priors, its raw and searched value, one more visit and its embedding (mctx's ``update_tree_node``)."""
    batch = jnp.arange(node_index.shape[0])
    actions = slot_actions(legal_action_mask, tree.num_slots)
    priors = gather_slots(prior_logits, actions, minimum_logit(prior_logits.dtype))
    return tree.replace(
        children_actions=tree.children_actions.at[batch, node_index].set(actions),
        children_prior_logits=tree.children_prior_logits.at[batch, node_index].set(priors),
        raw_values=tree.raw_values.at[batch, node_index].set(value),
        node_values=tree.node_values.at[batch, node_index].set(value),
        node_visits=tree.node_visits.at[batch, node_index].add(1),
        embeddings=jax.tree.map(lambda nodes, new: nodes.at[batch, node_index].set(new), tree.embeddings, embedding),
    )


SelectionFn = Callable[[jax.Array, Tree, chex.Numeric, chex.Numeric], chex.Numeric]
"""``(key, unbatched tree, node_index, depth) -> slot``: the root's rule at depth 0, the interior rule below."""


class SimulationState(NamedTuple):
    key: jax.Array
    node_index: jax.Array
    slot: jax.Array
    next_node_index: jax.Array
    depth: jax.Array
    is_continuing: jax.Array


def simulate(key: jax.Array, tree: Tree, root_select: SelectionFn, interior_select: SelectionFn,
             max_depth: int) -> tuple[jax.Array, jax.Array]:
    """``(node_index, slot)`` of one unbatched tree: the walk from the root, one selection per level with mctx's key
    splits (``root_select`` at depth 0, ``interior_select`` below), to the first unexpanded slot or ``max_depth``
    (mctx's ``simulate``).  The root's level runs before the loop, so each level of the loop runs one rule (mctx's
    switch between the two runs both under ``vmap``)."""

    def step(state: SimulationState, select: SelectionFn) -> SimulationState:
        node_index = state.next_node_index
        key, selection_key = jax.random.split(state.key)
        slot = jnp.asarray(select(selection_key, tree, node_index, state.depth), jnp.int32)
        next_node_index = tree.children_index[node_index, slot]
        depth = state.depth + 1
        is_continuing = (next_node_index != UNVISITED) & (depth < max_depth)
        return SimulationState(key, node_index, slot, next_node_index, depth, is_continuing)

    start = SimulationState(key=key, node_index=jnp.asarray(NO_PARENT, jnp.int32), slot=jnp.asarray(NO_PARENT, jnp.int32),
                            next_node_index=jnp.asarray(ROOT_INDEX, jnp.int32), depth=jnp.zeros((), jnp.int32),
                            is_continuing=jnp.asarray(True))
    below_root = step(start, root_select)
    end = jax.lax.while_loop(lambda state: state.is_continuing, lambda state: step(state, interior_select), below_root)
    return end.node_index, end.slot


def expand(params: Any, key: jax.Array, tree: Tree, recurrent_fn: RecurrentFn, parent_index: jax.Array,
           slot: jax.Array, next_node_index: jax.Array) -> Tree:
    """The tree with the action in ``slot`` of ``parent_index`` [B] stepped into and evaluated as node
    ``next_node_index`` [B] (mctx's ``expand``)."""
    batch = jnp.arange(parent_index.shape[0])
    action = tree.children_actions[batch, parent_index, slot]
    embedding = jax.tree.map(lambda nodes: nodes[batch, parent_index], tree.embeddings)
    step, embedding = recurrent_fn(params, key, action, embedding)
    chex.assert_shape(step.prior_logits, (parent_index.shape[0], tree.num_actions))
    tree = update_node(tree, next_node_index, step.prior_logits, step.value, embedding, step.legal_action_mask)
    return tree.replace(
        children_index=tree.children_index.at[batch, parent_index, slot].set(next_node_index),
        children_rewards=tree.children_rewards.at[batch, parent_index, slot].set(step.reward),
        children_discounts=tree.children_discounts.at[batch, parent_index, slot].set(step.discount),
        parents=tree.parents.at[batch, next_node_index].set(parent_index),
        action_from_parent=tree.action_from_parent.at[batch, next_node_index].set(action),
        slot_from_parent=tree.slot_from_parent.at[batch, next_node_index].set(slot),
    )


def standard_backup(tree: Tree, leaf_index: chex.Numeric) -> Tree:
    """mctx's backup on one unbatched tree: each ancestor's value is the running mean of ``r + discount · v``.

    The same arithmetic as mctx's ``backward``, in the same order, but the tree is written once: the loop climbs the
    path computing each ancestor's new value into small per-level buffers, and one scatter per array writes them (a
    node appears at most once on a path).  mctx writes the whole tree at every level of its loop.
    """
    leaf_index = jnp.asarray(leaf_index, dtype=jnp.int32)
    num_nodes = tree.parents.shape[0]  # a path has fewer levels; index num_nodes marks unused ones (dropped)

    def has_parent(loop_state):
        return loop_state[0] != ROOT_INDEX

    def climb(loop_state):
        index, node_value, leaf_value, level, path = loop_state
        parent = tree.parents[index]
        count = tree.node_visits[parent]
        slot = tree.slot_from_parent[index]
        leaf_value = tree.children_rewards[parent, slot] + tree.children_discounts[parent, slot] * leaf_value
        parent_value = (tree.node_values[parent] * count + leaf_value) / (count + 1.0)
        parents, slots, parent_values, child_values = path
        path = (parents.at[level].set(parent), slots.at[level].set(slot),
                parent_values.at[level].set(parent_value), child_values.at[level].set(node_value))
        return parent, parent_value, leaf_value, level + 1, path

    value = tree.node_values[leaf_index]
    empty_path = (jnp.full(num_nodes, num_nodes, jnp.int32), jnp.zeros(num_nodes, jnp.int32),
                  jnp.zeros(num_nodes, tree.node_values.dtype), jnp.zeros(num_nodes, tree.node_values.dtype))
    *_, (parents, slots, parent_values, child_values) = jax.lax.while_loop(
        has_parent, climb, (leaf_index, value, value, 0, empty_path))
    return tree.replace(
        node_values=tree.node_values.at[parents].set(parent_values, mode="drop"),
        node_visits=tree.node_visits.at[parents].add(1, mode="drop"),
        children_values=tree.children_values.at[parents, slots].set(child_values, mode="drop"),
        children_visits=tree.children_visits.at[parents, slots].add(1, mode="drop"),
    )


def root_prior_logits(tree: Tree) -> jax.Array:
    """[B, A] the root's prior logits over the action space (the dtype's minimum outside its slots)."""
    priors = tree.children_prior_logits[:, ROOT_INDEX]
    return scatter_slots(priors, tree.children_actions[:, ROOT_INDEX], tree.num_actions, minimum_logit(priors.dtype))


def root_visit_counts(tree: Tree) -> jax.Array:
    """[B, A] float: the root's visit counts over the action space (mctx's ``summary().visit_counts``)."""
    visits = tree.children_visits[:, ROOT_INDEX].astype(tree.node_values.dtype)
    return scatter_slots(visits, tree.children_actions[:, ROOT_INDEX], tree.num_actions)


def subtree(tree: Tree, node_index: jax.Array) -> tuple[Tree, jax.Array]:
    """Each tree of a batch cut down to the subtree below ``node_index`` [B] (a node in use): that node becomes the
    root (index 0, no parent), its descendants keep their order and are renumbered after it, every other node is
    emptied; and [B] the nodes kept (the first free node: :func:`zerolab.search.mcts.simulate_into` goes on there).

    What lies below a node is its search as it was — visits, values, priors, embeddings — so a search of the
    position that node stands for starts with those visits (a tree kept between moves).  ``extra_data`` leaves whose
    first axis (after the batch) is the node axis are renumbered with the nodes; other leaves are kept as they are.
    Nodes are always numbered after their parent, so one pass in node order finds the descendants."""
    num_nodes = tree.parents.shape[-1]

    def one(tree: Tree, root: jax.Array) -> tuple[Tree, jax.Array]:
        def mark(index, keep):
            parent = tree.parents[index]
            inside = (index == root) | ((parent >= 0) & keep[jnp.maximum(parent, 0)])
            return keep.at[index].set(inside)

        keep = jax.lax.fori_loop(0, num_nodes, mark, jnp.zeros(num_nodes, bool))
        count = jnp.sum(keep).astype(jnp.int32)
        renumbered = jnp.where(keep, jnp.cumsum(keep) - 1, UNVISITED).astype(jnp.int32)
        source = jnp.argsort(~keep, stable=True)  # new node j is old node source[j] (j < count)
        used = jnp.arange(num_nodes) < count

        def nodes(values, empty):
            taken = values[source]
            mask = used.reshape((-1,) + (1,) * (taken.ndim - 1))
            return jnp.where(mask, taken, jnp.asarray(empty, values.dtype))

        def renumber(indices):
            return jnp.where(indices >= 0, renumbered[jnp.maximum(indices, 0)], indices)

        is_root = jnp.arange(num_nodes) == 0
        parents = jnp.where(is_root, NO_PARENT, renumber(nodes(tree.parents, NO_PARENT)))
        extra = jax.tree.map(lambda leaf: leaf[source] if getattr(leaf, "ndim", 0) >= 1 and leaf.shape[0] == num_nodes
                             else leaf, tree.extra_data)
        cut = tree.replace(
            node_visits=nodes(tree.node_visits, 0),
            raw_values=nodes(tree.raw_values, 0),
            node_values=nodes(tree.node_values, 0),
            parents=parents,
            action_from_parent=jnp.where(is_root, NO_PARENT, nodes(tree.action_from_parent, NO_PARENT)),
            slot_from_parent=jnp.where(is_root, NO_PARENT, nodes(tree.slot_from_parent, NO_PARENT)),
            children_actions=nodes(tree.children_actions, EMPTY_SLOT),
            children_index=renumber(nodes(tree.children_index, UNVISITED)),
            children_prior_logits=nodes(tree.children_prior_logits, 0),
            children_visits=nodes(tree.children_visits, 0),
            children_values=nodes(tree.children_values, 0),
            children_rewards=nodes(tree.children_rewards, 0),
            children_discounts=nodes(tree.children_discounts, 0),
            embeddings=jax.tree.map(lambda leaf: leaf[source], tree.embeddings),
            extra_data=extra,
        )
        return cut, count

    return jax.vmap(one)(tree, jnp.asarray(node_index, jnp.int32))


def child_index(tree: Tree, node_index: jax.Array, action: jax.Array) -> jax.Array:
    """[B] the node that ``action`` [B] leads to from ``node_index`` [B], :data:`UNVISITED` when the search never
    expanded it (or it is not a move there)."""
    batch = jnp.arange(tree.parents.shape[0])
    actions = tree.children_actions[batch, node_index]
    found = actions == action[:, None]
    slot = jnp.argmax(found, axis=-1)
    index = tree.children_index[batch, node_index, slot]
    return jnp.where(jnp.any(found, axis=-1), index, UNVISITED)
