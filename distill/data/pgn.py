"""Positions from PGN files, with every unreadable game reported by file, line and game number, then skipped.

python-chess does not raise on bad PGN: it records the problem in ``game.errors`` (an illegal or ambiguous move,
an unparseable token, a bad FEN header) and stops reading the game's moves there.  :func:`read_games` turns each
such game into a :class:`Problem` that names where it starts, so a caller can report it and go on.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import logging
import os
import pathlib
from collections.abc import Iterator, Sequence

import chess
import chess.pgn

from zerolab import validate_fen

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Problem:
    """Input that was skipped: where it is and why (``location`` is ``file:line`` or a chunk/position)."""

    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class GamePositions:
    """The positions of one game in which the side to move has a legal move.

    Attributes:
      game_id: ``<file id>#<game number>`` (1-based), unique among the input files (:func:`file_identifiers`).
      fens: [P] FENs before each move, plus the final position when the game did not end there.
    """

    game_id: str
    fens: tuple[str, ...]


class _QuietGameBuilder(chess.pgn.GameBuilder):
    """python-chess's game builder without its own logging: errors stay in ``game.errors`` for our report."""

    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)


class _LineCountingReader(io.TextIOBase):
    """A text stream that counts the lines read so far, so a game's first line can be named."""

    def __init__(self, stream: io.TextIOBase):
        self._stream = stream
        self.lines_read = 0

    def readline(self, size: int = -1) -> str:
        line = self._stream.readline(size)
        if line:
            self.lines_read += 1
        return line


def file_identifiers(paths: Sequence[str | pathlib.Path]) -> list[str]:
    """The name each PGN file's game ids start with: its file name, or, when several inputs share that name (files
    of different folders), its path relative to the folder all inputs are in, so that game ids stay unique."""
    paths = [pathlib.Path(path).absolute() for path in paths]
    names = collections.Counter(path.name for path in paths)
    if all(count == 1 for count in names.values()):
        return [path.name for path in paths]
    common = pathlib.Path(os.path.commonpath([str(path.parent) for path in paths]))
    return [path.name if names[path.name] == 1 else path.relative_to(common).as_posix() for path in paths]


def read_games(path: str | pathlib.Path, file_id: str | None = None) -> Iterator[GamePositions | Problem]:
    """Each game of the PGN file at ``path`` as its positions, or as a :class:`Problem` when it cannot be read.

    Game ids are ``<file_id>#<game number>``; ``file_id`` defaults to the file name (see :func:`file_identifiers`).
    """
    path = pathlib.Path(path)
    file_id = path.name if file_id is None else file_id
    with open(path, encoding="utf-8", errors="replace") as raw:
        stream = _LineCountingReader(raw)
        number = 0
        while True:
            first_line = stream.lines_read + 1
            try:
                game = chess.pgn.read_game(stream, Visitor=_QuietGameBuilder)
            except Exception as error:  # noqa: BLE001 - a reader failure skips the rest of the file, reported
                yield Problem(f"{path}:{first_line}", f"cannot read PGN ({type(error).__name__}: {error}); "
                                                      "rest of the file skipped")
                return
            if game is None:
                return
            number += 1
            location = f"{path}:{first_line} (game {number}, {_players(game)})"
            if game.errors:
                reasons = "; ".join(str(error) for error in game.errors)
                yield Problem(location, f"game skipped: {reasons}")
                continue
            try:
                yield GamePositions(f"{file_id}#{number}", tuple(_positions(game)))
            except (ValueError, AssertionError) as error:
                yield Problem(location, f"game skipped: {error}")


def _players(game: chess.pgn.Game) -> str:
    return f"{game.headers.get('White', '?')} vs {game.headers.get('Black', '?')}"


def _positions(game: chess.pgn.Game) -> Iterator[str]:
    board = game.board()
    validate_fen("chess", board.fen())  # raises a ValueError naming the start position and its problems
    for move in game.mainline_moves():
        yield board.fen()
        board.push(move)
    if any(board.legal_moves):
        yield board.fen()


def board_key(fen: str) -> str:
    """The part of a FEN that identifies a board for de-duplication: pieces, side, castling, en passant."""
    return " ".join(fen.split()[:4])


__all__ = ["GamePositions", "Problem", "board_key", "file_identifiers", "read_games"]
