"""A tree that grows (zerolab.search.mcts.start_tree / grow_tree) and a tree kept between moves
(zerolab.search.tree.subtree): a search continued is the search it continues, and a kept subtree is the part of the
old search below the move, with its visits, values and priors, ready to grow again."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.zerolab.test_compact_tree import game_and_network, played_positions
from zerolab.search import mcts
from zerolab.search.config import SearchConfig
from zerolab.search.tree import UNVISITED, child_index, subtree

NODES = 40
CONFIG = SearchConfig(kind="muzero", num_simulations=8, dirichlet_fraction=0.0, selection="lc0")


@pytest.fixture(scope="module")
def searched():
    """Two Gardner positions, a 40-node tree each, and the jitted start and growth (8 and 16 simulations)."""
    game, network, variables = game_and_network("gardner_chess")
    states = played_positions(game, plies=3, seed=5)
    states = jax.tree.map(lambda leaf: leaf[:2], states)
    start = jax.jit(lambda: mcts.start_tree(CONFIG, game, network, variables, states, NODES))
    grow = {n: jax.jit(lambda key, tree, first, n=n: mcts.grow_tree(CONFIG, game, network, variables, key, tree,
                                                                     first, n)) for n in (8, 16)}
    return start(), grow


def carried_key(key, simulations):
    """The loop's key after ``simulations`` simulations (each splits it in three and carries the first)."""
    for _ in range(simulations):
        key = jax.random.split(key, 3)[0]
    return key


def host(tree):
    return jax.tree.map(np.asarray, tree)


def test_a_search_continued_is_the_search_it_continues(searched):
    root, grow = searched
    key = jax.random.key(3)
    once = host(grow[16](key, root, jnp.ones(2, jnp.int32)))
    half = grow[8](key, root, jnp.ones(2, jnp.int32))
    twice = host(grow[8](carried_key(key, 8), half, jnp.full(2, 9, jnp.int32)))
    for field in ("node_visits", "node_values", "parents", "children_index", "children_visits", "children_values"):
        np.testing.assert_array_equal(getattr(once, field), getattr(twice, field), err_msg=field)
    assert once.node_visits[:, 0].tolist() == [17, 17]
    used = once.parents >= 0
    assert used.sum(axis=1).tolist() == [16, 16] and not used[:, 17:].any()  # nodes 1..16, in order


def descendants(tree, batch, node):
    """``{action path below node: node}`` of one host tree, by walking its children."""
    found, stack = {(): node}, [((), node)]
    while stack:
        path, index = stack.pop()
        for slot, child in enumerate(tree.children_index[batch, index]):
            if child != UNVISITED:
                found[path + (int(tree.children_actions[batch, index, slot]),)] = int(child)
                stack.append((path + (int(tree.children_actions[batch, index, slot]),), int(child)))
    return found


def test_a_kept_subtree_is_the_old_search_below_the_move_and_grows_again(searched):
    root, grow = searched
    tree = grow[16](jax.random.key(4), root, jnp.ones(2, jnp.int32))
    old = host(tree)
    best = old.children_actions[np.arange(2), 0, np.argmax(old.children_visits[:, 0], axis=1)]
    node = child_index(tree, jnp.zeros(2, jnp.int32), jnp.asarray(best))
    assert (np.asarray(node) > 0).all()
    assert child_index(tree, jnp.zeros(2, jnp.int32), jnp.asarray([10_000, 10_000])).tolist() == [UNVISITED] * 2
    kept, count = jax.jit(subtree)(tree, node)
    new = host(kept)
    for batch in range(2):
        before = descendants(old, batch, int(node[batch]))
        after = descendants(new, batch, 0)
        assert set(before) == set(after) and int(count[batch]) == len(after)
        for path, index in before.items():  # every kept node: the same statistics, the same position
            for field in ("node_visits", "node_values", "raw_values"):
                assert getattr(new, field)[batch, after[path]] == getattr(old, field)[batch, index], (path, field)
            np.testing.assert_array_equal(new.children_prior_logits[batch, after[path]],
                                          old.children_prior_logits[batch, index])
        assert sorted(after.values()) == list(range(len(after)))  # renumbered 0..count-1, the root first
        assert new.parents[batch, 0] == -1 and (new.parents[batch, 1:len(after)] < np.arange(1, len(after))).all()
        assert (new.node_visits[batch, len(after):] == 0).all()
    grown = host(grow[8](jax.random.key(5), kept, count))
    assert (grown.node_visits[:, 0] == new.node_visits[:, 0] + 8).all()  # the kept visits, then 8 more
    in_use = grown.parents >= 0
    for batch in range(2):  # each node's visits: its own evaluation plus its children's
        for index in np.flatnonzero(in_use[batch]):
            assert grown.node_visits[batch, index] == 1 + grown.children_visits[batch, index].sum()
