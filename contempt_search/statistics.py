"""The statistics the search-contempt experiments report: W/D/L intervals, decisiveness and opening diversity.

* :func:`wilson_interval` — a proportion's 95 % Wilson interval (statsmodels); :func:`wdl_percentages` — a
  match's W/D/L as percentages, each with its interval, and its score.
* :func:`decisiveness` — (w + l) / d (infinite when no game was drawn) and the decisive fraction, each with a
  bootstrap 95 % interval over games.
* :func:`repeat_rate` — r(m) = (G − D_m) / (G − 1), where D_m counts the distinct m-full-move prefixes among G games:
  0 when every game leaves the others within m moves, 1 when all G games share their first m moves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def wilson_interval(count: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson interval of ``count`` successes out of ``total`` (``(nan, nan)`` when ``total`` is 0)."""
    if total <= 0:
        return math.nan, math.nan
    from statsmodels.stats.proportion import proportion_confint  # imported when used: it takes a second

    low, high = proportion_confint(count, total, alpha=1 - confidence, method="wilson")
    return float(low), float(high)


def wdl_percentages(wins: int, draws: int, losses: int) -> dict:
    """``games``, ``wins``/``draws``/``losses``, each as ``<win|draw|loss>_percent`` with its 95 % Wilson interval
    (``_interval``, in percent), and the ``score`` (wins + draws / 2) / games."""
    games = wins + draws + losses
    counts = {"win": wins, "draw": draws, "loss": losses}
    return {
        "games": games, "wins": wins, "draws": draws, "losses": losses,
        **{f"{name}_percent": 100 * count / games for name, count in counts.items()},
        **{f"{name}_interval": [100 * bound for bound in wilson_interval(count, games)]
           for name, count in counts.items()},
        "score": (wins + draws / 2) / games,
    }


def decisive_ratio(wins: int, losses: int, draws: int) -> float:
    """(w + l) / d; infinite when there are decisive games but no draw, nan when there is no game."""
    if draws == 0:
        return math.inf if wins + losses else math.nan
    return (wins + losses) / draws


def decisiveness(outcomes: Sequence[float], resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> dict:
    """(w+l)/d and the decisive fraction of games scored 1 / 0.5 / 0 (from either side), with bootstrap intervals.

    Each bootstrap resample draws len(outcomes) games with replacement; the interval is the central ``confidence``
    range of the resampled statistic (a ratio that is infinite in some resamples has an infinite upper end).
    """
    outcomes = np.asarray(outcomes, dtype=np.float64)
    if outcomes.size == 0:
        raise ValueError("decisiveness needs at least one game outcome")
    if not np.isin(outcomes, (0.0, 0.5, 1.0)).all():
        raise ValueError("game outcomes must be 1 (win), 0.5 (draw) or 0 (loss)")
    draws = outcomes == 0.5
    rng = np.random.default_rng(seed)
    samples = rng.integers(0, outcomes.size, size=(resamples, outcomes.size))
    resampled_draws = draws[samples].sum(axis=1)
    resampled_decisive = outcomes.size - resampled_draws
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(resampled_draws > 0, resampled_decisive / np.maximum(resampled_draws, 1), np.inf)
    tail = (1 - confidence) / 2
    decisive = int((~draws).sum())

    def central(values: np.ndarray) -> list[float]:  # order statistics, no interpolation (values may be infinite)
        return [float(np.quantile(values, q, method="inverted_cdf")) for q in (tail, 1 - tail)]

    return {
        "ratio": decisive_ratio(decisive, 0, int(draws.sum())),
        "ratio_interval": central(ratios),
        "decisive_fraction": decisive / outcomes.size,
        "decisive_fraction_interval": central(resampled_decisive / outcomes.size),
    }


def repeat_rate(games: Sequence[Sequence[str]], full_moves: int) -> float:
    """r(m) for m = ``full_moves``: games are move lists from one start position; a game shorter than 2m plies is
    its own prefix.  nan with fewer than two games."""
    if full_moves < 1:
        raise ValueError(f"full_moves must be at least 1, got {full_moves}")
    if len(games) < 2:
        return math.nan
    distinct = len({tuple(game[: 2 * full_moves]) for game in games})
    return (len(games) - distinct) / (len(games) - 1)
