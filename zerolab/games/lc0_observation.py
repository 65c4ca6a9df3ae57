"""lc0's 112 classical input planes from a pgx chess state (``make_game("chess", observation="lc0")``).

The planes lc0-format networks (maia) read, built on the device from pgx's state: eight positions of history (the
mover's and the opponent's pieces, repetitions), castling rights, side to move and the half-move clock, in lc0's
mover frame.  :class:`Lc0ObservationEnv` wraps pgx's chess environment so its states carry these planes instead of
pgx's 119; like :mod:`zerolab.games.chess`, this module reads pgx's internal chess state (the games layer is the
only place that does).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pgx
from pgx._src.games import chess as pgx_chess_internals

LC0_OBSERVATION_SHAPE = (8, 8, 112)
OBSERVATIONS = ("pgx", "lc0")


def _mirror_for_other_side(board: jax.Array) -> jax.Array:
    """[64] mover-frame board (``file * 8 + rank``) as the other side sees it: ranks mirrored, colours swapped."""
    return -jnp.flip(board.reshape(8, 8), axis=1).reshape(64)


def _xor_reduce(values: jax.Array) -> jax.Array:
    return jax.lax.reduce(values, np.uint32(0), jax.lax.bitwise_xor, (0,))


def _en_passant_file(board: jax.Array, color: jax.Array, target_hash: jax.Array) -> jax.Array:
    """File (0-7) of the en-passant square of a position whose own-frame ``board`` and side ``color`` are known and
    whose pgx hash is ``target_hash``, or -1 when it has none (castling rights are unknown: all 16 are tried)."""
    z = pgx_chess_internals
    base = jnp.where(color == 0, z.ZOBRIST_SIDE, jnp.zeros_like(z.ZOBRIST_SIDE))
    base = base ^ _xor_reduce(z.ZOBRIST_BOARD[jnp.arange(64), board + 6])
    masks = jnp.asarray(np.array([[(m >> bit) & 1 for bit in range(4)] for m in range(16)], dtype=bool))  # [16, 4]
    castling = jax.vmap(lambda mask: _xor_reduce(jnp.where(mask[:, None], z.ZOBRIST_CASTLING, 0)))(masks)  # [16, 2]
    squares = jnp.concatenate([jnp.int32([-1]), jnp.arange(8, dtype=jnp.int32) * 8 + 5])  # none, then a6..h6
    en_passant = z.ZOBRIST_EN_PASSANT[squares]  # [9, 2]
    candidates = base[None, None, :] ^ castling[None, :, :] ^ en_passant[:, None, :]  # [9, 16, 2]
    matches = (candidates == target_hash).all(axis=-1).any(axis=1)  # [9]
    return jnp.where(matches[1:].any(), jnp.argmax(matches[1:]), -1)


def lc0_observation(x: pgx_chess_internals.GameState) -> jax.Array:
    """[8, 8, 112] lc0 classical input planes of pgx's chess game state ``x``, indexed ``[rank, file, plane]`` in the
    mover's frame; jittable and vmappable.

    History step i = 0..7 (0 = now) holds planes 13i..13i+12: the mover's P N B R Q K, the opponent's P N B R Q K,
    and ones when that position occurred earlier in the game (from pgx's hash history, en-passant squares aside:
    pgx's own repetition plane also marks the first occurrence).  Planes 104/105: the mover may castle queen/king side; 106/107 the opponent;
    108 ones when Black moves; 109 the half-move clock (raw count); 110 zeros; 111 ones.  Steps before the game's
    first position are zeros when the game began at the standard start position; when it began from another FEN
    they repeat that first position, with the double pawn push undone when it has an en-passant square (as lc0).
    """
    boards = x.board_history  # [8, 64] mover's frame, file * 8 + rank
    known = boards.any(axis=1)  # [8]
    hashes = x.hash_history  # [513, 2], aligned with boards in its first 8 rows
    # pgx 2.6 starts a game's hash history with a constant that is not the start position's hash: use the real one,
    # so that a return to the start position counts as a repetition.
    start_hash = pgx_chess_internals._zobrist_hash(pgx_chess_internals.GameState())
    hashes = jnp.where((hashes == pgx_chess_internals.INIT_ZOBRIST_HASH).all(axis=1, keepdims=True), start_hash, hashes)
    valid = (hashes != 0).any(axis=1)
    # Positions are the same when their hashes differ at most by their en-passant squares (lc0 counts a repetition
    # of a position first reached by a double push that no pawn can take): XOR with each pair of candidates.
    squares = jnp.concatenate([jnp.int32([-1]), jnp.arange(8, dtype=jnp.int32) * 8 + 5])
    en_passant = pgx_chess_internals.ZOBRIST_EN_PASSANT[squares]  # [9, 2]
    differences = (en_passant[:, None, :] ^ en_passant[None, :, :]).reshape(-1, 2)  # [81, 2]
    difference = hashes[:8, None, :] ^ hashes[None, :, :]  # [8, 513, 2]
    same = (difference[:, :, None, :] == differences[None, None, :, :]).all(axis=-1).any(axis=-1)  # [8, 513]
    older = jnp.arange(hashes.shape[0])[None, :] > jnp.arange(8)[:, None]
    repeated = (same & older & valid[None, :]).any(axis=1) & known  # [8]

    oldest_index = known.sum() - 1
    oldest = boards[oldest_index]
    odd = oldest_index % 2 == 1
    own = jnp.where(odd, _mirror_for_other_side(oldest), oldest)  # the oldest position as its mover saw it
    own_color = jnp.where(odd, 1 - x.color, x.color)
    file = _en_passant_file(own, own_color, hashes[oldest_index])
    square = jnp.maximum(file, 0) * 8
    undone = own.at[square + 4].set(0).at[square + 6].set(-pgx_chess_internals.PAWN)
    own = jnp.where(file >= 0, undone, own)
    filler = jnp.where(odd, _mirror_for_other_side(own), own)
    from_start = (oldest == pgx_chess_internals.INIT_BOARD).all()
    fill = (~known)[:, None] & ~from_start
    boards = jnp.where(known[:, None], boards, jnp.where(fill, filler[None, :], 0))  # [8, 64]

    by_rank = boards.reshape(8, 8, 8).transpose(0, 2, 1)  # [step, rank, file]
    pieces = jnp.arange(1, 7)
    mine = by_rank[:, None] == pieces[None, :, None, None]  # [8, 6, 8, 8]
    theirs = by_rank[:, None] == -pieces[None, :, None, None]
    repetition = jnp.broadcast_to(repeated[:, None, None, None], (8, 1, 8, 8))
    history = jnp.concatenate([mine, theirs, repetition], axis=1).reshape(104, 8, 8).astype(jnp.float32)
    scalars = jnp.stack([
        x.castling_rights[0, 0], x.castling_rights[0, 1], x.castling_rights[1, 0], x.castling_rights[1, 1],
        x.color == 1,
    ]).astype(jnp.float32)
    scalars = jnp.concatenate([scalars, jnp.stack([x.halfmove_count.astype(jnp.float32), 0.0, 1.0])])  # [8]
    planes = jnp.concatenate([history, jnp.broadcast_to(scalars[:, None, None], (8, 8, 8))], axis=0)
    return planes.transpose(1, 2, 0)


class Lc0ObservationEnv:
    """pgx's chess environment whose states carry :func:`lc0_observation` instead of pgx's 119 planes."""

    def __init__(self, env: pgx.Env):
        self.base = env

    @property
    def num_actions(self) -> int:
        return self.base.num_actions

    def init(self, key: jax.Array) -> pgx.State:
        return compiled_lc0_observation()(self.base.init(key))

    def step(self, state: pgx.State, action: jax.Array, key: jax.Array | None = None) -> pgx.State:
        return compiled_lc0_observation()(self.base.step(state, action, key))

    def __getattr__(self, name: str):
        return getattr(self.base, name)


def with_lc0_observation(state: pgx.State) -> pgx.State:
    """``state`` (batched or not) with lc0's observation."""
    observe = lc0_observation
    for _ in range(state._x.color.ndim):
        observe = jax.vmap(observe)
    return state.replace(observation=observe(state._x))


@functools.cache
def compiled_lc0_observation():
    """:func:`with_lc0_observation`, jitted once."""
    return jax.jit(with_lc0_observation)


__all__ = ["LC0_OBSERVATION_SHAPE", "OBSERVATIONS", "Lc0ObservationEnv", "compiled_lc0_observation", "lc0_observation",
           "with_lc0_observation"]
