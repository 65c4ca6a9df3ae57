"""When self-play may pass (``method_options.pass_rule``): :data:`PASS_RULES`, :func:`avoid_losing_pass` (Leela Zero's
pass check) and the own-eye points it spares (:func:`own_eye_points`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pgx

from sai_go.scoring import black_margin
from zerolab import GoGame

#: The pass rules of self-play (``method_options.pass_rule``): see :class:`sai_go.selfplay.SaiSelfPlayOptions`.
PASS_RULES = ("free", "no_losing_pass", "no_early_pass")


def own_eye_points(colours: jax.Array, black_to_move: jax.Array, size: int) -> jax.Array:
    """[B, N²] bool: empty points whose on-board orthogonal neighbours are all the mover's stones (``colours``
    [B, N²]: +1 Black, −1 White, 0 empty, row by row)."""
    board = colours.reshape((-1, size, size))
    own = jnp.pad(board == jnp.where(black_to_move, 1, -1)[:, None, None], ((0, 0), (1, 1), (1, 1)),
                  constant_values=True)
    surrounded = own[:, :-2, 1:-1] & own[:, 2:, 1:-1] & own[:, 1:-1, :-2] & own[:, 1:-1, 2:]
    return ((board == 0) & surrounded).reshape((-1, size * size))


def avoid_losing_pass(game: GoGame, states: pgx.State, komi: jax.Array, visit_counts: jax.Array,
                      prior_logits: jax.Array, action: jax.Array, only_when_behind: bool = True
                      ) -> tuple[jax.Array, jax.Array]:
    """Leela Zero's pass check (its engine without ``--dumbpass``) on a batch ``[B]``: where passing would leave the
    mover behind by the area count of the board as it stands (Tromp–Taylor at the game's ``komi``: margin < 0;
    with ``only_when_behind=False`` whatever the count) and a legal move exists that is neither a pass nor a fill
    of the mover's own eye (:func:`own_eye_points`), the pass is not played: ``(action, visit_counts)`` with the pass's weight removed (the weights the temperature schedule
    samples from) and a pass ``action`` replaced by the most visited such move (ties and unvisited moves by the
    prior); where every other weight is 0, that move gets weight 1."""
    pass_action = game.pass_action
    black_to_move = game.black_to_move(states)
    margin = black_margin(game, states, komi)
    mover_margin = jnp.where(black_to_move, margin, -margin)
    eyes = own_eye_points(game.stone_colours(states), black_to_move, game.size)
    others = states.legal_action_mask.at[:, pass_action].set(False).at[:, :pass_action].set(
        states.legal_action_mask[:, :pass_action] & ~eyes)
    blocked = ((mover_margin < 0) | (not only_when_behind)) & others.any(axis=-1)
    score = jnp.where(others, visit_counts + 0.5 * jax.nn.softmax(prior_logits.astype(jnp.float32), axis=-1), -1.0)
    fallback = jnp.argmax(score, axis=-1).astype(action.dtype)
    weights = visit_counts.at[:, pass_action].set(0)
    weights = weights + (weights.sum(axis=-1, keepdims=True) == 0) * jax.nn.one_hot(fallback, weights.shape[-1],
                                                                                     dtype=weights.dtype)
    return (jnp.where(blocked & (action == pass_action), fallback, action),
            jnp.where(blocked[:, None], weights, visit_counts))


__all__ = ["PASS_RULES", "avoid_losing_pass", "own_eye_points"]
