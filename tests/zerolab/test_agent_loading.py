"""Checkpoint agents loaded from a run directory whose newest checkpoint cannot be read: the loader reports the
unreadable checkpoint, falls back to the previous readable one, and the agent plays with that step's parameters (the
same moves and network outputs as the agent loaded at that step explicitly, not the newest step's)."""

from __future__ import annotations

import dataclasses
import logging
import pathlib
import shutil

import jax
import numpy as np
import pytest

from zerolab.training import trained_variables
from zerolab.training import train
from zerolab.play.agent_specs import make_agent
from experiments.configs import load_config
from zerolab.search.mcts import evaluate

ITERATIONS = 2  # checkpoints 1 and 2 (and the initial one, 0)
TINY_RUN = [  # the quickstart with a toy ResNet (as tests/zerolab/test_train.py)
    "model.name=resnet", "model.channels=8", "model.num_blocks=1", "search.num_simulations=4",
    "search.max_num_considered_actions=4", "selfplay.num_games=4", "selfplay.plies_per_iteration=8",
    "train.batch_size=16", "progress=False", f"iterations={ITERATIONS}",
    "selfplay.max_game_plies=6",  # games end inside each call, so each iteration trains
]
LANES = 8


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("agent_loading") / "run"
    train.run(load_config("quickstart", "tiny", TINY_RUN), workdir)
    return workdir


@pytest.fixture
def corrupted_run(trained_run, tmp_path):
    """A copy of the run with every file of its newest checkpoint's train state overwritten."""
    run = pathlib.Path(shutil.copytree(trained_run, tmp_path / "run"))
    files = [path for path in (run / "checkpoints" / str(ITERATIONS) / "train_state").rglob("*") if path.is_file()]
    assert files
    for path in files:
        path.write_bytes(b"corrupt")
    return run


def leaves(tree):
    return [np.asarray(leaf) for leaf in jax.tree.leaves(tree)]


def test_agent_specs_name_search_settings_by_search_config_fields(trained_run):
    agent = make_agent(f"{trained_run}:step=1,num_simulations=3,max_num_considered_actions=2,kind=muzero,name=x")
    search = agent.search_config
    assert (agent.name, search.num_simulations, search.max_num_considered_actions, search.kind) == ("x", 3, 2, "muzero")
    with pytest.raises(ValueError, match="unknown agent option 'simulations'; did you mean 'num_simulations'\\?"):
        make_agent(f"{trained_run}:simulations=4")


def test_agent_from_a_run_whose_newest_checkpoint_is_unreadable_plays_with_the_previous_step(
        trained_run, corrupted_run, caplog):
    newest = make_agent(f"{trained_run}:num_simulations=4")
    explicit = make_agent(f"{trained_run}:step={ITERATIONS - 1},num_simulations=4")
    assert newest.name == f"run@{ITERATIONS}" and explicit.name == f"run@{ITERATIONS - 1}"
    # The two steps' parameters differ (the run trained between them), so "which step" is observable.
    assert any(not np.array_equal(a, b) for a, b in zip(leaves(newest.variables), leaves(explicit.variables)))

    with caplog.at_level(logging.WARNING):
        fallback = make_agent(f"{corrupted_run}:num_simulations=4")
    assert f"checkpoint {corrupted_run / 'checkpoints' / str(ITERATIONS)} cannot be read" in caplog.text
    assert fallback.name == f"run@{ITERATIONS - 1}"
    for a, b in zip(leaves(fallback.variables), leaves(explicit.variables), strict=True):
        np.testing.assert_array_equal(a, b)

    # It plays as the explicitly loaded step: same network outputs and the same moves from the same key.
    game = fallback.game
    states = game.batched_init(jax.random.split(jax.random.key(3), LANES))
    step = game.batched_step
    for ply in range(3):  # a few plies in, so the positions differ from lane to lane
        states = step(states, explicit.select_actions(states, jax.random.key(ply)))

    def outputs(agent):
        logits, value = jax.jit(evaluate, static_argnums=0)(agent.network, agent.variables, states)
        return np.asarray(logits), np.asarray(value)

    np.testing.assert_array_equal(outputs(fallback)[0], outputs(explicit)[0])
    np.testing.assert_array_equal(outputs(fallback)[1], outputs(explicit)[1])
    assert not np.array_equal(outputs(fallback)[0], outputs(newest)[0])
    key = jax.random.key(11)
    np.testing.assert_array_equal(fallback.select_actions(states, key), explicit.select_actions(states, key))


def test_load_trained_variables_falls_back_only_without_an_explicit_step(trained_run, corrupted_run, caplog):
    with caplog.at_level(logging.WARNING):
        trained = trained_variables.load_trained_variables(corrupted_run)
    assert trained.step == ITERATIONS - 1 and trained.path.name == str(ITERATIONS - 1)
    assert "cannot be read" in caplog.text
    # Asked for the unreadable step by name, it refuses rather than hand back another step's parameters.
    with pytest.raises(FileNotFoundError, match="no readable checkpoint"):
        trained_variables.load_trained_variables(corrupted_run, ITERATIONS)


def test_a_plan_builds_the_agent_a_run_loads_on_abstract_variables(trained_run):
    """An experiment declares its agents once: ``make_search_agent`` of a run's config without variables is the agent
    ``load_search_agent`` gives (same game, search and name; variables of the same shapes, abstract), and its
    planned program is that agent's search compiled, with the FLOPs of ``simulations + 1`` evaluations a call."""
    from zerolab.config import from_json
    from zerolab.play import load_search_agent, make_search_agent
    from zerolab.training import PlannedProgram

    options = {"num_simulations": "3", "dirichlet_fraction": "0", "name": "x"}
    loaded = load_search_agent(trained_run, options)
    planned = make_search_agent(from_json((trained_run / "config.json").read_text()), None, options)
    assert (planned.name, planned.game, planned.search_config) == ("x", loaded.game, loaded.search_config)
    shapes = lambda tree: jax.tree.map(lambda leaf: (leaf.shape, leaf.dtype), tree)  # noqa: E731
    assert shapes(planned.variables) == shapes(loaded.variables)
    assert all(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in jax.tree.leaves(planned.variables))

    program = planned.planned_program(LANES, calls=5)
    evaluation = PlannedProgram.evaluation("evaluation", planned.game, planned.network, planned.variables, LANES)
    assert (program.cost.name, program.calls) == ("x search", 5)
    assert program.flops == evaluation.flops * (3 + 1) > 0 and program.cost.device_bytes > 0

    # an arm of an experiment: the run's agent with its search changed as an agent spec would change it
    arm = loaded.with_search(dataclasses.replace(loaded.search_config, num_simulations=2, kind="muzero"), name="arm")
    spec = load_search_agent(trained_run, {**options, "num_simulations": "2", "kind": "muzero", "name": "arm"})
    assert (arm.name, arm.search_config, arm.variables) == ("arm", spec.search_config, loaded.variables)
    with pytest.raises(TypeError, match="with_search takes a SearchConfig, got dict"):
        loaded.with_search({"num_simulations": "2"})
