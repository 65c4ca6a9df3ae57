"""Training: a few steps lower the loss; a run resumes with the same data position, optimiser and EMA."""

import dataclasses
import json

import jax
import numpy as np
import pytest

from distill.data.records import make_loader
from distill.engine import NeuralScorer
from distill.evaluate import predictor_metrics
from distill.data.records import read_all, record_path
from distill.train import init_train_state, load_trained_predictor, make_optimizer, make_train_step, train
from zerolab.devices import make_mesh, shard_host_batch


def test_steps_on_one_batch_lower_the_loss(dataset_directory, training_settings):
    SETTINGS = training_settings  # noqa: N806 - the module-wide name of these settings
    mesh = make_mesh()
    model_config = SETTINGS.model_config()
    optimizer = make_optimizer(SETTINGS)
    state = init_train_state(model_config, optimizer, jax.random.key(0))
    step = make_train_step(SETTINGS, mesh)
    batch = shard_host_batch(next(iter(make_loader(dataset_directory, SETTINGS.predictor_spec, 16, seed=0))), mesh)
    losses = []
    for _ in range(8):
        state, metrics = step(state, batch)
        losses.append(float(metrics["loss"]))
    assert losses[-1] < losses[0] - 0.5
    assert int(state.step) == 8
    # the EMA trails the parameters
    difference = jax.tree.map(lambda a, b: float(np.abs(a - b).max()), state.params, state.ema_params)
    assert max(jax.tree.leaves(difference)) > 0


def test_interrupted_training_resumes_exactly(dataset_directory, trained_run_directory, training_settings, tmp_path):
    SETTINGS = training_settings  # noqa: N806 - the module-wide name of these settings
    uninterrupted = json.loads((trained_run_directory / "metrics.jsonl").read_text().splitlines()[-1])
    halfway = dataclasses.replace(SETTINGS, num_steps=4)
    train(halfway, dataset_directory, tmp_path / "resumed", show_progress=False)
    resumed = train(SETTINGS, dataset_directory, tmp_path / "resumed", show_progress=False)
    assert resumed["step"] == uninterrupted["iteration"] == 6
    assert resumed["loss"] == pytest.approx(uninterrupted["loss"], rel=1e-5)
    straight = load_trained_predictor(trained_run_directory)
    again = load_trained_predictor(tmp_path / "resumed" / "checkpoints" / "6")
    for a, b in zip(jax.tree.leaves(straight.params), jax.tree.leaves(again.params)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    lines = [json.loads(line) for line in (tmp_path / "resumed" / "metrics.jsonl").read_text().splitlines()]
    assert [line["iteration"] for line in lines] == [2, 4, 6]
    # a finished run is left as it is
    assert train(SETTINGS, dataset_directory, tmp_path / "resumed", show_progress=False)["step"] == 6


def test_evaluating_a_trained_predictor(dataset_directory, trained_run_directory):
    trained = load_trained_predictor(trained_run_directory)
    records = read_all(record_path(dataset_directory, "test", "positions"))[:20]
    metrics = predictor_metrics(NeuralScorer(trained.predictor, trained.model_config, trained.params), records)
    assert 0 <= metrics["action_accuracy"] <= 1 and -1 <= metrics["kendall_tau"] <= 1
    assert 0 < metrics["log_loss"] < 10
