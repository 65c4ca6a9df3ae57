"""SAI's value: the mover's winrate as a sigmoid in the komi, and its average over a komi interval (the λ agent).

All functions are jnp, elementwise over matching shapes, and take the **mover's view** of a position s:

* ``alpha`` (α_s): the expected area difference, mover minus opponent, komi excluded;
* ``beta`` (β_s > 0): how settled the position is (the sigmoid's slope);
* ``signed_komi`` (k̄_s): the game's komi k (given to White) seen by the mover: ``+k`` when White is to move, ``-k``
  when Black is (:func:`signed_komi`).

The mover's winrate with an extra bonus ``x`` (points added to the mover's side) is
``ρ_s(x) = σ(β_s (α_s + k̄_s + x))`` (:func:`winrate`).  The λ agent fixes at a node s the bonus
``x̄_s = ρ_s⁻¹(π_λ)``, ``π_λ = (1 − λ) ρ_s(0) + λ/2`` (:func:`lambda_bonus`: negative when s's mover is ahead, so the
agent plays as if giving points away), and values a node r by the mean of r's winrate over the bonuses between 0 and
that end (:func:`mean_winrate`).  The mean of σ over a segment ``[a, b]`` is
``(softplus(b) − softplus(a)) / (b − a)`` (:func:`mean_sigmoid`), computed without cancellation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

#: Below this segment length ``|b − a|`` the mean of σ is σ at the midpoint (error < |b − a|² / 200).
MIDPOINT_THRESHOLD = 1e-3
#: π_λ is kept in ``[PROBABILITY_FLOOR, 1 − PROBABILITY_FLOOR]`` so that its logit stays finite.
PROBABILITY_FLOOR = 1e-6


def signed_komi(komi: jax.Array, black_to_move: jax.Array) -> jax.Array:
    """k̄: the komi (to White) from the mover's view, ``+komi`` when White is to move, ``-komi`` when Black is."""
    komi = jnp.asarray(komi, jnp.float32)
    return jnp.where(black_to_move, -komi, komi)


def winrate(alpha: jax.Array, beta: jax.Array, signed_komi: jax.Array, bonus: jax.Array = 0.0) -> jax.Array:
    """ρ(x) = σ(β (α + k̄ + x)): the mover's probability of winning with ``bonus`` extra points."""
    return jax.nn.sigmoid(beta * (alpha + signed_komi + bonus))


def lambda_bonus(alpha: jax.Array, beta: jax.Array, signed_komi: jax.Array, lam: jax.Array) -> jax.Array:
    """x̄ = ρ⁻¹(π_λ), π_λ = (1 − λ) ρ(0) + λ/2: the bonus that moves the mover's winrate a fraction λ of the way to ½.

    Exactly 0 at λ = 0 (so the λ = 0 agent values nodes by ρ(0) bit for bit); π_λ is clamped off 0 and 1.
    """
    lam = jnp.asarray(lam, jnp.float32)
    logit_now = beta * (alpha + signed_komi)
    target = (1.0 - lam) * jax.nn.sigmoid(logit_now) + 0.5 * lam
    target = jnp.clip(target, PROBABILITY_FLOOR, 1.0 - PROBABILITY_FLOOR)
    target_logit = jnp.log(target) - jnp.log1p(-target)
    return jnp.where(lam == 0, 0.0, (target_logit - logit_now) / beta)


def _mean_sigmoid_of_nonpositive_middle(a: jax.Array, b: jax.Array) -> jax.Array:
    """Mean of σ over ``[a, b]`` for ``a + b <= 0`` and ``|b − a| >= MIDPOINT_THRESHOLD`` (other inputs: finite junk).

    Short segments use ``log1p(σ(a)·expm1(b − a)) / (b − a)`` (softplus(b) − softplus(a) without subtracting two
    close numbers); long ones the plain softplus difference, which has no cancellation once ``|b − a| >= 1`` (the
    middle being ≤ 0, both softplus values are at most ``|b − a| + log 2``).
    """
    width = b - a
    safe_width = jnp.where(jnp.abs(width) < MIDPOINT_THRESHOLD, 1.0, width)
    short = jnp.abs(width) < 1.0
    short_width = jnp.where(short, safe_width, 0.5)
    short_mean = jnp.log1p(jax.nn.sigmoid(a) * jnp.expm1(short_width)) / short_width
    long_mean = (jax.nn.softplus(b) - jax.nn.softplus(a)) / safe_width
    return jnp.where(short, short_mean, long_mean)


def mean_sigmoid(a: jax.Array, b: jax.Array) -> jax.Array:
    """The mean of σ(z) for z between ``a`` and ``b`` (either order): ``(softplus(b) − softplus(a)) / (b − a)``.

    σ((a + b)/2) when ``|b − a| < MIDPOINT_THRESHOLD`` (exactly σ(a) when a = b).  Segments whose middle is positive
    use σ(z) = 1 − σ(−z), so the formula always works where σ is small.
    """
    a, b = jnp.broadcast_arrays(jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32))
    positive_middle = a + b > 0
    low_a, low_b = jnp.where(positive_middle, -a, a), jnp.where(positive_middle, -b, b)
    low_mean = _mean_sigmoid_of_nonpositive_middle(low_a, low_b)
    mean = jnp.where(positive_middle, 1.0 - low_mean, low_mean)
    return jnp.where(jnp.abs(b - a) < MIDPOINT_THRESHOLD, jax.nn.sigmoid(0.5 * (a + b)), mean)


def mean_winrate(alpha: jax.Array, beta: jax.Array, signed_komi: jax.Array, x0: jax.Array,
                 x1: jax.Array) -> jax.Array:
    """The mean of ρ(x) = σ(β (α + k̄ + x)) over bonuses x between ``x0`` and ``x1`` (ρ(x0) when they are equal)."""
    margin = alpha + signed_komi
    return mean_sigmoid(beta * (margin + x0), beta * (margin + x1))


def inverse_winrate(alpha: jax.Array, beta: jax.Array, signed_komi: jax.Array, probability: jax.Array) -> jax.Array:
    """The bonus x with ρ(x) = ``probability``: ``logit(p) / β − α − k̄``."""
    probability = jnp.asarray(probability, jnp.float32)
    return (jnp.log(probability) - jnp.log1p(-probability)) / beta - alpha - signed_komi
