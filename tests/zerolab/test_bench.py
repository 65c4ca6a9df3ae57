"""zerolab.frontends.bench's interleaved timing: rounds run every function once, in order; each keeps its best time."""

from __future__ import annotations

import time

import pytest

from zerolab import interleaved_best_times


def test_interleaved_best_times_runs_in_rounds_and_keeps_each_best():
    calls = []
    durations = {"slow": iter([0.2, 0.05, 0.3]), "fast": iter([0.0, 0.1, 0.0])}

    def timed(name):
        def function():
            calls.append(name)
            time.sleep(next(durations[name]))
            return name
        return function

    seconds = interleaved_best_times({"slow": timed("slow"), "fast": timed("fast")}, repeats=3)
    assert calls == ["slow", "fast"] * 3
    assert 0.05 <= seconds["slow"] < 0.2  # the second round's, the shortest
    assert seconds["fast"] < 0.1
    with pytest.raises(ValueError, match="repeats must be at least 1, got 0"):
        interleaved_best_times({"fast": timed("fast")}, repeats=0)
