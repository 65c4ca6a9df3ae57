"""What a search found, read from its tree for a front end: one search's :class:`SearchResult`, several searches of one
position :func:`combined` (root parallelisation), the principal variation, node depths and MultiPV lines of a tree
(:func:`tree_summary`, :func:`root_lines`: jittable, over :class:`zerolab.search.tree.Tree`), and a value as
centipawns (:func:`value_to_centipawns`).  The UCI search engine (:mod:`zerolab.frontends.uci_search`) and the JSON
analysis engine (:mod:`zerolab.frontends.analysis`) report through these.  JAX is imported where a tree is read, so
the module itself imports none.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def value_to_centipawns(value: float) -> int:
    """lc0's legacy map from an expected score Q in [-1, 1] to centipawns: ``290.68 · tan(1.548 · Q)``."""
    value = float(np.clip(value, -0.99, 0.99))
    return int(round(290.680623072 * math.tan(1.548090806 * value)))


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """One search of one position, on the host.

    Attributes:
      simulations: its simulations (0: the network's policy alone).
      action: the move it chose (pgx action).
      value: the root's searched value, to the side to move.
      visit_counts: [A] the root's visit counts.
      principal_variation: actions from the root, the chosen one first, then the most visited child at each node.
      mean_depth: the mean depth of the tree's nodes (each simulation adds one node: its leaf).
      max_depth: the deepest node.
      seconds: the time the search took (its compilation excluded).
    """

    simulations: int
    action: int
    value: float
    visit_counts: np.ndarray
    principal_variation: tuple[int, ...]
    mean_depth: float
    max_depth: int
    seconds: float


def combined(results: Sequence[SearchResult]) -> SearchResult:
    """Several searches of one position as one (root parallelisation): the visit counts added, the move the most
    visited in all (ties: the move of the largest search), the value weighted by simulations, the principal variation
    of the largest search that chose that move, the depths of all nodes."""
    if len(results) == 1:
        return results[0]
    largest = sorted(results, key=lambda result: -result.simulations)
    visits = np.sum([result.visit_counts for result in results], axis=0)
    best = visits.max()
    action = next((result.action for result in largest if visits[result.action] == best), int(np.argmax(visits)))
    simulations = sum(result.simulations for result in results)
    weights = [max(result.simulations, 1) for result in results]
    choosing = [result for result in largest if result.action == action]
    return SearchResult(
        simulations=simulations,
        action=int(action),
        value=float(np.average([result.value for result in results], weights=weights)),
        visit_counts=visits,
        principal_variation=choosing[0].principal_variation if choosing else (int(action),),
        mean_depth=float(np.average([result.mean_depth for result in results], weights=weights)),
        max_depth=max(result.max_depth for result in results),
        seconds=sum(result.seconds for result in results),
    )


def tree_depths(tree: Any) -> tuple[Any, Any]:
    """``(mean node depth, max node depth)`` of one unbatched search tree, jittable: a node's depth is its parent's
    plus one (nodes are numbered after their parents), the mean over the nodes below the root."""
    import jax
    import jax.numpy as jnp

    nodes = tree.parents.shape[0]

    def depth_of(index, depths):
        parent = tree.parents[index]
        return depths.at[index].set(jnp.where(parent >= 0, depths[jnp.maximum(parent, 0)] + 1, 0))

    depths = jax.lax.fori_loop(1, nodes, depth_of, jnp.zeros(nodes, jnp.int32))
    in_tree = tree.parents >= 0
    return jnp.sum(jnp.where(in_tree, depths, 0)) / jnp.maximum(jnp.sum(in_tree), 1), jnp.max(depths)


def principal_variation(tree: Any, action: Any, length: int) -> Any:
    """[length] actions (-1 padded) of one unbatched search tree, jittable: ``action`` from the root, then the most
    visited child at each node while there is one."""
    import jax
    import jax.numpy as jnp

    root_slot = jnp.argmax(tree.children_actions[tree.ROOT_INDEX] == action)
    start = tree.children_index[tree.ROOT_INDEX, root_slot]

    def follow(index, carry):
        node, variation = carry
        inside = node != tree.UNVISITED
        visits = tree.children_visits[jnp.maximum(node, 0)]
        slot = jnp.argmax(visits)
        going_on = inside & (visits[slot] > 0)
        variation = variation.at[index].set(jnp.where(going_on, tree.children_actions[jnp.maximum(node, 0), slot], -1))
        return jnp.where(going_on, tree.children_index[jnp.maximum(node, 0), slot], tree.UNVISITED), variation

    variation = jnp.full(length, -1, jnp.int32).at[0].set(action)
    _, variation = jax.lax.fori_loop(1, length, follow, (start, variation))
    return variation


def tree_summary(tree: Any, action: Any, length: int) -> tuple[Any, Any, Any]:
    """``(principal variation [length] (-1 padded), mean node depth, max node depth)`` of one unbatched search tree
    (:class:`zerolab.search.tree.Tree`), jittable: :func:`principal_variation` from ``action`` and
    :func:`tree_depths`."""
    return (principal_variation(tree, action, length), *tree_depths(tree))


def root_lines(tree: Any, count: int, length: int) -> tuple[Any, ...]:
    """The ``count`` best root moves of one unbatched tree, jittable: most visited first (ties: the higher prior;
    fewer when fewer are legal, -1 after them), each with its visits, its Q from the root's mover and its principal
    variation [count, length]; then the tree's mean and max node depth, the root's value and visits."""
    import jax
    import jax.numpy as jnp

    root = tree.ROOT_INDEX
    valid = tree.children_actions[root] >= 0
    priors = jax.nn.softmax(jnp.where(valid, tree.children_prior_logits[root], -jnp.inf))
    visits = tree.children_visits[root]
    score = jnp.where(valid, visits + jnp.where(valid, priors, 0.0) * 0.999, -1.0)
    _, slots = jax.lax.top_k(score, count)
    chosen = valid[slots]
    actions = jnp.where(chosen, tree.children_actions[root, slots], -1)
    qvalues = tree.children_rewards[root] + tree.children_discounts[root] * tree.children_values[root]
    lines_q = jnp.where(visits[slots] > 0, qvalues[slots], tree.node_values[root])
    variations = jax.vmap(lambda action: principal_variation(tree, action, length))(jnp.maximum(actions, 0))
    variations = jnp.where(chosen[:, None], variations, -1)
    mean_depth, max_depth = tree_depths(tree)
    return (actions, visits[slots], lines_q, variations, mean_depth, max_depth, tree.node_values[root],
            tree.node_visits[root])


__all__ = ["SearchResult", "combined", "principal_variation", "root_lines", "tree_depths", "tree_summary",
           "value_to_centipawns"]
