"""Annotation with Stockfish: the state value of every board and the action value of every legal move.

**One search per board.**  Each board is searched once in MultiPV mode with as many lines as it has legal moves
(``analyse(fen, limit, multipv=k)``).  Stockfish then gives every root move its own principal variation and an
exact score from the same search (each line is searched with its own aspiration window, not as a bound), all from
the side to move, sharing one hash table.  That is the action value Q(s, a) of every move at the cost of one
search, where analysing the k resulting positions separately costs k searches and k round trips (timings in
distill/README.md, "Data path").  The state
value V(s) is the best of the action values, the board's worth to the side to move (the first line is usually that
move, but not always when a node-limited search stops partway through an iteration).  The budget is
``nodes_per_move × k`` nodes or ``time_per_move × k`` seconds, so each move gets a comparable share (the paper used
50 ms per state-action pair); a search that stops before every line has a score (very small budgets do) is redone
with twice the budget, up to three times, then the board is reported and skipped.  Each worker's Stockfish keeps
its hash table from board to board: clearing it (``ucinewgame``) costs several times the search itself (see
distill/README.md, "Data path"), so a board's scores can differ slightly with the boards its worker searched
before it (a resumed run is complete and duplicate-free, not bit-identical).

**Win probability.**  Scores become the win probability of the side to move with the Lichess formula
``sigmoid(0.00368208 · cp)`` (Lichess's "winning chances", also used by the paper), without Lichess's clamp of cp
to ±1000; a mate for the side to move is 1 and being mated is 0.

**Positions.**  Every position of every readable game in which the side to move has a move; games python-chess
cannot read are reported (file, line, game number) and skipped.  Boards are de-duplicated on pieces, side,
castling and en passant (the first occurrence's move counters are kept); each keeps the list of games it came
from, which the build step uses to split by game.

**Resuming.**  Positions are annotated in chunks (:mod:`distill.data.chunks`): ``positions.jsonl`` fixes their
order, each chunk is committed atomically, and a rerun with the same inputs and settings does only the chunks
that are missing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import pathlib
from collections.abc import Iterable, Sequence
from typing import Any

import chess
import chess.engine

from distill.data.chunks import ChunkStore, run_chunks, write_atomically
from distill.data.pgn import GamePositions, Problem, board_key, file_identifiers, read_games
from zerolab import EngineError, UCIEngine, find_engine

logger = logging.getLogger(__name__)

LICHESS_CENTIPAWN_SCALE = 0.00368208
POSITIONS_FILE = "positions.jsonl"
MAX_RETRIES = 3


def win_probability(score: chess.engine.Score) -> float:
    """Win probability of the side the score belongs to: 1/0 for mates, ``sigmoid(0.00368208 · cp)`` otherwise."""
    if score.is_mate():
        return 1.0 if score > chess.engine.Cp(0) else 0.0
    return 1.0 / (1.0 + math.exp(-LICHESS_CENTIPAWN_SCALE * score.score()))


@dataclasses.dataclass(frozen=True)
class AnnotationSettings:
    """The engine and its budget per legal move (exactly one of ``nodes_per_move`` and ``time_per_move``)."""

    engine: str = "stockfish"
    nodes_per_move: int | None = 200
    time_per_move: float | None = None
    hash_megabytes: int = 16
    positions_per_chunk: int = 64

    def __post_init__(self):
        if (self.nodes_per_move is None) == (self.time_per_move is None):
            raise ValueError("give exactly one of nodes_per_move and time_per_move "
                             f"(got {self.nodes_per_move!r} and {self.time_per_move!r})")
        if self.positions_per_chunk < 1:
            raise ValueError(f"positions_per_chunk must be positive, got {self.positions_per_chunk}")

    def limit(self, num_moves: int, scale: int = 1) -> chess.engine.Limit:
        if self.nodes_per_move is not None:
            return chess.engine.Limit(nodes=self.nodes_per_move * num_moves * scale)
        return chess.engine.Limit(time=self.time_per_move * num_moves * scale)

    def engine_spec(self) -> str:
        return f"{self.engine}:threads=1,hash={self.hash_megabytes}"


@dataclasses.dataclass
class Manifest:
    """The unique boards to annotate, in a fixed order, and the problems met while reading the games."""

    positions: list[dict[str, Any]]
    problems: list[Problem]
    num_games: int
    num_boards_read: int

    def digest(self) -> str:
        return hashlib.sha256(_jsonl(self.positions).encode()).hexdigest()


def collect_positions(pgn_paths: Sequence[str | pathlib.Path]) -> Manifest:
    """Unique boards (``{"fen", "games"}``) of the games in ``pgn_paths``, in file and move order."""
    positions: list[dict[str, Any]] = []
    index_of: dict[str, int] = {}
    problems: list[Problem] = []
    num_games = num_boards = 0
    for path, file_id in zip(pgn_paths, file_identifiers(pgn_paths)):
        for item in read_games(path, file_id):
            if isinstance(item, Problem):
                logger.warning("%s", item)
                problems.append(item)
                continue
            num_games += 1
            num_boards += len(item.fens)
            _add_game(item, positions, index_of)
    return Manifest(positions, problems, num_games, num_boards)


def _add_game(game: GamePositions, positions: list[dict[str, Any]], index_of: dict[str, int]) -> None:
    for fen in game.fens:
        key = board_key(fen)
        if key not in index_of:
            index_of[key] = len(positions)
            positions.append({"fen": fen, "games": [game.game_id]})
        elif game.game_id not in positions[index_of[key]]["games"]:
            positions[index_of[key]]["games"].append(game.game_id)


def annotate(pgn_paths: Sequence[str | pathlib.Path], directory: str | pathlib.Path, settings: AnnotationSettings,
             num_workers: int = 2, show_progress: bool = True) -> dict[str, Any]:
    """Annotate every unique board of the games (resuming an interrupted run); returns counts and problems.

    Writes ``directory/positions.jsonl`` (the boards to annotate, in order), ``directory/chunk-*.jsonl`` (annotated
    records and per-board problems) and ``directory/progress.json``.
    """
    find_engine(settings.engine)
    directory = pathlib.Path(directory)
    manifest = collect_positions(pgn_paths)
    if not manifest.positions:
        raise ValueError(f"no positions in {len(pgn_paths)} PGN file(s): {[str(p) for p in pgn_paths][:5]}")
    fingerprint = {**dataclasses.asdict(settings), "positions_sha256": manifest.digest(),
                   "num_positions": len(manifest.positions)}
    num_chunks = -(-len(manifest.positions) // settings.positions_per_chunk)
    store = ChunkStore(directory, num_chunks, fingerprint, suffix="jsonl")
    positions_text = _jsonl(manifest.positions)
    positions_path = directory / POSITIONS_FILE
    if not positions_path.exists() or positions_path.read_text(encoding="utf-8") != positions_text:
        write_atomically(positions_path, positions_text)  # a resumed run leaves the same list unwritten
    size = settings.positions_per_chunk
    tasks = {chunk: [(index, manifest.positions[index])
                     for index in range(chunk * size, min((chunk + 1) * size, len(manifest.positions)))]
             for chunk in range(num_chunks)}
    problems = run_chunks(store, tasks, _annotate_chunk, _open_engine, (settings,), num_workers,
                          description="annotating positions", unit="positions", task_size=len,
                          show_progress=show_progress)
    return {"games": manifest.num_games, "boards_read": manifest.num_boards_read,
            "unique_boards": len(manifest.positions), "game_problems": [str(p) for p in manifest.problems],
            "position_problems_this_run": problems}


def read_annotations(directory: str | pathlib.Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(records sorted by index, problems) of a finished annotation directory."""
    directory = pathlib.Path(directory)
    index = json.loads((directory / "progress.json").read_text())
    if len(index["completed_chunks"]) != index["num_chunks"]:
        raise ValueError(f"annotation in {directory} is not finished: {len(index['completed_chunks'])} of "
                         f"{index['num_chunks']} chunks done; run `python -m distill.data annotate` again to resume")
    records, problems = [], []
    for chunk in range(index["num_chunks"]):
        for line in (directory / f"chunk-{chunk:06d}.jsonl").read_text().splitlines():
            entry = json.loads(line)
            (problems if "problem" in entry else records).append(entry)
    records.sort(key=lambda record: record["index"])
    return records, problems


