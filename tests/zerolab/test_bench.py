"""zerolab.frontends.bench: interleaved timing (rounds run every function once, in order; each keeps its best time),
the floor of self-play (S + 1 evaluations and S steps a ply) and the efficiency in the bench's output."""

from __future__ import annotations

import dataclasses
import json
import time

import jax
import jax.numpy as jnp
import pytest

from zerolab import interleaved_best_times
from zerolab.frontends import bench
from zerolab.games import make_game
from zerolab.networks.network import init_variables, make_network


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


TINY_CASE = dict(game="gardner_chess", channels=4, num_blocks=1, num_games=2, plies=2, num_simulations=3)


def tiny_program():
    """``(case, program)``: a tiny Gardner network and its variables in a SelfPlayProgram whose self-play is a
    stand-in (compiling the real one takes longer than these tests should)."""
    case = bench.BenchCase(**TINY_CASE)
    game = make_game(case.game)
    network = make_network(case.model_config(), game)
    variables = init_variables(network, game, jax.random.key(0))
    return case, bench.SelfPlayProgram(game, network, variables, run=lambda: jnp.zeros(()))


def test_the_floor_does_s_plus_one_evaluations_and_s_steps_a_ply():
    case, program = tiny_program()
    floor = bench.floor_program(program.game, program.network, case.num_games, case.plies, case.num_simulations)
    plies = floor(program.variables, jax.random.key(1))
    assert plies.value_total.shape == plies.action.shape == (case.plies, case.num_games)
    assert plies.counts.evaluations.tolist() == [case.num_simulations + 1] * case.plies
    assert plies.counts.steps.tolist() == [case.num_simulations] * case.plies
    assert bool(jnp.isfinite(plies.value_total).all())


def test_the_bench_prints_the_floor_time_and_the_efficiency_of_each_self_play_case(monkeypatch):
    case, program = tiny_program()
    monkeypatch.setattr(bench, "selfplay_program", lambda _: program)
    printed = []
    bench.run_benchmarks((dataclasses.replace(case, reference=False),), repeats=1, print_fn=printed.append,
                         benches=("selfplay",))
    (result,) = [json.loads(line) for line in printed]
    assert result["floor_s"] > 0
    assert result["efficiency"] == result["floor_s"] / result["project_s"]
    assert "overhead" not in result  # no reference loop asked for

    without_floor = bench.selfplay_result(dataclasses.replace(case, floor=False), 1,
                                          {"project": 2.0, "reference": 1.0}, 0.0, None)
    assert without_floor["overhead"] == 2.0 and "efficiency" not in without_floor
