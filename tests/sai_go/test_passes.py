"""Passes by colour in self-play records (:mod:`sai_go.passes`), on hand-made records."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from sai_go.passes import game_passes, pass_summary

PASS = 49


def hand_made_records():
    """Three lanes, 8 plies.  Lane 0 (komi 2.5): White passes at plies 1 and 3, the game ends by passes at 5–6,
    Black wins.  Lane 1 (komi 20.5): Black passes at plies 0 and 2, the game ends at ply 5 (passes 4–5), White wins.
    Lane 2 does not finish."""
    action = np.array([[10, PASS, 3],
                       [PASS, 11, 4],
                       [12, PASS, 5],
                       [PASS, 13, 6],
                       [14, PASS, 7],
                       [PASS, PASS, 8],
                       [PASS, 20, 9],
                       [21, 22, 10]])
    game_over = np.zeros(action.shape, bool)
    game_over[6, 0] = game_over[5, 1] = True
    movers_black = (np.arange(8) % 2 == 0)[:, None]
    black_result = np.array([1.0, -1.0, 0.0])
    value_target = np.where(movers_black, black_result, -black_result)
    value_mask = np.array([True, True, False])[None].repeat(8, axis=0)
    alpha = np.full(action.shape, 1.0)  # the mover's α: one point ahead everywhere
    beta = np.full(action.shape, 0.5)
    komi = np.array([2.5, 20.5, 0.5])[None].repeat(8, axis=0)
    return action, game_over, value_target, value_mask, alpha, beta, komi


def test_passes_are_counted_by_colour_with_the_passers_own_winrate():
    passes = game_passes(*hand_made_records(), pass_action=PASS)
    np.testing.assert_array_equal(passes.komi, [2.5, 20.5])
    np.testing.assert_array_equal(passes.black_outcome, [1.0, 0.0])
    np.testing.assert_array_equal(passes.length, [7, 6])
    np.testing.assert_array_equal(passes.white_passes, [2, 0])  # lane 0's closing passes (plies 5, 6) not counted
    np.testing.assert_array_equal(passes.black_passes, [0, 2])
    np.testing.assert_array_equal(passes.pass_game, [0, 0, 1, 1])
    np.testing.assert_array_equal(passes.pass_white, [True, True, False, False])
    # White at komi 2.5 with α = 1: σ(0.5 (1 + 2.5)); Black at komi 20.5: σ(0.5 (1 − 20.5)).
    np.testing.assert_allclose(passes.pass_winrate, special.expit(0.5 * np.array([3.5, 3.5, -19.5, -19.5])),
                               rtol=1e-6)


def test_the_summary_splits_games_by_komi_against_the_fair_komi():
    summary = pass_summary(game_passes(*hand_made_records(), pass_action=PASS), fair_komi=10.0)
    assert summary["komi_below_fair"]["games"] == 1 and summary["komi_below_fair"]["white_passes"][0] == 2
    assert summary["komi_above_fair"]["black_passes"][0] == 2
    assert summary["white_passes_predicting_a_win"][0] == 1.0
    assert summary["black_passes_predicting_a_win"][0] == 0.0
    assert summary["black_wins_when_white_passed_early"][0] == 1.0
    assert summary["black_wins_when_white_did_not"][0] == 0.0
    assert summary["komi_when_white_passed_early"][0] == pytest.approx(2.5)


def test_the_papers_expected_branches_are_a_capped_binomial_mean():
    from sai_go.branch_proportion import expected_branches

    draws = np.minimum(3, np.random.default_rng(0).binomial(67, 0.025, 400_000))
    assert expected_branches(68) == pytest.approx(draws.mean(), abs=0.006)
    assert expected_branches(1) == 0.0 and expected_branches(2) == pytest.approx(0.025)
    assert expected_branches(10_000) == pytest.approx(3.0)
