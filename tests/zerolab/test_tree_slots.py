"""The slots of a node: each legal action's rank by the blocked prefix sum, against numpy on masks of every size."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zerolab.search.slots import EMPTY_SLOT, inclusive_prefix_counts, slot_actions


@pytest.mark.parametrize("num_actions, num_slots, density", [(4672, 218, 0.01), (1225, 128, 0.03), (4672, 218, 0.5),
                                                              (1000, 37, 0.2), (33, 8, 0.5)])
def test_slot_actions_are_the_legal_actions_in_order(num_actions, num_slots, density):
    """Random masks (dense ones overflow K: the first K legal actions stay), one all-legal row (a finished pgx game)
    and one empty row, against ``np.flatnonzero``: a rank off by one anywhere moves an action or drops one."""
    masks = np.random.default_rng(num_actions + num_slots).random((6, num_actions)) < density
    masks[4], masks[5] = True, False
    slots = np.asarray(jax.jit(slot_actions, static_argnums=1)(jnp.asarray(masks), num_slots))
    for mask, row in zip(masks, slots):
        legal = np.flatnonzero(mask)[:num_slots]
        expected = np.full(num_slots, EMPTY_SLOT)
        expected[:len(legal)] = legal
        np.testing.assert_array_equal(row, expected)


@pytest.mark.parametrize("length, width", [(1000, 4), (4672, 16), (40, 16), (7, 16)])
def test_inclusive_prefix_counts_is_cumsum_at_every_depth(length, width):
    """(1000, 4) recurses four levels deep, (40, 16) once, (7, 16) not at all: exact against ``np.cumsum``."""
    counts = np.random.default_rng(length).integers(0, 3, (3, length)).astype(np.float32)
    prefix = jax.jit(inclusive_prefix_counts, static_argnums=1)(jnp.asarray(counts), width)
    np.testing.assert_array_equal(np.asarray(prefix), np.cumsum(counts, axis=-1))


def test_tree_bytes_is_the_size_of_the_tree_instantiate_tree_makes():
    """The door's estimate of a search tree (zerolab.training.runs.check_search_fits) is the real tree's size: every
    array of ``instantiate_tree``'s output for one game, measured from its shapes."""
    from zerolab.games import make_game
    from zerolab.search.tree import instantiate_tree, tree_bytes

    game = make_game("gardner_chess")
    state = jax.eval_shape(game.init, jax.random.key(0))
    embedding_bytes = sum(leaf.size * np.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(state))
    for simulations, slots in ((7, 5), (32, game.max_legal_actions)):
        def make(state):
            batch = jax.tree.map(lambda leaf: leaf[None], state)
            return instantiate_tree(jnp.zeros((1, game.num_actions)), jnp.zeros(1), batch,
                                    batch.legal_action_mask, simulations, slots)

        tree = jax.eval_shape(make, state)
        measured = sum(leaf.size * np.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(tree))
        assert tree_bytes(simulations, slots, embedding_bytes) == measured


def test_a_search_whose_tree_cannot_fit_a_device_is_refused_at_the_door():
    """``search.num_simulations=100000000``: refused by check_training_config, before anything is compiled or
    written, with the tree's size; a size that fits passes."""
    from experiments.configs import load_config
    from zerolab.training.runs import check_training_config

    with pytest.raises(ValueError, match=r"search.num_simulations=100000000: one game's search tree needs "
                                         r"[0-9.]+ GiB \(100,000,001 nodes of [0-9.]+ KiB\), more than the "):
        check_training_config(load_config("quickstart", "tiny", ["search.num_simulations=100000000"]))
    check_training_config(load_config("quickstart", "tiny", ["selfplay.device_memory_gib=0.5"]))
