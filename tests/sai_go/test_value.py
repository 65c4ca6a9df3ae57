"""SAI's value math (sai_go.value) against dense quadrature in float64, and the network's komi-free value."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special

from sai_go.value import (
    inverse_winrate,
    lambda_bonus,
    mean_sigmoid,
    mean_winrate,
    signed_komi,
    winrate,
)


def quadrature_mean(beta: float, margin: float, x0: float, x1: float) -> float:
    """The mean of σ(β (margin + x)) over x in [x0, x1], by adaptive quadrature (float64); σ at x0 when x0 = x1."""
    if x0 == x1:
        return float(special.expit(beta * (margin + x0)))
    low, high = min(x0, x1), max(x0, x1)
    total, _ = integrate.quad(lambda x: special.expit(beta * (margin + x)), low, high, epsabs=1e-13, epsrel=1e-12,
                              limit=400, points=[-margin] if low < -margin < high else None)
    return total / (high - low)


BETAS = [0.01, 0.2, 1.0, 3.0, 10.0]
MARGINS = [-60.0, -17.5, -3.0, -0.4, 0.0, 0.05, 2.5, 9.5, 60.0]
ENDS = [0.0, 1e-6, -1e-6, 3e-4, -2e-3, 0.3, -0.9, 4.0, -12.0, 75.0, -130.0]


def test_mean_winrate_agrees_with_quadrature_on_a_grid():
    cases = np.array(list(itertools.product(BETAS, MARGINS, ENDS)), np.float64)
    beta, margin, end = cases.T
    expected = np.array([quadrature_mean(b, m, 0.0, e) for b, m, e in cases])
    ours = np.asarray(mean_winrate(jnp.asarray(margin, jnp.float32), jnp.asarray(beta, jnp.float32), 0.0, 0.0,
                                   jnp.asarray(end, jnp.float32)))
    assert np.isfinite(ours).all()
    np.testing.assert_allclose(ours, expected, atol=2e-6, rtol=0)
    # Intervals that do not start at 0, given in either order, and a split interval: means weighted by length.
    np.testing.assert_allclose(mean_winrate(1.5, 0.7, -2.0, 3.0, -4.0), quadrature_mean(0.7, -0.5, -4.0, 3.0),
                               atol=2e-6)
    whole = float(mean_winrate(0.0, 0.5, 0.0, -6.0, 10.0))
    parts = (6 * float(mean_winrate(0.0, 0.5, 0.0, -6.0, 0.0)) + 10 * float(mean_winrate(0.0, 0.5, 0.0, 0.0, 10.0)))
    assert abs(whole - parts / 16) < 2e-6


def test_mean_sigmoid_is_symmetric_and_stable_at_the_extremes():
    a = jnp.array([-400.0, 400.0, -50.0, 50.0, 0.0, 20.0, -3.0])
    b = jnp.array([-399.0, 401.0, 50.0, -50.0, 5e-4, 20.0 + 2e-3, -3.0 + 0.9])
    np.testing.assert_allclose(mean_sigmoid(a, b), mean_sigmoid(b, a), atol=1e-7)  # the order does not matter
    np.testing.assert_allclose(mean_sigmoid(a, b), 1.0 - mean_sigmoid(-a, -b), atol=1e-6)  # σ(z) = 1 − σ(−z)
    expected = [quadrature_mean(1.0, 0.0, float(x), float(y)) for x, y in zip(a, b)]
    np.testing.assert_allclose(mean_sigmoid(a, b), expected, atol=2e-6, rtol=0)
    # On a zero-length segment the mean is σ itself, exactly.
    z = jnp.linspace(-30.0, 30.0, 41)
    np.testing.assert_array_equal(mean_sigmoid(z, z), winrate(z, 1.0, 0.0))
    np.testing.assert_allclose(mean_sigmoid(z, z), special.expit(np.asarray(z, np.float64)), rtol=1e-6, atol=1e-7)


def test_signed_komi_and_winrate_take_the_movers_view():
    np.testing.assert_array_equal(signed_komi(jnp.array([9.5, 9.5, -2.5]), jnp.array([True, False, True])),
                                  [-9.5, 9.5, 2.5])
    # Black to move on the empty board, komi 9.5, α = 9 (Black expects 9 more points): Black loses by 0.5.
    assert float(winrate(9.0, 2.0, signed_komi(9.5, True))) == pytest.approx(special.expit(-1.0), abs=1e-7)
    # White to move in the same position (α = −9 for White): White wins by 0.5.
    assert float(winrate(-9.0, 2.0, signed_komi(9.5, False))) == pytest.approx(special.expit(1.0), abs=1e-7)
    assert float(winrate(-9.0, 2.0, 9.5, bonus=-1.0)) == pytest.approx(special.expit(-1.0), abs=1e-7)


@pytest.mark.parametrize("lam", [0.0, 0.25, 0.5, 1.0])
def test_the_lambda_bonus_inverts_the_winrate(lam):
    alpha = jnp.array([12.0, -7.0, 0.3, 40.0, -2.0, 0.0])
    beta = jnp.array([0.3, 1.2, 2.0, 0.05, 10.0, 0.5])
    komi = jnp.array([-9.5, 9.5, 0.5, -7.5, 2.5, 0.0])
    bonus = lambda_bonus(alpha, beta, komi, lam)
    now = winrate(alpha, beta, komi)
    target = (1 - lam) * now + lam / 2
    reachable = (target > 1e-6) & (target < 1 - 1e-6)
    np.testing.assert_allclose(np.asarray(winrate(alpha, beta, komi, bonus))[reachable],
                               np.asarray(target)[reachable], atol=2e-5)
    # A winning mover gets a malus, a losing one a bonus; λ = 0 gives exactly no bonus.
    assert (np.sign(bonus) == -np.sign(np.asarray(now) - 0.5))[np.asarray(now) != 0.5].all() or lam == 0
    if lam == 0:
        np.testing.assert_array_equal(bonus, 0.0)
        np.testing.assert_array_equal(mean_winrate(alpha, beta, komi, 0.0, bonus), now)  # λ = 0 gives ρ(0)
    # x̄ is ρ⁻¹(π_λ) computed directly.
    np.testing.assert_allclose(np.asarray(bonus)[reachable], np.asarray(
        inverse_winrate(alpha, beta, komi, jnp.clip(target, 1e-6, 1 - 1e-6)))[reachable], rtol=1e-4, atol=1e-3)


def test_lambda_one_interval_reaches_the_even_komi():
    # λ = 1: the interval ends where the mover's winrate is ½, i.e. at x̄ = −(α + k̄).
    bonus = lambda_bonus(jnp.array([14.0, -3.0]), jnp.array([0.5, 0.5]), jnp.array([-9.5, 9.5]), 1.0)
    np.testing.assert_allclose(bonus, [-4.5, -6.5], atol=1e-5)


def test_the_networks_value_is_the_movers_outcome_at_komi_zero(go_game, tiny_network):
    """The SAI network's ``value`` (for code that knows nothing of komi) is ``2ρ(0) − 1 = 2σ(βα) − 1`` of its own α
    and β heads, in float64 here, on varied inputs."""
    from tests.sai_go.conftest import fast_jit
    from zerolab import NetworkInputs

    network, variables = tiny_network
    observation = jax.random.bernoulli(jax.random.key(7), 0.3, (6,) + go_game.observation_shape).astype(jnp.float32)
    inputs = NetworkInputs(observation, jnp.ones((6, go_game.num_actions), bool))
    output = jax.device_get(fast_jit(lambda v, x: network.apply(v, x, train=False))(variables, inputs))
    alpha, beta = (np.asarray(output.extras[name], np.float64) for name in ("alpha", "beta"))
    assert np.ptp(beta * alpha) > 0.1  # the inputs give different values
    np.testing.assert_allclose(output.value, 2 * special.expit(beta * alpha) - 1, atol=1e-6)
