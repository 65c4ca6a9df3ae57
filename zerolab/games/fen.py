"""FEN positions of chess (8×8) and Gardner chess (5×5): the one place they are parsed and validated.

No JAX or pgx import (python-chess only), so engine clients, annotation workers and command-line start-up can
validate positions cheaply.  Every FEN that reaches pgx (``ChessGame.from_fen``), python-chess engines (Stockfish
segfaults on a malformed FEN, see :mod:`zerolab.engines.uci_client`) or the UCI server passes through :func:`validate_fen`.
"""

from __future__ import annotations

import re

import chess

CHESS_START_FEN = chess.STARTING_FEN
GARDNER_START_FEN = "rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1"
START_FENS = {"chess": CHESS_START_FEN, "gardner_chess": GARDNER_START_FEN}
BOARD_SIZES = {"chess": 8, "gardner_chess": 5}


class InvalidPositionError(ValueError):
    """A position (FEN, board, move list) that cannot be set up; the message names the input and what was expected."""


_GARDNER_FEN = re.compile(r"^([pnbrqkPNBRQK1-5]+(?:/[pnbrqkPNBRQK1-5]+){4}) ([wb]) (-) (-) (\d+) (\d+)$")


def validate_gardner_fen(fen: str) -> str:
    """Check a 5×5 FEN (``rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1``) and return it normalised; raise on error.

    Four fields (counters left out, as some tools write) get ``0 1``.
    """
    if not isinstance(fen, str):
        raise InvalidPositionError(f"a Gardner FEN must be a string, got {fen!r}")
    fields = fen.split()
    if len(fields) == 4:
        fields += ["0", "1"]
    normalised = " ".join(fields)
    match = _GARDNER_FEN.match(normalised)
    if not match:
        raise InvalidPositionError(
            f"invalid Gardner FEN {fen!r}: expected 5 ranks of pieces 'pnbrqkPNBRQK' or digits, side 'w' or 'b', "
            "'-' for castling and en passant, and two move counters"
        )
    ranks = match.group(1).split("/")
    for index, rank in enumerate(ranks):
        width = sum(int(c) if c.isdigit() else 1 for c in rank)
        if width != 5:
            raise InvalidPositionError(f"invalid Gardner FEN {fen!r}: rank {5 - index} covers {width} squares, not 5")
    for king in "Kk":
        if match.group(1).count(king) != 1:
            raise InvalidPositionError(f"invalid Gardner FEN {fen!r}: expected exactly one '{king}'")
    if any(c in "pP" for c in ranks[0] + ranks[4]):
        raise InvalidPositionError(f"invalid Gardner FEN {fen!r}: pawns on the first or last rank")
    return normalised


def validate_chess_fen(fen: str) -> str:
    """Check an 8×8 FEN with python-chess (``Board.status()``) and return it normalised; raise on error."""
    if not isinstance(fen, str):
        raise InvalidPositionError(f"a FEN must be a string, got {fen!r}")
    try:
        board = chess.Board(fen.strip())
    except ValueError as error:
        raise InvalidPositionError(f"invalid FEN {fen!r}: {error}") from None
    status = board.status()
    if status != chess.STATUS_VALID:
        problems = [flag.name.lower().replace("_", " ") for flag in chess.Status if flag and flag in status]
        raise InvalidPositionError(f"invalid FEN {fen!r}: {', '.join(problems)}")
    return board.fen(en_passant="legal")


def validate_fen(game: str, fen: str) -> str:
    """The normalised FEN of ``fen`` for ``game`` (``chess`` or ``gardner_chess``); raises InvalidPositionError."""
    if game == "chess":
        return validate_chess_fen(fen)
    if game == "gardner_chess":
        return validate_gardner_fen(fen)
    raise ValueError(f"FEN positions exist for chess and gardner_chess, not {game!r}")


def position_key(fen: str) -> str:
    """The part of a FEN that makes two positions the same position: placement, side, castling (no counters).

    The en passant field is left out because tools write it differently (pgx always, python-chess only when a
    capture is legal).
    """
    return " ".join(fen.split()[:3])


__all__ = [
    "BOARD_SIZES",
    "CHESS_START_FEN",
    "GARDNER_START_FEN",
    "InvalidPositionError",
    "START_FENS",
    "position_key",
    "validate_chess_fen",
    "validate_fen",
    "validate_gardner_fen",
]
