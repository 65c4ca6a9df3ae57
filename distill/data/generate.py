"""An offline source of diverse games: Stockfish at mixed skill levels after random openings, with random moves.

Game ``n``'s random choices come from ``(seed, n)``: it opens with a uniformly random number (0 to
``max_random_opening_plies``) of uniformly random legal moves, then each side is a Stockfish of a skill level drawn
from ``skill_levels`` searching ``nodes_per_move`` nodes, except that any move is replaced by a uniformly random
legal move with probability ``random_move_probability``.  Stockfish's own moves are not reproducible: below Skill
Level 20 it picks among its candidates with a clock-seeded generator, so two runs with one seed give different
games (two runs of the tiny preset shared no chunk file) and different test boards.  A game stops when it is over
(draws by claim included) or after ``max_game_plies`` plies.  Games are written as PGN, ``games_per_chunk`` to a
file, by a pool of processes with one Stockfish per skill level each, and the job resumes where it stopped
(:mod:`distill.data.chunks`).
"""

from __future__ import annotations

import dataclasses
import logging
import pathlib
import random

import chess
import chess.pgn

from distill.data.chunks import ChunkStore, run_chunks
from zerolab import EngineError, UCIEngine, check_at_least, find_engine

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class GenerationSettings:
    """How many games, and how they are played (see the module docstring)."""

    num_games: int
    engine: str = "stockfish"
    skill_levels: tuple[int, ...] = (0, 3, 6, 10, 20)
    nodes_per_move: int = 2000
    max_random_opening_plies: int = 8
    random_move_probability: float = 0.05
    max_game_plies: int = 240
    games_per_chunk: int = 4
    seed: int = 0

    def __post_init__(self):
        for name in ("num_games", "games_per_chunk", "nodes_per_move", "max_game_plies"):
            check_at_least(f"generate.{name}", getattr(self, name), 1)
        check_at_least("generate.max_random_opening_plies", self.max_random_opening_plies, 0)
        if not self.skill_levels or not all(0 <= level <= 20 for level in self.skill_levels):
            raise ValueError(f"generate.skill_levels must list Stockfish skill levels from 0 to 20, got "
                             f"{tuple(self.skill_levels)}")
        if not 0.0 <= self.random_move_probability <= 1.0:
            raise ValueError(f"generate.random_move_probability must be in [0, 1], got {self.random_move_probability}")

    @property
    def num_chunks(self) -> int:
        return -(-self.num_games // self.games_per_chunk)

    def engine_spec(self, skill_level: int) -> str:
        return f"{self.engine}:skill={skill_level},nodes={self.nodes_per_move},threads=1,hash=16"


def generate(settings: GenerationSettings, directory: str | pathlib.Path, num_workers: int = 2,
             show_progress: bool = True) -> list[pathlib.Path]:
    """Play the games (resuming an interrupted run) and return the PGN files, in order."""
    find_engine(settings.engine)  # fail now, in the parent, with the install hint
    fingerprint = {key: list(value) if isinstance(value, tuple) else value
                   for key, value in dataclasses.asdict(settings).items()}
    store = ChunkStore(directory, settings.num_chunks, fingerprint, suffix="pgn")
    tasks = {chunk: range(chunk * settings.games_per_chunk,
                          min((chunk + 1) * settings.games_per_chunk, settings.num_games))
             for chunk in range(settings.num_chunks)}
    run_chunks(store, tasks, _play_chunk, _open_engines, (settings,), num_workers,
               description="generating games", unit="games", task_size=len, show_progress=show_progress)
    return [store.chunk_path(chunk) for chunk in range(settings.num_chunks)]


# --- worker side ----------------------------------------------------------------------------------------------------

_settings: GenerationSettings | None = None
_engines: dict[int, UCIEngine] = {}


def _open_engines(settings: GenerationSettings):
    global _settings
    _settings = settings
    _engines.clear()
    return _close_engines


def _close_engines() -> None:
    for engine in _engines.values():
        engine.close()
    _engines.clear()


def _engine(skill_level: int) -> UCIEngine:
    if skill_level not in _engines:
        _engines[skill_level] = UCIEngine(_settings.engine_spec(skill_level)).open()
    return _engines[skill_level]


def _play_chunk(game_numbers: range) -> tuple[str, list[dict[str, str]]]:
    texts, problems = [], []
    for number in game_numbers:
        try:
            texts.append(str(play_game(number, _settings, _engine)))
        except EngineError as error:
            problems.append({"location": f"generated game {number}", "message": f"game abandoned: {error}"})
            for engine in _engines.values():
                if engine.is_open:
                    engine.restart()
    return "\n\n".join(texts) + "\n", problems


def play_game(number: int, settings: GenerationSettings, engine_for_skill) -> chess.pgn.Game:
    """Game ``number`` of the generator; ``engine_for_skill(level)`` gives an open :class:`UCIEngine`."""
    rng = random.Random(f"{settings.seed}:{number}")
    skills = {chess.WHITE: rng.choice(settings.skill_levels), chess.BLACK: rng.choice(settings.skill_levels)}
    opening_plies = rng.randint(0, settings.max_random_opening_plies)
    board = chess.Board()
    for engine in {engine_for_skill(level) for level in skills.values()}:
        engine.new_game()
    while not board.is_game_over(claim_draw=True) and board.ply() < settings.max_game_plies:
        moves = list(board.legal_moves)
        if board.ply() < opening_plies or rng.random() < settings.random_move_probability:
            move = rng.choice(moves)
        else:
            move = chess.Move.from_uci(engine_for_skill(skills[board.turn]).play(board))  # sent with its moves
        board.push(move)
    game = chess.pgn.Game.from_board(board)
    game.headers.update({
        "Event": "zerolab distill generated game", "Site": "local", "Date": "????.??.??", "Round": str(number),
        "White": f"Stockfish skill {skills[chess.WHITE]}", "Black": f"Stockfish skill {skills[chess.BLACK]}",
        "Result": board.result(claim_draw=True) if board.is_game_over(claim_draw=True) else "*",
        "RandomOpeningPlies": str(opening_plies),
    })
    return game


__all__ = ["GenerationSettings", "generate", "play_game"]