# --- worker side ----------------------------------------------------------------------------------------------------

_settings: AnnotationSettings | None = None
_engine: UCIEngine | None = None


def _open_engine(settings: AnnotationSettings):
    global _settings, _engine
    _settings, _engine = settings, UCIEngine(settings.engine_spec()).open()
    return _close_engine


def _close_engine() -> None:
    if _engine is not None:
        _engine.close()


def _annotate_chunk(task: list[tuple[int, dict[str, Any]]]) -> tuple[str, list[dict[str, str]]]:
    entries, problems = [], []
    for index, position in task:
        try:
            entries.append({"index": index, **position, **annotate_board(_engine, position["fen"], _settings)})
        except (EngineError, ValueError) as error:
            location = f"position {index} ({position['fen']}) of game {position['games'][0]}"
            problems.append({"location": location, "message": f"skipped: {error}"})
            entries.append({"index": index, **position, "problem": str(error)})
            if isinstance(error, EngineError):
                _engine.restart()
    return _jsonl(entries), problems


def annotate_board(engine: UCIEngine, fen: str, settings: AnnotationSettings) -> dict[str, Any]:
    """``{"value", "moves", "action_values", "depth"}`` of one board; moves sorted by UCI.

    Raises:
      ValueError: the board has no legal move, or Stockfish did not score every move within the retries.
      EngineError: the engine crashed or hung (the caller restarts it).
    """
    board = chess.Board(fen)
    num_moves = board.legal_moves.count()
    if num_moves == 0:
        raise ValueError("no legal move: the game is over in this position")
    for attempt in range(MAX_RETRIES + 1):
        infos = engine.analyse(fen, settings.limit(num_moves, 2**attempt), multipv=num_moves,
                               info=chess.engine.INFO_BASIC | chess.engine.INFO_SCORE | chess.engine.INFO_PV)
        scored = {info["pv"][0].uci(): info for info in infos if info.get("pv") and "score" in info}
        if len(scored) == num_moves:
            break
    else:
        raise ValueError(f"Stockfish scored {len(scored)} of {num_moves} moves with "
                         f"{settings.limit(num_moves, 2**MAX_RETRIES)}")
    moves = sorted(scored)
    action_values = [win_probability(scored[move]["score"].relative) for move in moves]
    return {
        # the board is worth its best move; the first principal variation is not always it when a node-limited
        # search stops partway through an iteration, leaving some lines scored at the previous depth
        "value": max(action_values),
        "moves": moves,
        "action_values": action_values,
        "depth": max((int(info.get("depth", 0)) for info in infos), default=0),
    }


def _jsonl(entries: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(entry, separators=(",", ":")) + "\n" for entry in entries)


__all__ = ["AnnotationSettings", "LICHESS_CENTIPAWN_SCALE", "Manifest", "annotate", "annotate_board",
           "collect_positions", "read_annotations", "win_probability"]
