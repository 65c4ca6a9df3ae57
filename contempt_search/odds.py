"""Odds openings: the start position with one of the odds-giver's pieces removed (queen, rook, knight or bishop odds).

The removed piece is the traditional one: the queen, the queen's rook (a1/a8, with its castling right), the queen's
knight (b1/b8) or the queen's bishop (c1/c8).  Gardner chess (5×5, ``rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1``) has one
of each, on the same files.  White moves first whoever gives the odds; the arena plays the giver on each colour in
half the games (``zerolab match --start-fens``, or :func:`odds_fens`).
"""

from __future__ import annotations

import chess

from zerolab import validate_fen
from zerolab.games import START_FENS

ODDS_PIECES = {"queen": "d", "rook": "a", "knight": "b", "bishop": "c"}
COLOURS = ("white", "black")
GAMES = tuple(START_FENS)


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
        board = chess.Board(START_FENS["chess"])
        board.remove_piece_at(chess.parse_square(file + ("1" if giver == "white" else "8")))
        board.castling_rights = board.clean_castling_rights()
        return validate_fen("chess", board.fen())
    placement, *rest = START_FENS[game_name].split()
    ranks = placement.split("/")  # from the last rank down to the first; no empty square on either in the start
    row = len(ranks) - 1 if giver == "white" else 0
    index = "abcdefgh".index(file)
    ranks[row] = ranks[row][:index] + "1" + ranks[row][index + 1:]
    return validate_fen(game_name, " ".join(["/".join(ranks), *rest]))


def odds_fens(game_name: str, piece: str) -> list[str]:
    """The two odds openings of a match: White gives the odds, then Black does."""
    return [odds_fen(game_name, piece, giver) for giver in COLOURS]
