"""Results of Go games at any komi: pgx fixes one komi per environment, SAI plays each game at its own.

A game that ended by two passes or at pgx's ply cap is counted by Tromp–Taylor area: Black wins iff
``area_B − area_W − komi > 0``, White iff it is ``< 0``, and a tie (integer komi) is a draw.  A game that ended by a
rule violation (a positional-superko move) keeps pgx's winner: the player who broke the rule loses.  Everything takes
a batch of pgx states ``[B]`` and komi ``[B]`` (or a scalar) and is jittable.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from zerolab import GoGame


def black_margin(game: GoGame, states, komi: jax.Array) -> jax.Array:
    """[B] float32 Black's area margin at ``komi``: ``area_B − area_W − komi`` (the board as it stands)."""
    return game.area_difference(states).astype(jnp.float32) - jnp.asarray(komi, jnp.float32)


def black_result(game: GoGame, states, komi: jax.Array) -> jax.Array:
    """[B] float32 Black's result in {−1, 0, 1} of finished games at ``komi`` (0 for games not finished)."""
    pgx_black_reward = states.rewards[jnp.arange(states.rewards.shape[0]), game.black_player(states)]
    counted = jnp.sign(black_margin(game, states, komi))
    result = jnp.where(game.ended_by_rule_violation(states), pgx_black_reward, counted)
    return jnp.where(states.terminated, result, 0.0)


def terminal_alpha(game: GoGame, states, komi: jax.Array, black_to_move: jax.Array) -> jax.Array:
    """[B] exact α of finished games for the side ``black_to_move`` says is to move (komi excluded).

    Counted games: the area difference from that side's view.  Rule-violation endings: the α that puts the margin
    α + k̄ at ±N² for pgx's winner, so the game's winner is certain at any sensible komi.
    """
    sign = jnp.where(black_to_move, 1.0, -1.0)
    counted = sign * game.area_difference(states).astype(jnp.float32)
    black_reward = states.rewards[jnp.arange(states.rewards.shape[0]), game.black_player(states)]
    signed_komi = jnp.where(black_to_move, -1.0, 1.0) * jnp.asarray(komi, jnp.float32)
    violated = sign * black_reward * game.size * game.size - signed_komi
    return jnp.where(game.ended_by_rule_violation(states), violated, counted)
