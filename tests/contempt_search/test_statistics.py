"""The experiments' statistics against definitions worked by hand and against scipy's binomial interval bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from contempt_search.statistics import decisive_ratio, decisiveness, repeat_rate, wilson_interval


def test_wilson_interval_matches_its_formula():
    count, total, z = 7, 20, scipy.stats.norm.ppf(0.975)
    p = count / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z / (1 + z * z / total) * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    np.testing.assert_allclose(wilson_interval(count, total), (centre - half, centre + half), rtol=1e-9)
    low, high = wilson_interval(0, 10)
    assert low == pytest.approx(0.0, abs=1e-12) and 0 < high < 0.35
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


def test_decisive_ratio_and_fraction():
    assert decisive_ratio(3, 2, 5) == 1.0
    assert decisive_ratio(3, 0, 0) == math.inf and math.isnan(decisive_ratio(0, 0, 0))
    outcomes = [1.0] * 30 + [0.0] * 20 + [0.5] * 50
    result = decisiveness(outcomes, resamples=4000)
    assert result["ratio"] == 1.0 and result["decisive_fraction"] == 0.5
    low, high = result["ratio_interval"]
    assert 0.6 < low < 1.0 < high < 1.6  # about ±0.4 for 100 games at p = 0.5
    low, high = result["decisive_fraction_interval"]
    assert 0.38 < low < 0.5 < high < 0.62
    no_draw = decisiveness([1.0, 0.0, 1.0])
    assert no_draw["ratio"] == math.inf and no_draw["ratio_interval"] == [math.inf, math.inf]
    rare_draws = decisiveness([1.0] * 38 + [0.5] * 2)  # many resamples draw no draw at all: an infinite upper end
    assert rare_draws["ratio"] == 19.0 and rare_draws["ratio_interval"][1] == math.inf
    with pytest.raises(ValueError, match="outcomes must be"):
        decisiveness([1.0, 0.3])


def test_repeat_rate_counts_shared_prefixes():
    games = [["e2e4", "e7e5", "g1f3"], ["e2e4", "e7e5", "b1c3"], ["d2d4", "d7d5"], ["e2e4", "c7c5"]]
    assert repeat_rate(games, 1) == pytest.approx((4 - 3) / 3)  # prefixes e4 e5, e4 e5, d4 d5, e4 c5
    assert repeat_rate(games, 2) == pytest.approx(0.0)  # all distinct after two full moves
    assert repeat_rate([["a"], ["a"]], 5) == 1.0
    assert math.isnan(repeat_rate([["a"]], 1))
    with pytest.raises(ValueError):
        repeat_rate(games, 0)
