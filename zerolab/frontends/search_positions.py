"""Between the GUI's moves and the searches' pgx states: a position limited to ``go searchmoves`` (:func:`restricted`),
a batch of one (:func:`batched`), and a principal variation of pgx actions as UCI moves (:func:`variation_moves`).
JAX is imported where a state is batched, so the module itself imports none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pgx

    from zerolab.games import ChessGame


def restricted(game: ChessGame, state: pgx.State, search_moves: Sequence[str]) -> pgx.State:
    """``state`` with its legal actions limited to ``search_moves`` (``go searchmoves``), when any is legal."""
    allowed = np.zeros(game.num_actions, bool)
    for move in search_moves:
        try:
            allowed[game.uci_to_action(move, state)] = True
        except ValueError:
            continue
    if not allowed.any():
        return state
    return state.replace(legal_action_mask=state.legal_action_mask & allowed)


def batched(state: pgx.State) -> pgx.State:
    """A batch of one."""
    import jax

    return jax.tree.map(lambda leaf: leaf[None], state)


def variation_moves(game: ChessGame, state: pgx.State, actions: Sequence[int]) -> tuple[str, ...]:
    """The UCI moves of a principal variation of pgx actions from ``state`` (cut where the game ends)."""
    moves = []
    for action in actions:
        if bool(state.terminated):
            break
        try:
            moves.append(game.action_to_uci(action, state))
        except ValueError:
            break
        state = game.jitted_step(state, np.int32(action))  # the type StateTracker compiled it for
    return tuple(moves)


__all__ = ["batched", "restricted", "variation_moves"]
