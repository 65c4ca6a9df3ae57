"""``skill_compat.attuned:make_method`` trains through the core (``zerolab.training.train.run``) with its real search.

test_attuned.py checks the STT and HB rules with stand-ins for the senior's search (a real 8×8 search inside the
scan is the costly part to compile).  Here one tiny iteration runs the way skill-compat-attuned runs it — the run
config from :func:`skill_compat.attuned.training_config`, the method loaded by name, the junior read from
an lc0 weights file — with a synthetic 8-filter lc0 network as the junior (and the learner's architecture) instead of
maia-1900, 2 games × 2 plies and a 2-simulation Gumbel search without noise.  The replay frames of the start position
must carry the policy target of ``run_search`` itself at the initial network (``attuned.policy_target=search``), and
training must leave a finite attuned loss and changed parameters.
"""

from __future__ import annotations

import gzip
import json
import math

import jax
import numpy as np
import pytest

from skill_compat.attuned import LC0_NETWORK, training_config
from skill_compat.configs import AttunedConfig, read_config
from zerolab import train
from experiments.configs import load_config
from zerolab.training.replay_checkpoints import read_window
from zerolab.training.runs import Components
from zerolab.training.trained_variables import load_trained_variables
from zerolab.search.mcts import run_search
from tests.fast_compile import fast_jit
from tests.zerolab.lc0.test_weights import synthetic_network

ARCHITECTURE = {"channels": 8, "num_blocks": 1, "se_channels": 2, "value_channels": 4, "value_hidden": 8}
GAMES, PLIES = 2, 2


@pytest.fixture(scope="module")
def attuned_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("attuned")
    data, _ = synthetic_network(np.random.default_rng(5), filters=8, blocks=1, se=2, value_channels=4, value_hidden=8)
    junior = directory / "junior.pb.gz"
    junior.write_bytes(gzip.compress(data))
    base = directory / "base"  # training_config reads the learner's architecture from the base run's config
    base.mkdir()
    (base / "config.json").write_text(json.dumps({"model": {"name": LC0_NETWORK, "weights": "", **ARCHITECTURE}}))
    # games as long as the call (max_game_plies = PLIES): they end in it, so its frames enter the window and train
    experiment = load_config("skill-compat-attuned", "tiny", [
        f"junior.weights={junior}", "attuned.policy_target=search", "training.iterations=1",
        f"training.num_games={GAMES}", f"training.plies_per_iteration={PLIES}", f"training.max_game_plies={PLIES}",
        "training.search.num_simulations=2", "tree.search.max_num_considered_actions=2", "training.batch_size=4",
        "progress=False"])
    config = training_config(read_config(experiment, AttunedConfig), base)
    config.init_from = ""  # the base run holds no checkpoint: the learner starts from its own initial network
    config.search.gumbel_scale = 0.0  # a noiseless search: its result at a position does not depend on the key
    workdir = directory / "train"
    train.run(config, workdir)
    return workdir


@pytest.mark.slow  # 39 s with a cold compilation cache (the scan with an 8×8 search), 9 s warm
def test_attuned_make_method_trains_one_iteration_through_the_core_with_its_search(attuned_run):
    (record,) = [json.loads(line) for line in (attuned_run / "metrics.jsonl").read_text().splitlines()]
    # the attuned loss (its own metrics), finite, on every frame the scan played
    for name in ("loss", "policy_loss", "value_loss", "policy_frames"):
        assert math.isfinite(record[name]), (name, record)
    assert record["policy_frames"] > 0
    assert 0.0 <= record["senior_fraction"] <= 1.0  # the STT rule's summary

    initial, trained = load_trained_variables(attuned_run, 0), load_trained_variables(attuned_run, 1)
    assert trained.config.method == "skill_compat.attuned:make_method"
    assert any(not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(initial.variables),
                                                        jax.tree.leaves(trained.variables)))

    # The start position's frames (ply 0 of each game) hold the real search's improved policy at the initial network.
    components = Components.from_config(trained.config)
    game = components.game
    start = game.batched_init(jax.random.split(jax.random.key(0), 1))
    # compiled at XLA's faster settings (tests/fast_compile.py, about 4 s less on a cold cache): the frames are
    # compared at float16's precision
    search = fast_jit(lambda variables, key: run_search(components.search, game, components.network, variables, key,
                                                        start))
    searched = search(initial.variables, jax.random.key(1))
    expected = np.asarray(searched.policy_target)[0]
    _, window = read_window(attuned_run, 1)
    frames = window.as_frames()
    assert len(frames.value_target) == GAMES * PLIES
    observation = np.asarray(frames.observation, np.float32)
    at_start = (observation == np.asarray(start.observation, np.float32)[0]).all(axis=(1, 2, 3))
    assert at_start.sum() == GAMES
    targets = np.asarray(frames.policy_target, np.float32)[at_start]
    legal = np.asarray(start.legal_action_mask)[0]
    assert ((expected > 0) <= legal).all() and (expected > 0).sum() > 1  # a search's distribution, not a one-hot
    for target in targets:
        np.testing.assert_allclose(target, expected, rtol=1e-3, atol=1e-6)  # stored as float16
