"""Shared fixtures of the distill tests: a small Stockfish-annotated dataset and random positions, made once."""

from __future__ import annotations

import pathlib
import random
import shutil

import chess
import pytest

from distill.data.annotate import AnnotationSettings, annotate
from distill.data.build import build
from distill.data.generate import GenerationSettings, generate
from distill.train import TrainingSettings, train

# Small enough for seconds of Stockfish, large enough that both splits have boards.
TEST_GENERATION = dict(num_games=6, nodes_per_move=200, skill_levels=(0, 10), max_game_plies=60, games_per_chunk=2,
                       random_move_probability=0.2)
TEST_ANNOTATION = dict(nodes_per_move=20, positions_per_chunk=16)
TEST_TRAINING = TrainingSettings(predictor="action_value", num_bins=16, model_size="test", batch_size=16, num_steps=6,
                                 learning_rate=3e-3, log_every=2, checkpoint_every=2, keep_checkpoints=5)


@pytest.fixture(scope="session")
def random_game_fens() -> list[str]:
    """Several hundred positions of random games, rich in castling, en passant and promotions."""
    rng = random.Random(0)
    fens: list[str] = []
    while len(fens) < 600:
        board = chess.Board()
        for _ in range(rng.randint(20, 200)):
            moves = list(board.legal_moves)
            if not moves:
                break
            special = [m for m in moves if board.is_castling(m) or board.is_en_passant(m) or m.promotion]
            board.push(rng.choice(special) if special and rng.random() < 0.7 else rng.choice(moves))
            fens.append(board.fen())
    return fens


@pytest.fixture(scope="session")
def generated_games(stockfish_path, tmp_path_factory) -> list[pathlib.Path]:
    directory = tmp_path_factory.mktemp("games")
    return generate(GenerationSettings(engine=stockfish_path, seed=1, **TEST_GENERATION), directory,
                    num_workers=0, show_progress=False)


@pytest.fixture(scope="session")
def annotation_directory(stockfish_path, generated_games, tmp_path_factory) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("annotations")
    annotate(generated_games, directory, AnnotationSettings(engine=stockfish_path, **TEST_ANNOTATION),
             num_workers=0, show_progress=False)
    return directory


@pytest.fixture(scope="session")
def dataset_directory(annotation_directory, tmp_path_factory) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("dataset") / "dataset"
    build(annotation_directory, directory, test_fraction=0.3, seed=0)
    return directory


@pytest.fixture(scope="session")
def training_settings() -> TrainingSettings:
    return TEST_TRAINING


@pytest.fixture(scope="session")
def trained_run_directory(dataset_directory, tmp_path_factory) -> pathlib.Path:
    """A run directory of :data:`TEST_TRAINING` (6 steps of a tiny action-value model)."""
    directory = tmp_path_factory.mktemp("run")
    train(TEST_TRAINING, dataset_directory, directory, show_progress=False)
    return directory


@pytest.fixture(scope="session")
def experiment_data_directory(annotation_directory, tmp_path_factory) -> pathlib.Path:
    """A ``data.directory`` for the end-to-end experiment tests: the shared annotations, built by the first user."""
    directory = tmp_path_factory.mktemp("experiment-data")
    shutil.copytree(annotation_directory, directory / "annotations")
    return directory
