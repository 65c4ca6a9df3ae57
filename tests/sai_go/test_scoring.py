"""Scoring at any komi (sai_go.scoring, over the core's GoGame helpers) against pgx's own rewards."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zerolab import GoGame
from sai_go.scoring import black_margin, black_result, terminal_alpha
from sai_go.value import signed_komi
from tests.sai_go.conftest import played_random_games


@pytest.mark.parametrize("komi", [7.5, -3.5])
def test_black_result_agrees_with_pgx_at_its_own_komi(komi):
    """Games of random moves (seed 3: two-pass endings, ply-cap endings and two positional-superko endings)."""
    game = GoGame(size=7, komi=komi)
    states, _ = played_random_games(komi, 3)
    states = jax.device_get(states)
    assert bool(states.terminated.all())
    violation = np.asarray(game.ended_by_rule_violation(states))
    two_passes = np.asarray(game.ended_by_two_passes(states))
    at_cap = np.asarray(states._x.step_count) >= game.max_game_plies
    assert violation.sum() == 2 and two_passes.sum() >= 20 and at_cap.sum() >= 50
    np.testing.assert_array_equal(violation, np.asarray(states._x.is_psk))  # pgx's own superko flag
    assert not (violation & two_passes).any() and not (violation & at_cap).any()
    pgx_black = states.rewards[np.arange(128), np.asarray(game.black_player(states))]
    ours = np.asarray(black_result(game, states, komi))
    np.testing.assert_array_equal(ours, pgx_black)
    # At another komi the counted games move with the area margin, the superko games keep pgx's winner.
    other = np.asarray(black_result(game, states, komi + 6.0))
    margin = np.asarray(black_margin(game, states, komi + 6.0))
    np.testing.assert_array_equal(other[~violation], np.sign(margin[~violation]))
    np.testing.assert_array_equal(other[violation], pgx_black[violation])
    # An integer komi can tie a counted game: a draw (pgx would give it to White).
    tied = np.asarray(black_result(game, states, np.asarray(game.area_difference(states), np.float32)))
    np.testing.assert_array_equal(tied[~violation], 0.0)


def test_terminal_alpha_is_exact_for_either_mover():
    game = GoGame(size=7, komi=7.5)
    states, _ = played_random_games(7.5, 3)
    states = jax.device_get(states)
    violation = np.asarray(game.ended_by_rule_violation(states))
    komi = jnp.full(128, 7.5)
    for black_to_move in (True, False):
        mover_black = jnp.full(128, black_to_move)
        alpha = np.asarray(terminal_alpha(game, states, komi, mover_black))
        margin_for_mover = alpha + np.asarray(signed_komi(komi, mover_black))  # α + k̄
        black_margin_seen = margin_for_mover if black_to_move else -margin_for_mover
        counted = np.asarray(black_margin(game, states, komi))
        np.testing.assert_allclose(black_margin_seen[~violation], counted[~violation])
        black_reward = states.rewards[np.arange(128), np.asarray(game.black_player(states))]
        np.testing.assert_allclose(black_margin_seen[violation], 49.0 * black_reward[violation])
