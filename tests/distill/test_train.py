"""Training: a few steps lower the loss; a run resumes with the same data position, optimiser and EMA."""

import dataclasses
import json
import logging
import pathlib
import shutil
import sys

import chess
import chess.engine
import jax
import numpy as np
import pytest

from distill.data.records import make_loader
from distill.engine import NeuralScorer
from distill.evaluate import expected_accuracy, predictor_metrics, score_records
from distill.data.records import read_all, record_path
from distill.train import (init_train_state, learning_rate_schedule, load_trained_predictor, make_optimizer,
                           make_train_step, train)
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


def test_evaluation_does_not_depend_on_how_boards_are_batched(dataset_directory, trained_run_directory):
    """Scores and metrics of a trained predictor are the same whether boards go through the network together or
    one at a time (a padding, masking or row-order slip in the batched forward pass would break this)."""
    trained = load_trained_predictor(trained_run_directory)
    records = read_all(record_path(dataset_directory, "test", "positions"))[:12]
    scorer = NeuralScorer(trained.predictor, trained.model_config, trained.params)
    together = score_records(scorer, records, batch_boards=len(records))
    one_by_one = score_records(scorer, records, batch_boards=1)
    assert [len(s) for s in together] == [len(r["moves"]) for r in records]
    for a, b in zip(together, one_by_one, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    batched, single = predictor_metrics(scorer, records), predictor_metrics(scorer, records, batch_boards=1)
    assert batched["action_accuracy"] == single["action_accuracy"]
    assert batched["kendall_tau"] == pytest.approx(single["kendall_tau"], abs=1e-9)
    assert batched["log_loss"] == pytest.approx(single["log_loss"], rel=1e-5)
    # the accuracy is the mean over boards of the exact tie-aware accuracy of each board's scores
    assert batched["action_accuracy"] == pytest.approx(
        np.mean([expected_accuracy(s, np.asarray(r["action_values"])) for s, r in zip(one_by_one, records)]))


def test_warmup_free_schedules_start_at_the_learning_rate(training_settings):
    constant = dataclasses.replace(training_settings, learning_rate=0.01, warmup_steps=0)
    assert float(learning_rate_schedule(constant)(0)) == pytest.approx(0.01)
    cosine = dataclasses.replace(constant, schedule="cosine", num_steps=10)
    assert float(learning_rate_schedule(cosine)(0)) == pytest.approx(0.01)
    assert float(learning_rate_schedule(cosine)(10)) == pytest.approx(0.0)
    warm = dataclasses.replace(constant, warmup_steps=4)
    assert [float(learning_rate_schedule(warm)(i)) for i in (0, 2, 4, 9)] == pytest.approx([0.0, 0.005, 0.01, 0.01])
    with pytest.raises(ValueError, match="schedule"):
        learning_rate_schedule(dataclasses.replace(constant, schedule="linear"))


def test_the_first_update_moves_the_parameters(dataset_directory, training_settings):
    """With ``warmup_steps=0`` the first Adam step changes every trained weight (at learning rate 0 none moves)."""
    settings = dataclasses.replace(training_settings, warmup_steps=0, gradient_clip=1e9)
    mesh = make_mesh()
    state = init_train_state(settings.model_config(), make_optimizer(settings), jax.random.key(0))
    before = jax.tree.map(np.asarray, state.params)
    batch = shard_host_batch(next(iter(make_loader(dataset_directory, settings.predictor_spec, 16, seed=0))), mesh)
    state, _ = make_train_step(settings, mesh)(state, batch)
    moved = jax.tree.map(lambda a, b: float(np.abs(np.asarray(a) - b).max()), state.params, before)
    assert min(jax.tree.leaves(moved)) > 0.1 * settings.learning_rate


def copy_run(run_directory: pathlib.Path, destination: pathlib.Path) -> pathlib.Path:
    shutil.copytree(run_directory, destination)
    return destination


def test_an_unreadable_checkpoint_falls_back_to_the_previous_one(dataset_directory, trained_run_directory,
                                                                 training_settings, tmp_path, caplog):
    run = copy_run(trained_run_directory, tmp_path / "run")
    for path in (run / "checkpoints" / "6").rglob("*"):
        if path.is_file() and path.name != "_CHECKPOINT_METADATA":
            path.write_bytes(b"corrupt")
    with caplog.at_level(logging.WARNING):
        fallback = load_trained_predictor(run)
    assert fallback.step == 4 and "cannot be read" in caplog.text and str(run / "checkpoints" / "6") in caplog.text
    step_four = load_trained_predictor(trained_run_directory / "checkpoints" / "4")
    for a, b in zip(jax.tree.leaves(fallback.params), jax.tree.leaves(step_four.params), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(Exception):  # a named step is that step or nothing
        load_trained_predictor(run / "checkpoints" / "6")
    # training resumes from step 4 and redoes steps 5 and 6 exactly as the uninterrupted run did
    resumed = train(training_settings, dataset_directory, run, show_progress=False)
    uninterrupted = json.loads((trained_run_directory / "metrics.jsonl").read_text().splitlines()[-1])
    assert resumed["step"] == 6 and resumed["loss"] == pytest.approx(uninterrupted["loss"], rel=1e-5)
    again, straight = load_trained_predictor(run), load_trained_predictor(trained_run_directory)
    for a, b in zip(jax.tree.leaves(again.params), jax.tree.leaves(straight.params), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_run_whose_checkpoints_are_all_unreadable_stops_and_changes_nothing(dataset_directory, trained_run_directory,
                                                                             training_settings, tmp_path):
    run = copy_run(trained_run_directory, tmp_path / "run")
    for path in (run / "checkpoints").rglob("*"):
        if path.is_file() and path.name != "_CHECKPOINT_METADATA":
            path.write_bytes(b"corrupt")
    before = {path: path.read_bytes() for path in run.rglob("*") if path.is_file()}
    with pytest.raises(RuntimeError, match=r"can be read \(steps \[2, 4, 6\]\)"):
        train(training_settings, dataset_directory, run, show_progress=False)
    with pytest.raises(FileNotFoundError, match="no readable checkpoint"):
        load_trained_predictor(run)
    assert {path: path.read_bytes() for path in run.rglob("*") if path.is_file()} == before


def test_resuming_with_other_loader_workers_is_refused(dataset_directory, trained_run_directory, training_settings,
                                                       tmp_path):
    run = copy_run(trained_run_directory, tmp_path / "run")
    with pytest.raises(ValueError, match="loader_workers=0, but this run has loader_workers=2"):
        train(dataclasses.replace(training_settings, num_steps=8, loader_workers=2), dataset_directory, run,
              show_progress=False)
    assert sorted(int(path.name) for path in (run / "checkpoints").iterdir() if path.name.isdigit()) == [2, 4, 6]


def test_resuming_with_another_model_is_refused_and_changes_nothing(dataset_directory, trained_run_directory,
                                                                    training_settings, tmp_path):
    run = copy_run(trained_run_directory, tmp_path / "run")
    before = {path: path.read_bytes() for path in run.rglob("*") if path.is_file()}
    other = dataclasses.replace(training_settings, num_bins=8, num_steps=8)
    with pytest.raises(ValueError, match="use another work directory") as error:
        train(other, dataset_directory, run, show_progress=False)
    assert '"action_value", 16, ' in str(error.value) and '"action_value", 8, ' in str(error.value)
    assert str(run / "checkpoints" / "6") in str(error.value)
    assert {path: path.read_bytes() for path in run.rglob("*") if path.is_file()} == before


CHECK_FENS = [
    chess.STARTING_FEN,
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "8/8/8/8/8/5k2/3p4/5K2 b - - 3 60",
]


def test_the_uci_engine_from_a_checkpoint_plays_its_networks_best_move(trained_run_directory):
    """``python -m distill.uci --checkpoint RUN`` answers each position with the move that the run's newest EMA
    parameters score highest (an engine that loaded other parameters, or none, would differ on some board)."""
    trained = load_trained_predictor(trained_run_directory)
    assert trained.step == 6
    scorer = NeuralScorer(trained.predictor, trained.model_config, trained.params)
    boards = [chess.Board(fen) for fen in CHECK_FENS]
    moves = [list(board.legal_moves) for board in boards]
    expected = [board_moves[int(np.argmax(scores))] for board_moves, scores in zip(moves, scorer(boards, moves))]
    engine = chess.engine.SimpleEngine.popen_uci(
        [sys.executable, "-m", "distill.uci", "--checkpoint", str(trained_run_directory)], timeout=120)
    try:
        played = [engine.play(board, chess.engine.Limit(time=0.05)).move for board in boards]
    finally:
        engine.quit()
    assert played == expected
