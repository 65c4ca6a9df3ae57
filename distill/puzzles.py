"""Puzzles in the Lichess CSV format: reading, solving, and making mate puzzles from games with Stockfish.

A puzzle row has ``FEN`` (the position before the opponent's move), ``Moves`` (UCI, space-separated: the
opponent's move first, then the solver's and the opponent's moves alternately) and ``Rating``; other columns
(``PuzzleId``, ``Themes``, …) are kept but unused.  A solver solves a puzzle when each of its moves is the
puzzle's move, or delivers mate (mate-in-n puzzles accept any mating last move, as Lichess does).

:func:`make_mate_puzzles` builds puzzles from game positions where Stockfish announces a forced mate for the side
to move: the puzzle starts one ply earlier (the opponent's game move is its first move) and its solution is
Stockfish's principal variation to mate.  The rating column of such puzzles is a placeholder (``1500``); they
exist to test the evaluation without downloading Lichess's database.
"""

from __future__ import annotations

import csv
import dataclasses
import logging
import pathlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import chess
import chess.engine

from distill.data.pgn import GamePositions, Problem, file_identifiers, read_games
from zerolab import validate_fen

logger = logging.getLogger(__name__)

REQUIRED_COLUMNS = ("FEN", "Moves", "Rating")
PLACEHOLDER_RATING = 1500


@dataclasses.dataclass(frozen=True)
class Puzzle:
    """One puzzle: the start ``fen``, the ``moves`` (opponent's first) and the ``rating``."""

    puzzle_id: str
    fen: str
    moves: tuple[str, ...]
    rating: int

    def to_row(self) -> dict[str, Any]:
        return {"PuzzleId": self.puzzle_id, "FEN": self.fen, "Moves": " ".join(self.moves), "Rating": self.rating}


def read_puzzles(path: str | pathlib.Path) -> tuple[list[Puzzle], list[Problem]]:
    """The readable puzzles of a Lichess-format CSV file and a problem (file:line) for each row skipped."""
    path = pathlib.Path(path)
    puzzles, problems = [], []
    with open(path, newline="", encoding="utf-8") as stream:
        reader = csv.DictReader(stream)
        missing = [column for column in REQUIRED_COLUMNS if column not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: puzzle CSV lacks the column(s) {missing}; expected at least "
                             f"{', '.join(REQUIRED_COLUMNS)} (the Lichess puzzle format)")
        for row in reader:
            location = f"{path}:{reader.line_num}"
            try:
                puzzles.append(_parse_row(row, location))
            except (ValueError, TypeError) as error:
                problems.append(Problem(location, f"puzzle skipped: {error}"))
                logger.warning("%s: puzzle skipped: %s", location, error)
    return puzzles, problems


def _parse_row(row: dict[str, str], location: str) -> Puzzle:
    board = chess.Board(validate_fen("chess", row["FEN"]))  # raises a ValueError naming the FEN and its problems
    moves = tuple(row["Moves"].split())
    if len(moves) < 2:
        raise ValueError(f"Moves {row['Moves']!r} needs the opponent's move and at least one solver move")
    for move in moves:
        board.push(board.parse_uci(move))  # raises ValueError naming an illegal move
    return Puzzle(row.get("PuzzleId") or location, row["FEN"], moves, int(row["Rating"]))


def write_puzzles(path: str | pathlib.Path, puzzles: Iterable[Puzzle]) -> None:
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=["PuzzleId", "FEN", "Moves", "Rating"])
        writer.writeheader()
        for puzzle in puzzles:
            writer.writerow(puzzle.to_row())


def is_solved(puzzle: Puzzle, choose_move: Callable[[chess.Board], chess.Move]) -> bool:
    """Whether ``choose_move`` (given the board with the puzzle's moves so far on its stack) solves ``puzzle``."""
    board = chess.Board(puzzle.fen)
    board.push_uci(puzzle.moves[0])
    for index in range(1, len(puzzle.moves), 2):
        move = choose_move(board.copy())
        if move.uci() != puzzle.moves[index]:
            board.push(move)
            return board.is_checkmate()
        board.push(move)
        if index + 1 < len(puzzle.moves):
            board.push_uci(puzzle.moves[index + 1])
    return True


def puzzle_accuracy(puzzles: Sequence[Puzzle], choose_move: Callable[[chess.Board], chess.Move]) -> dict[str, Any]:
    """The share of puzzles solved, overall and per rating band of 500."""
    solved = [is_solved(puzzle, choose_move) for puzzle in puzzles]
    bands: dict[str, list[bool]] = {}
    for puzzle, result in zip(puzzles, solved):
        low = puzzle.rating // 500 * 500
        bands.setdefault(f"{low}-{low + 499}", []).append(result)
    return {"puzzle_accuracy": sum(solved) / len(solved) if solved else None, "puzzles": len(solved),
            "by_rating": {band: sum(values) / len(values) for band, values in sorted(bands.items())}}


def make_mate_puzzles(pgn_paths: Sequence[str | pathlib.Path], engine, limit: chess.engine.Limit,
                      max_puzzles: int, max_mate: int = 2, plies_from_end: int | None = 12) -> list[Puzzle]:
    """Mate-in-``max_mate``-or-less puzzles from the games, with ``engine`` a ``zerolab.engines.uci_client.UCIEngine``.

    The positions after each game move (only the last ``plies_from_end`` of a game, where mates gather, unless
    None) are searched; where Stockfish announces mate in n ≤ ``max_mate`` for the side to move and its principal
    variation reaches mate, the game move and that variation make a puzzle.
    """
    puzzles: list[Puzzle] = []
    for path, file_id in zip(pgn_paths, file_identifiers(pgn_paths)):
        for item in read_games(path, file_id):
            if isinstance(item, Problem):
                logger.warning("%s", item)
                continue
            if plies_from_end is not None:
                item = GamePositions(item.game_id, item.fens[-plies_from_end - 1:])
            puzzles.extend(_mates_in_game(item, engine, limit, max_mate, max_puzzles - len(puzzles)))
            if len(puzzles) >= max_puzzles:
                return puzzles
    return puzzles


def _mates_in_game(game: GamePositions, engine, limit: chess.engine.Limit, max_mate: int,
                   wanted: int) -> list[Puzzle]:
    puzzles = []
    for before, after in zip(game.fens, game.fens[1:]):
        if len(puzzles) >= wanted:
            break
        opponent_move = _move_between(before, after)
        info = engine.analyse(after, limit)
        mate = info["score"].relative.mate()
        if mate is None or not 0 < mate <= max_mate:
            continue
        solution = [move.uci() for move in info.get("pv", [])][:2 * mate - 1]
        board = chess.Board(after)
        for move in solution:
            board.push_uci(move)
        if len(solution) == 2 * mate - 1 and board.is_checkmate():
            puzzles.append(Puzzle(f"{game.game_id}@{len(puzzles)}", before, (opponent_move, *solution),
                                  PLACEHOLDER_RATING))
    return puzzles


def _move_between(before: str, after: str) -> str:
    board = chess.Board(before)
    for move in board.legal_moves:
        board.push(move)
        if board.fen() == after:
            return move.uci()
        board.pop()
    raise ValueError(f"no legal move leads from {before!r} to {after!r}")


__all__ = ["Puzzle", "is_solved", "make_mate_puzzles", "puzzle_accuracy", "read_puzzles", "write_puzzles"]
