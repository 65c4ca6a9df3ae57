"""Where SAI's self-play games start: the komi of fresh games and the device's queue of pending branches.

* **Fresh games** start from the empty board at a komi K drawn so that the current network's Black winrate at K is
  uniform: ``K = ⌊α_∅ + logit(U)/β_∅⌋ + 0.5``, U ~ Unif(0, 1), clipped to ``|K| <= N² + 0.5`` (:func:`sample_komi`).
* **Branches** wait in a fixed-size :class:`BranchQueue` per device: :func:`push_branches` stores a finished game's
  branch points in free slots (in order; those that find none are dropped and counted), :func:`pop_branches` hands
  them to the lanes whose games ended, lowest slot first.

The rules that use them are in :mod:`sai_go.selfplay`.
"""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp
import pgx

from zerolab import GoGame


def komi_limit(game: GoGame) -> float:
    return game.size * game.size + 0.5


def half_integer_komi(black_alpha: jax.Array, limit: float) -> jax.Array:
    """``⌊black_alpha⌋ + 0.5`` clipped to ``[−limit, limit]``."""
    return jnp.clip(jnp.floor(black_alpha) + 0.5, -limit, limit)


def sample_komi(key: jax.Array, black_alpha: jax.Array, beta: jax.Array, shape: tuple[int, ...],
                limit: float) -> jax.Array:
    """Komi K of fresh games: ``⌊α + logit(U)/β⌋ + 0.5`` (U uniform), so Black's winrate σ(β(α − K)) is uniform."""
    uniform = jax.random.uniform(key, shape, minval=1e-7, maxval=1.0 - 1e-7)
    return half_integer_komi(black_alpha + (jnp.log(uniform) - jnp.log1p(-uniform)) / beta, limit)


@flax.struct.dataclass
class BranchQueue:
    """Pending branches of one device: ``Q`` slots of a state, its komi and whether the slot holds one."""

    states: pgx.State  # [Q, ...]
    komi: jax.Array  # [Q]
    valid: jax.Array  # [Q] bool


def push_branches(queue: BranchQueue, states: pgx.State, komi: jax.Array, valid: jax.Array
                  ) -> tuple[BranchQueue, jax.Array, jax.Array]:
    """Puts the ``valid`` items (leaves ``[K, ...]``) into free slots, in order; ``(queue, pushed, dropped)``."""
    size = queue.valid.shape[0]
    rank = jnp.cumsum(valid) - 1
    free_count = jnp.cumsum(~queue.valid)
    slot = jnp.searchsorted(free_count, rank + 1)
    stored = valid & (rank < free_count[-1])
    target = jnp.where(stored, slot, size)  # out of range: not written
    queue = BranchQueue(
        states=jax.tree.map(lambda q, item: q.at[target].set(item, mode="drop"), queue.states, states),
        komi=queue.komi.at[target].set(komi, mode="drop"),
        valid=queue.valid.at[target].set(True, mode="drop"),
    )
    return queue, stored.sum(), (valid & ~stored).sum()


def pop_branches(queue: BranchQueue, wanted: jax.Array) -> tuple[BranchQueue, jax.Array, pgx.State, jax.Array]:
    """Hands pending branches to the lanes that want one (``wanted`` [B]), lowest slot first.

    Returns ``(queue, taken [B], states [B], komi [B])``; where not taken, states and komi are junk."""
    size = queue.valid.shape[0]
    rank = jnp.cumsum(wanted) - 1
    available = jnp.cumsum(queue.valid)
    slot = jnp.minimum(jnp.searchsorted(available, rank + 1), size - 1)
    taken = wanted & (rank < available[-1])
    states = jax.tree.map(lambda leaf: leaf[slot], queue.states)
    queue = queue.replace(valid=queue.valid.at[jnp.where(taken, slot, size)].set(False, mode="drop"))
    return queue, taken, states, queue.komi[slot]


__all__ = ["BranchQueue", "half_integer_komi", "komi_limit", "pop_branches", "push_branches", "sample_komi"]
