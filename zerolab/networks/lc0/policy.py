"""lc0's convolution policy (80 planes × 64 squares) as pgx's 4672 chess actions.

lc0's policy head outputs ``[80, 8, 8]``; the logit of a move is at index ``plane·64 + from`` with ``from = rank·8 +
file`` in the mover's frame (ranks mirrored when Black moves):

* planes 0–55: queen-like moves, ``7·direction + distance − 1``, directions N, NE, E, SE, S, SW, W, NW (0–7),
  distance 1–7;
* planes 56–63: knight moves (Δfile, Δrank) = (1, 2), (2, 1), (2, −1), (1, −2), (−1, −2), (−2, −1), (−2, 1), (−1, 2);
* planes 64–72: promotions from the 7th rank, ``64 + 3·direction + piece``, direction NW, N, NE, piece r, b, q;
  a knight promotion is the plain pawn move;
* planes 73–79: unused.

Castling is the king moving onto its own rook (e1→h1 is E distance 3, e1→a1 W distance 4).

pgx is the reverse for promotions (a queen promotion is the plain move, r/b/n under-promotions have planes) and
writes castling as e1→g1 / e1→c1.  So two pgx actions per square pair depend on the board: e1→g1 / e1→c1 is castling
only when the mover's king stands on e1, and a plain move from the 7th to the 8th rank is a queen promotion only when
a pawn stands on its origin.  :class:`PolicyMap` holds both readings and :func:`lc0_logits_to_actions` picks one per
position from the mover's pawns and king.  The tables are built from this layout alone.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from zerolab.games.chess import move_table

NUM_LC0_PLANES = 80
NUM_LC0_OUTPUTS = NUM_LC0_PLANES * 64
NUM_LC0_MOVES = 1858
UNMAPPED_LOGIT = -1e9
QUEEN_DIRECTIONS = ((0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1))  # (Δfile, Δrank)
KNIGHT_STEPS = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))
PROMOTION_PIECES = "rbq"  # lc0's promotion planes; a knight promotion is the plain move
NO_CONDITION, CASTLING_CONDITION, QUEEN_PROMOTION_CONDITION = 0, 1, 2
E1 = 4  # rank·8 + file of e1


def lc0_index(from_file: int, from_rank: int, to_file: int, to_rank: int, promotion: str = "") -> int:
    """lc0 policy index of a move in the mover's frame (castling written king-onto-rook), or -1 when it has none.

    ``promotion`` is ``""`` / ``"n"`` (the plain move), ``"r"``, ``"b"`` or ``"q"``.
    """
    file_step, rank_step = to_file - from_file, to_rank - from_rank
    origin = from_rank * 8 + from_file
    if not all(0 <= v < 8 for v in (from_file, from_rank, to_file, to_rank)) or (file_step, rank_step) == (0, 0):
        return -1
    if promotion in ("r", "b", "q"):
        if from_rank != 6 or rank_step != 1 or abs(file_step) > 1:
            return -1
        return (64 + 3 * (file_step + 1) + PROMOTION_PIECES.index(promotion)) * 64 + origin
    if (file_step, rank_step) in KNIGHT_STEPS:
        return (56 + KNIGHT_STEPS.index((file_step, rank_step))) * 64 + origin
    distance = max(abs(file_step), abs(rank_step))
    if file_step not in (0, distance, -distance) or rank_step not in (0, distance, -distance):
        return -1
    direction = QUEEN_DIRECTIONS.index((file_step // distance, rank_step // distance))
    return (7 * direction + distance - 1) * 64 + origin


@dataclasses.dataclass(frozen=True)
class PolicyMap:
    """For each pgx action (mover's frame): its lc0 index, the index when its board condition holds, and that
    condition.

    Attributes:
      plain: [4672] lc0 index of the action read as an ordinary move (an under-promotion: its r/b promotion or the
        plain pawn move for n), -1 for actions that are no move.
      conditional: [4672] lc0 index when ``condition`` holds (castling: the king onto its rook; queen promotion),
        -1 elsewhere.
      condition: [4672] 0 none, 1 the mover's king stands on e1, 2 a mover's pawn stands on the origin square.
      origin: [4672] origin square ``rank·8 + file`` (0 for actions that are no move).
    """

    plain: np.ndarray
    conditional: np.ndarray
    condition: np.ndarray
    origin: np.ndarray


@functools.cache
def policy_map() -> PolicyMap:
    """The table for pgx's 8×8 chess, built from the layouts of both (see the module docstring)."""
    table = move_table(8)
    num_actions = table.num_actions
    plain = -np.ones(num_actions, np.int32)
    conditional = -np.ones(num_actions, np.int32)
    condition = np.zeros(num_actions, np.int32)
    origin = np.zeros(num_actions, np.int32)
    for action in range(num_actions):
        destination = int(table.to_square[action])
        if destination < 0:
            continue
        from_file, from_rank = divmod(int(table.from_square[action]), 8)  # pgx squares are file·8 + rank
        to_file, to_rank = divmod(destination, 8)
        origin[action] = from_rank * 8 + from_file
        underpromotion = int(table.underpromotion[action])
        if underpromotion >= 0:  # pgx's r, b, n
            plain[action] = lc0_index(from_file, from_rank, to_file, to_rank, "rbn"[underpromotion])
            continue
        plain[action] = lc0_index(from_file, from_rank, to_file, to_rank)
        if (from_file, from_rank) == (4, 0) and to_rank == 0 and to_file in (2, 6):
            condition[action] = CASTLING_CONDITION
            conditional[action] = lc0_index(4, 0, 7 if to_file == 6 else 0, 0)
        elif from_rank == 6 and to_rank == 7 and abs(to_file - from_file) <= 1:
            condition[action] = QUEEN_PROMOTION_CONDITION
            conditional[action] = lc0_index(from_file, from_rank, to_file, to_rank, "q")
    return PolicyMap(plain, conditional, condition, origin)


def action_lc0_indices(mover_pawns: jax.Array, mover_king: jax.Array) -> jax.Array:
    """[B, 4672] lc0 index of each pgx action in each position (-1: no move), from the mover's pawns and king.

    Args:
      mover_pawns: [B, 64] the mover's pawns (non-zero where one stands), squares ``rank·8 + file``, mover's frame.
      mover_king: [B, 64] the mover's king, same layout.
    """
    table = policy_map()
    king_on_e1 = mover_king[:, E1] != 0  # [B]
    pawn_on_origin = mover_pawns[:, table.origin] != 0  # [B, 4672]
    condition = jnp.asarray(table.condition)[None, :]
    holds = ((condition == CASTLING_CONDITION) & king_on_e1[:, None]) | (
        (condition == QUEEN_PROMOTION_CONDITION) & pawn_on_origin)
    return jnp.where(holds, jnp.asarray(table.conditional)[None, :], jnp.asarray(table.plain)[None, :])


def lc0_logits_to_actions(lc0_logits: jax.Array, mover_pawns: jax.Array, mover_king: jax.Array) -> jax.Array:
    """[B, 4672] pgx action logits from lc0's [B, 80·64] policy output; actions that are no move get -1e9.

    Jittable; see :func:`action_lc0_indices` for the board arguments.
    """
    indices = action_lc0_indices(mover_pawns, mover_king)
    gathered = jnp.take_along_axis(lc0_logits, jnp.maximum(indices, 0), axis=1)
    return jnp.where(indices >= 0, gathered, UNMAPPED_LOGIT)


__all__ = ["PolicyMap", "policy_map", "lc0_index", "action_lc0_indices", "lc0_logits_to_actions", "NUM_LC0_MOVES",
           "NUM_LC0_OUTPUTS", "UNMAPPED_LOGIT"]
