"""The pipeline's resumable stages, which the ``distill*`` launchers (``experiments/distill.py``,
``experiments/common/distill.py``) run in order.

``prepare_data`` runs generate → annotate → build (or annotate → build on given PGN files) into a data directory;
``train_predictor`` trains one predictor in a run directory; ``evaluate_run`` measures a trained predictor on the
test split against the baselines (and puzzles); ``tournament`` plays the trained engines against each other in
the ``zerolab`` arena and rates them with ``zerolab.evaluation.elo``; ``plan_variants`` plans the training of
several variants.  Each stage skips work a previous run finished, so an experiment rerun on the same directory
resumes.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import itertools
import logging
import math
import os
import pathlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ml_collections
import numpy as np

from distill.data.annotate import AnnotationSettings, annotate
from distill.data.build import build
from distill.data.generate import GenerationSettings, generate
from distill.data.records import read_all, record_path
from distill.engine import EngineOptions, NeuralScorer, SearchlessEngine
from distill.evaluate import board_metrics, predictor_scores, summarize_boards
from distill.train import TrainingSettings, load_trained_predictor, train
from zerolab import ProgramSection, section_dataclass

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class PreparedData:
    """A built dataset and how it was made."""

    dataset_directory: pathlib.Path
    description: dict[str, Any]
    pgn_files: list[pathlib.Path]
    annotation_report: dict[str, Any]
    seconds: dict[str, float]

    @property
    def positions(self) -> int:
        """Annotated boards (the training split's colour mirrors, if any, are not counted)."""
        counts = self.description["counts"]
        return counts["train"]["positions"] - counts["train"]["mirrored_positions"] + counts["test"]["positions"]


def data_directory_of(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> pathlib.Path:
    """Where a run's data live: ``config.data.directory`` when set (data shared between runs), else ``WORKDIR/data``."""
    return pathlib.Path(config.data.directory) if config.data.directory else pathlib.Path(workdir) / "data"


def generation_settings(config: ml_collections.ConfigDict) -> GenerationSettings:
    return section_dataclass(GenerationSettings, {**config.generate.to_dict(), "engine": config.engine,
                                                  "seed": config.seed}, "generate")


def annotation_settings(config: ml_collections.ConfigDict) -> AnnotationSettings:
    return section_dataclass(AnnotationSettings, {**config.annotate.to_dict(), "engine": config.engine}, "annotate")


def check_config(config: ml_collections.ConfigDict,
                 variants: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Every settings object a pipeline run builds from ``config`` — generation (unless PGN files are given),
    annotation, and the training settings of each variant (``{name: config.train overrides}``; default: the one
    predictor of ``config.train``) — built before anything is written, so a bad value is a ValueError naming it."""
    if not config.data.pgn_files:
        generation_settings(config)
    annotation_settings(config)
    if not 0 < config.data.test_fraction < 1:
        raise ValueError(f"data.test_fraction must be in (0, 1), got {config.data.test_fraction!r}")
    for overrides in (variants if variants is not None else {config.train.predictor: {}}).values():
        training_settings(config, **overrides)


def prepare_data(config: ml_collections.ConfigDict, data_directory: str | pathlib.Path,
                 show_progress: bool = True) -> PreparedData:
    """Generate (unless ``config.data.pgn_files`` names PGN files), annotate and build under ``data_directory``."""
    data_directory = pathlib.Path(data_directory)
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    if config.data.pgn_files:
        pgn_files = sorted(pathlib.Path(p) for p in glob.glob(config.data.pgn_files))
        if not pgn_files:
            raise FileNotFoundError(f"data.pgn_files={config.data.pgn_files!r} matches no file")
    else:
        pgn_files = generate(generation_settings(config), data_directory / "games", num_workers=config.workers,
                             show_progress=show_progress)
    seconds["generate"] = time.perf_counter() - start
    start = time.perf_counter()
    report = annotate(pgn_files, data_directory / "annotations", annotation_settings(config),
                      num_workers=config.workers, show_progress=show_progress)
    seconds["annotate"] = time.perf_counter() - start
    start = time.perf_counter()
    description = build(data_directory / "annotations", data_directory / "dataset",
                        test_fraction=config.data.test_fraction, seed=config.seed,
                        mirror_train=config.data.mirror_train)
    seconds["build"] = time.perf_counter() - start
    return PreparedData(data_directory / "dataset", description, pgn_files, report, seconds)


def training_settings(config: ml_collections.ConfigDict, **overrides: Any) -> TrainingSettings:
    return section_dataclass(TrainingSettings, {**config.train.to_dict(), "seed": config.seed, **overrides}, "train")


def steps_for_epochs(examples: int, epochs: float, batch_size: int) -> int:
    """Optimiser steps of ``batch_size`` that pass ``epochs`` times over ``examples``: ⌈epochs · examples / batch⌉."""
    if examples < 1 or epochs <= 0 or batch_size < 1:
        raise ValueError(f"steps_for_epochs needs examples >= 1, epochs > 0 and batch_size >= 1, got examples="
                         f"{examples}, epochs={epochs}, batch_size={batch_size}")
    return math.ceil(epochs * examples / batch_size)


def equal_steps(config: ml_collections.ConfigDict, data: PreparedData) -> int | None:
    """The steps every variant trains when ``config.action_value_epochs`` > 0 (the paper's ablation protocol: the same
    steps for every predictor, as many as pass that many times over the training split's action values — its
    Table 2 at 3.19); None when the key is absent or 0 (each variant trains ``train.num_steps``)."""
    epochs = config.get("action_value_epochs") or 0.0
    if epochs <= 0:
        return None
    return steps_for_epochs(int(data.description["counts"]["train"]["action_values"]), epochs,
                            config.train.batch_size)


def train_predictor(settings: TrainingSettings, data: PreparedData, run_directory: str | pathlib.Path,
                    show_progress: bool = True) -> dict[str, Any]:
    start = time.perf_counter()
    result = train(settings, data.dataset_directory, run_directory, show_progress=show_progress)
    return {**result, "seconds": time.perf_counter() - start}


def test_records(data: PreparedData, max_positions: int) -> list[dict[str, Any]]:
    """The test split's position records (the first ``max_positions`` when positive)."""
    records = read_all(record_path(data.dataset_directory, "test", "positions"))
    return records[:max_positions] if max_positions > 0 else records


def load_engine(run_directory: str | pathlib.Path, options: EngineOptions | None = None,
                name: str | None = None) -> SearchlessEngine:
    """The searchless engine of a run directory's newest checkpoint (EMA parameters)."""
    trained = load_trained_predictor(run_directory)
    scorer = NeuralScorer(trained.predictor, trained.model_config, trained.params)
    return SearchlessEngine(scorer, options, name=name)


def evaluate_run(run_directory: str | pathlib.Path, records: Sequence[dict[str, Any]], puzzles_path: str = "",
                 options: EngineOptions | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Test-split metrics of a run's predictor (with its puzzle accuracy when ``puzzles_path`` is given), and its
    per-board metrics (``distill.evaluate.board_metrics``) for paired comparisons."""
    start = time.perf_counter()
    engine = load_engine(run_directory, options)
    scores, log_loss = predictor_scores(engine.scorer, records)
    per_board = board_metrics(records, scores)
    metrics = {**summarize_boards(per_board), "log_loss": log_loss}
    if puzzles_path:
        from distill.puzzles import puzzle_accuracy, read_puzzles

        puzzles, problems = read_puzzles(puzzles_path)
        with engine:
            metrics.update(puzzle_accuracy(puzzles, engine.choose_move))
        metrics["puzzles_skipped"] = len(problems)
    metrics["seconds"] = time.perf_counter() - start
    return metrics, per_board


def records_fingerprint(records: Sequence[dict[str, Any]]) -> str:
    """A digest of the boards (FENs, in order) that an evaluation is about."""
    return hashlib.sha256("\n".join(record["fen"] for record in records).encode()).hexdigest()


def cached(path: str | pathlib.Path, key: Mapping[str, Any], compute: Callable[[], Any]) -> Any:
    """``compute()``'s value, kept as JSON at ``path`` with ``key``: a later call with an equal key reads it back.

    Numpy arrays become lists (NaN is kept), so a fresh value and a read-back one are alike; the file is replaced
    atomically, so a run killed while writing leaves the previous file or none.
    """
    path, key = pathlib.Path(path), json.loads(json.dumps(dict(key)))
    if path.exists():
        saved = json.loads(path.read_text())
        if saved.get("key") == key:
            return saved["value"]
    text = json.dumps({"key": key, "value": compute()}, default=_jsonable)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)
    return json.loads(text)["value"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def tournament(engines: Mapping[str, SearchlessEngine], book_path: str | pathlib.Path, num_games: int,
               seed: int, max_game_plies: int, show_progress: bool = True) -> dict[str, Any]:
    """Round robin in the ``zerolab`` arena (pgx referee), rated by ``zerolab.evaluation.elo``; resumes from the book.

    Each pair (in sorted name order) plays ``num_games`` games (half with each colour) with the key
    ``fold_in(key(seed), pair index)``; a pair that already has as many games in the Elo book (a rerun) is not played
    again (``zerolab.evaluation.rating.rate_contestants`` in round-robin mode).  Returns the ratings (rating, σ) and the results.
    """
    import jax

    from distill.agent import SearchlessAgent
    from zerolab import ChessGame
    from zerolab.play import play_match
    from zerolab.evaluation import Contestant, EloBook, EvaluationConfig, rate_contestants

    game = ChessGame("chess")
    agents = {name: SearchlessAgent(engine, game, name=name) for name, engine in engines.items()}
    book = EloBook.load_or_create(book_path)
    for name in agents:  # the book lists the players in the engines' order
        book.add_player(name)
    book.save(book_path)
    names = sorted(agents)
    pair_index = {pair: index for index, pair in enumerate(itertools.combinations(names, 2))}
    key = jax.random.key(seed)

    def play(name_a: str, name_b: str):
        match = play_match(game, agents[name_a], agents[name_b], num_games,
                           jax.random.fold_in(key, pair_index[(name_a, name_b)]), max_game_plies=max_game_plies,
                           show_progress=show_progress)
        return match.result

    contestants = [Contestant(name, "distill", 0, 0.0, lambda name=name: agents[name]) for name in names]
    evaluation = EvaluationConfig(games=num_games, max_game_plies=max_game_plies, mode="round_robin")
    book, _ = rate_contestants(contestants, game, evaluation, pathlib.Path(book_path), pathlib.Path(book_path).parent,
                               seed, show_progress, play=play)
    logger.info("tournament ratings:\n%s", book.format_table())
    return {"ratings": {name: {"elo": rating, "sigma": sigma} for name, (rating, sigma) in book.ratings().items()},
            "results": [result.to_dict() for result in book.results], "table": book.format_table()}


def plan_variants(config: ml_collections.ConfigDict, variants: Mapping[str, Mapping[str, Any]],
                  title: str) -> ProgramSection:
    """The programs of training every variant, a section of ``python -m experiments plan`` titled ``title``: each
    one's compiled training step and scoring pass.  Data generation and annotation run Stockfish on CPUs and are not
    planned here."""
    from distill.train import plan_training

    boards = config.evaluate.max_test_positions
    programs = [program for name, overrides in variants.items()
                for program in plan_training(training_settings(config, **overrides), f"{name}: training step",
                                             evaluation_boards=boards)]
    notes = ["not planned: generating and annotating the data (Stockfish on CPU workers), the tournament (batch-1 moves)"]
    if boards <= 0:
        notes.append("evaluate.max_test_positions = 0 scores every test board: their number is the data's")
    return ProgramSection(title, programs, notes)


__all__ = ["PreparedData", "cached", "check_config", "data_directory_of", "equal_steps", "evaluate_run", "load_engine",
           "prepare_data", "records_fingerprint", "steps_for_epochs", "test_records", "tournament", "train_predictor",
           "training_settings"]
