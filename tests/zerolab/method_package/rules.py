"""Search rules with per-node state and a summary: each node counts the simulations whose path went through it."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from zerolab import SearchConfig, SearchRules


def count_simulations_through_nodes(tree, parent_index, action, leaf_index):
    """Adds one to the count of every node on the path from ``leaf_index`` up to the root (batched tree)."""
    del parent_index, action

    def one_tree(counts, parents, leaf):
        def climb(carry):
            counts, node = carry
            return counts.at[node].add(1), parents[node]

        counts, _ = jax.lax.while_loop(lambda carry: carry[1] >= 0, climb, (counts, leaf))
        return counts

    return jax.vmap(one_tree)(tree.extra_data.node_state, tree.parents, leaf_index)


def counting_rules(search_config: SearchConfig, root_weight: float = 1.0) -> SearchRules:
    """``summary["root_passes"]``: ``root_weight`` × the simulations that passed the root (= num_simulations)."""
    del search_config
    return SearchRules(
        init_node_state=lambda tree: jnp.zeros_like(tree.node_visits),
        update_node_state=count_simulations_through_nodes,
        summary_fn=lambda tree: {"root_passes": root_weight * tree.extra_data.node_state[:, 0].astype(jnp.float32)},
    )
