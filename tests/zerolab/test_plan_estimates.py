"""The plan's arithmetic on its own, with made-up compiled programs (no compilation): self-play FLOPs count every
network evaluation of a ply (the root and one per simulation), and a rate measured at other sizes is scaled by FLOPs
the right way round (a run with twice the FLOPs a move plays half as many moves a second)."""

from __future__ import annotations

import pytest

from zerolab.training import plan as plan_lib
from zerolab.training import program_cost, rates


def program(name: str, flops: float) -> program_cost.ProgramCost:
    return program_cost.ProgramCost(argument_bytes=0, output_bytes=0, temp_bytes=0, alias_bytes=0, name=name, flops=flops)


def run_plan(evaluation_flops: float, *, plies: int = 512, simulations: int = 128, games: int = 256,
             width: int = 64) -> plan_lib.RunPlan:
    """A plan of 8×8 ResNet self-play at ``width`` (a size no rate was measured at) whose network evaluation of the
    batch costs ``evaluation_flops``."""
    description = {"game": "chess", "model": "resnet", "width": width, "blocks": 5, "model_options": (),
                   "simulations": simulations, "games": games, "batch_size": 256}
    return plan_lib.RunPlan(
        label="run", description=description,
        programs=[program("self-play", 0.0), program("network evaluation", evaluation_flops),
                  program("training step", 1e9)],
        evaluations_per_iteration=plies * (simulations + 1), updates_per_iteration=10, total_updates=100,
        frames_per_iteration=games * plies, iterations=10, frame=None, window_size=1000, selfplay_host_bytes=0,
        train_state_bytes=0, parameters=0, seconds=0.0)


def test_selfplay_flops_count_the_root_and_every_simulation_of_every_ply():
    plan = run_plan(2e9, plies=10, simulations=7)
    assert plan.flops_per_iteration["selfplay"] == 2e9 * 10 * (7 + 1)
    assert plan.flops_per_iteration["train"] == 1e9 * 10


def test_an_iterations_flops_are_every_devices():
    """On 4 devices the sharded training step's FLOPs (XLA counts one device's) are counted 4 times; the network
    evaluation, compiled over every game's positions, once; the printed line gives both, and a device's share."""
    import dataclasses

    plan = dataclasses.replace(run_plan(2e9, plies=10, simulations=7), num_devices=4)
    assert plan.flops_per_iteration == {"selfplay": 2e9 * 10 * 8, "train": 1e9 * 10 * 4}


def test_a_rate_measured_at_other_sizes_is_scaled_by_flops_the_right_way_round(monkeypatch):
    reference = rates.matching_rates(run_plan(1.0), "selfplay", "h100")[0]
    # the measured program's FLOPs a move, as the plan would compile them: set here to 1 GFLOP
    monkeypatch.setattr(rates, "reference_flops_per_item", lambda rate: 1e9)
    per_move = 1e9 * (128 + 1) / 256  # network evaluation FLOPs × evaluations a move / games
    same = run_plan(1e9 / per_move * 1e9)  # 1 GFLOP a move: the measured rate itself
    double = run_plan(2 * 1e9 / per_move * 1e9)  # 2 GFLOP a move: half the rate, twice the time
    same_seconds, how = rates.estimate_seconds(same, "selfplay", "h100")
    double_seconds, _ = rates.estimate_seconds(double, "selfplay", "h100")
    assert same_seconds == pytest.approx(same.frames_per_iteration / reference.rate)
    assert double_seconds == pytest.approx(2 * same_seconds)
    assert how.startswith("estimate")
