"""Handicap stones: where they go and the moves that place them, for the GTP engine and the arena alike.

pgx cannot put stones on the board without moves, so ``n`` handicap stones are Black moves alternating with White
passes (``C3 pass E5``): White moves next and nobody has just passed.  The arena takes that text as a start position
(:meth:`zerolab.GoGame.from_fen`); :mod:`sai_go.gtp` plays the same moves for ``fixed_handicap``.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The fixed handicap points, GTP's order (lower left, upper right, upper left, lower right): the 3-3 points on 7×7.
HANDICAP_POINTS = {7: ("C3", "E5", "C5", "E3")}


def fixed_handicap(size: int, stones: int) -> list[str]:
    """The first ``stones`` fixed handicap points of a ``size``×``size`` board (a ValueError outside 2..max)."""
    points = HANDICAP_POINTS.get(size, ())
    if not 2 <= stones <= len(points):
        limits = f"2..{len(points)}" if points else "none"
        raise ValueError(f"invalid number of handicap stones {stones} on {size}x{size}: {limits}")
    return list(points[:stones])


def handicap_moves(vertices: Sequence[str]) -> list[str]:
    """Black's stones as moves from the empty board, White passing in between (``["C3", "pass", "E5"]``)."""
    moves = []
    for index, vertex in enumerate(vertices):
        if index:
            moves.append("pass")
        moves.append(vertex)
    return moves


def handicap_start(size: int, stones: int) -> str:
    """The arena's start position for a fixed handicap of ``stones`` (``"C3 pass E5"``)."""
    return " ".join(handicap_moves(fixed_handicap(size, stones)))
