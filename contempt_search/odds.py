"""Odds openings: the start position with one of the odds-giver's pieces removed (queen, rook, knight or bishop odds).

The removed piece is the traditional one: the queen, the queen's rook (a1/a8, with its castling right), the queen's
knight (b1/b8) or the queen's bishop (c1/c8).  Gardner chess (5×5, ``rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1``) has one
of each, on the same files.  White moves first whoever gives the odds; the arena plays the giver on each colour in
half the games (``zerolab match --start-fens``, or :func:`odds_fens`).
"""

from __future__ import annotations

import chess

from zerolab.api import InvalidPositionError

ODDS_PIECES = {"queen": "d", "rook": "a", "knight": "b", "bishop": "c"}
COLOURS = ("white", "black")
GARDNER_START = "rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1"
GAMES = ("chess", "gardner_chess")


def odds_fen(game_name: str, piece: str, giver: str) -> str:
    """The start position of ``game_name`` without the ``giver``'s (``white``/``black``) ``piece``."""
    if game_name not in GAMES:
        raise ValueError(f"odds positions exist for {GAMES}, not {game_name!r}")
    if piece not in ODDS_PIECES:
        raise ValueError(f"odds piece must be one of {sorted(ODDS_PIECES)}, got {piece!r}")
    if giver not in COLOURS:
        raise ValueError(f"the odds-giver must be one of {COLOURS}, got {giver!r}")
    file = ODDS_PIECES[piece]
    if game_name == "chess":
        board = chess.Board()
        square = chess.parse_square(file + ("1" if giver == "white" else "8"))
        board.remove_piece_at(square)
        board.castling_rights = board.clean_castling_rights()
        if not board.is_valid():
            raise InvalidPositionError(f"odds position {board.fen()} is not valid: {board.status()!r}")
        return board.fen()
    ranks = GARDNER_START.split()[0].split("/")
    index = "abcde".index(file)
    row = 4 if giver == "white" else 0  # ranks are listed from the 5th down to the 1st
    rank = ranks[row]
    ranks[row] = rank[:index] + "1" + rank[index + 1:]
    return " ".join(["/".join(ranks)] + GARDNER_START.split()[1:])


def odds_fens(game_name: str, piece: str) -> list[str]:
    """The two odds openings of a match: White gives the odds, then Black does."""
    return [odds_fen(game_name, piece, giver) for giver in COLOURS]
