"""FEN → 77 tokens and the 1968-move action vocabulary of "Grandmaster-Level Chess Without Search" (appendix A.1).

A position is written as a fixed-length string of 77 characters, each one token:

====================  ======  ==============================================================================
field                 tokens  encoding
====================  ======  ==============================================================================
side to move          1       ``w`` or ``b``
board                 64      the FEN board from a8 to h1, rank by rank, empty squares as ``.``; never flipped
castling rights       4       the FEN field (``KQkq`` order) padded on the right with ``.``; ``-`` is ``....``
en-passant square     2       the square (``e3``), or ``..`` when there is none
halfmove clock        3       decimal digits padded on the right with ``.`` (``7..``)
fullmove number       3       decimal digits padded on the right with ``.`` (``42.``)
====================  ======  ==============================================================================

The alphabet has 31 symbols: the digits, the files ``a``–``h``, the piece letters ``pnrkqPBNRQK`` (lowercase ``b``
is the file b, a black bishop and Black to move at once: the field's position tells them apart), ``w`` and ``.``.

The action vocabulary is every move a queen or a knight can make from every square of an empty board (1792 UCI
moves, castling included as the king's two-square move) plus every pawn promotion to q, r, b or n from the 7th to
the 8th rank and from the 2nd to the 1st (176), sorted as UCI strings: 1968 actions.

Both maps are invertible: :func:`detokenize` inverts :func:`tokenize` for every FEN whose counters fit in three
digits, and :data:`ACTIONS` / :data:`ACTION_INDEX` invert each other.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

import chess
import numpy as np

CHARACTERS = "0123456789abcdefghpnrkqPBNRQKw."
NUM_CHARACTERS = len(CHARACTERS)  # 31
SEQUENCE_LENGTH = 77
EMPTY = "."

# Where each field lies in the 77 tokens.
SIDE_SLICE = slice(0, 1)
BOARD_SLICE = slice(1, 65)
CASTLING_SLICE = slice(65, 69)
EN_PASSANT_SLICE = slice(69, 71)
HALFMOVE_SLICE = slice(71, 74)
FULLMOVE_SLICE = slice(74, 77)

_CHARACTER_INDEX = np.full(256, -1, dtype=np.int32)
_CHARACTER_INDEX[np.frombuffer(CHARACTERS.encode("ascii"), dtype=np.uint8)] = np.arange(NUM_CHARACTERS)
_CHARACTER_ARRAY = np.frombuffer(CHARACTERS.encode("ascii"), dtype=np.uint8)


_SQUARE_SYMBOLS = frozenset("pnbrqkPNBRQK" + EMPTY)
_CASTLING_SYMBOLS = frozenset("KQkq")


class TokenizationError(ValueError):
    """A FEN or token sequence that the 77-token format cannot represent; the message names it."""


def fen_to_text(fen: str) -> str:
    """The 77-character string of ``fen`` (the table in the module docstring)."""
    fields = fen.split()
    if len(fields) != 6:
        raise TokenizationError(f"FEN {fen!r} has {len(fields)} fields; expected 6 (board side castling "
                                "en-passant halfmove fullmove)")
    board, side, castling, en_passant, halfmove, fullmove = fields
    if side not in ("w", "b"):
        raise TokenizationError(f"FEN {fen!r}: side to move {side!r} is not 'w' or 'b'")
    squares = "".join(EMPTY * int(c) if c.isdigit() else c for c in board.replace("/", ""))
    if len(squares) != 64 or board.count("/") != 7 or not set(squares) <= _SQUARE_SYMBOLS:
        raise TokenizationError(f"FEN {fen!r}: board {board!r} is not 8 ranks of 8 squares of pnbrqkPNBRQK")
    if castling != "-" and (len(castling) > 4 or not set(castling) <= _CASTLING_SYMBOLS):
        raise TokenizationError(f"FEN {fen!r}: castling field {castling!r} is not '-' or a subset of 'KQkq'")
    if en_passant != "-" and (len(en_passant) != 2 or en_passant[0] not in "abcdefgh" or en_passant[1] not in "36"):
        raise TokenizationError(f"FEN {fen!r}: en-passant field {en_passant!r} is not '-' or a square on rank 3/6")
    for name, counter in (("halfmove clock", halfmove), ("fullmove number", fullmove)):
        if not counter.isdigit() or len(counter) > 3:
            raise TokenizationError(f"FEN {fen!r}: {name} {counter!r} is not a number of at most 3 digits")
    return (
        side
        + squares
        + ("" if castling == "-" else castling).ljust(4, EMPTY)
        + ("" if en_passant == "-" else en_passant).ljust(2, EMPTY)
        + halfmove.ljust(3, EMPTY)
        + fullmove.ljust(3, EMPTY)
    )


def tokenize(fen: str) -> np.ndarray:
    """[77] uint8 token ids of ``fen``; raises :class:`TokenizationError` naming a FEN it cannot encode."""
    text = fen_to_text(fen)
    return _CHARACTER_INDEX[np.frombuffer(text.encode("ascii"), dtype=np.uint8)].astype(np.uint8)


def tokenize_many(fens: Iterable[str]) -> np.ndarray:
    """[N, 77] uint8 token ids of the FENs."""
    texts = [fen_to_text(fen) for fen in fens]
    if not texts:
        return np.zeros((0, SEQUENCE_LENGTH), dtype=np.uint8)
    codes = np.frombuffer("".join(texts).encode("ascii"), dtype=np.uint8).reshape(len(texts), SEQUENCE_LENGTH)
    return _CHARACTER_INDEX[codes].astype(np.uint8)


def detokenize(tokens: Sequence[int] | np.ndarray) -> str:
    """The FEN of [77] token ids (inverse of :func:`tokenize`)."""
    tokens = np.asarray(tokens)
    if tokens.shape != (SEQUENCE_LENGTH,) or tokens.min(initial=0) < 0 or tokens.max(initial=0) >= NUM_CHARACTERS:
        raise TokenizationError(f"expected {SEQUENCE_LENGTH} token ids in [0, {NUM_CHARACTERS}), got shape "
                                f"{tokens.shape} with values {tokens.min(initial=0)}..{tokens.max(initial=0)}")
    text = _CHARACTER_ARRAY[tokens.astype(np.int64)].tobytes().decode("ascii")
    squares = text[BOARD_SLICE]
    ranks = []
    for rank in range(8):
        row, empty = "", 0
        for character in squares[rank * 8:(rank + 1) * 8]:
            if character == EMPTY:
                empty += 1
                continue
            row += (str(empty) if empty else "") + character
            empty = 0
        ranks.append(row + (str(empty) if empty else ""))
    castling = text[CASTLING_SLICE].rstrip(EMPTY) or "-"
    en_passant = text[EN_PASSANT_SLICE].rstrip(EMPTY) or "-"
    halfmove = text[HALFMOVE_SLICE].rstrip(EMPTY)
    fullmove = text[FULLMOVE_SLICE].rstrip(EMPTY)
    return " ".join(["/".join(ranks), text[SIDE_SLICE], castling, en_passant, halfmove, fullmove])


# --- actions ------------------------------------------------------------------------------------------------------

_QUEEN_DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))
_KNIGHT_STEPS = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))


@functools.cache
def _all_actions() -> tuple[str, ...]:
    moves = set()
    for origin in chess.SQUARES:
        file, rank = chess.square_file(origin), chess.square_rank(origin)
        rays = [[(file + d_file * n, rank + d_rank * n) for n in range(1, 8)] for d_file, d_rank in _QUEEN_DIRECTIONS]
        jumps = [[(file + d_file, rank + d_rank)] for d_file, d_rank in _KNIGHT_STEPS]
        for path in rays + jumps:
            for to_file, to_rank in path:
                if not (0 <= to_file < 8 and 0 <= to_rank < 8):
                    break
                moves.add(chess.square_name(origin) + chess.square_name(chess.square(to_file, to_rank)))
    for from_rank, to_rank in ((6, 7), (1, 0)):
        for file in range(8):
            for to_file in (file - 1, file, file + 1):
                if 0 <= to_file < 8:
                    step = chess.square_name(chess.square(file, from_rank)) + chess.square_name(
                        chess.square(to_file, to_rank))
                    moves.update(step + piece for piece in "qrbn")
    return tuple(sorted(moves))


ACTIONS: tuple[str, ...] = _all_actions()
"""The 1968 UCI moves of the action vocabulary, sorted; ``ACTIONS[i]`` is action ``i``."""
NUM_ACTIONS = len(ACTIONS)
ACTION_INDEX: dict[str, int] = {move: index for index, move in enumerate(ACTIONS)}
"""UCI move → action id (inverse of :data:`ACTIONS`)."""
assert NUM_ACTIONS == 1968, NUM_ACTIONS


ACTION_FROM_SQUARE = np.array([chess.parse_square(move[:2]) for move in ACTIONS], dtype=np.int32)
"""[1968] origin square (python-chess numbering, a1 = 0) of each action."""
ACTION_TO_SQUARE = np.array([chess.parse_square(move[2:4]) for move in ACTIONS], dtype=np.int32)
"""[1968] destination square of each action."""
ACTION_PROMOTION = np.array(["-qrbn".index(move[4]) if len(move) == 5 else 0 for move in ACTIONS], dtype=np.int32)
"""[1968] 0 for no promotion, 1–4 for q, r, b, n."""


def move_to_action(move: str | chess.Move) -> int:
    """Action id of a UCI move (``e2e4``, ``e7e8q``); raises ``KeyError`` naming a move outside the vocabulary."""
    uci = move.uci() if isinstance(move, chess.Move) else move
    try:
        return ACTION_INDEX[uci]
    except KeyError:
        raise KeyError(f"move {uci!r} is not in the {NUM_ACTIONS}-move action vocabulary "
                       "(queen/knight moves and promotions in UCI)") from None


def action_to_move(action: int) -> str:
    """UCI move of an action id."""
    if not 0 <= int(action) < NUM_ACTIONS:
        raise IndexError(f"action {action} is outside [0, {NUM_ACTIONS})")
    return ACTIONS[int(action)]


def legal_actions(board: chess.Board) -> tuple[list[chess.Move], np.ndarray]:
    """The legal moves of ``board`` in python-chess order and their [k] int32 action ids."""
    moves = list(board.legal_moves)
    return moves, np.array([ACTION_INDEX[move.uci()] for move in moves], dtype=np.int32)


__all__ = [
    "ACTIONS", "ACTION_FROM_SQUARE", "ACTION_INDEX", "ACTION_PROMOTION", "ACTION_TO_SQUARE", "CHARACTERS", "NUM_ACTIONS", "NUM_CHARACTERS", "SEQUENCE_LENGTH", "TokenizationError",
    "action_to_move", "detokenize", "fen_to_text", "legal_actions", "move_to_action", "tokenize", "tokenize_many",
]
