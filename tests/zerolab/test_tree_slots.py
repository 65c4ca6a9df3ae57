"""The slots of a node: each legal action's rank by the blocked prefix sum, against numpy on masks of every size."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zerolab.search.tree import EMPTY_SLOT, inclusive_prefix_counts, slot_actions


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
