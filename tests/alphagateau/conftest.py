"""Session fixtures for the AlphaGateau tests: the two chess games and positions (python-chess games, random play)."""

from __future__ import annotations

import random

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zerolab.networks.network import NetworkInputs




def random_play(game, batch_size: int, num_plies: int, seed: int):
    """States of ``batch_size`` games at every ply of uniformly random play: a pgx State with leaves [T, B, ...]."""

    def ply(states, key):
        logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
        actions = jax.vmap(jax.random.categorical)(jax.random.split(key, batch_size), logits)
        return jax.vmap(game.step)(states, actions), states

    @jax.jit
    def play(key):
        init_key, play_key = jax.random.split(key)
        states = jax.vmap(game.init)(jax.random.split(init_key, batch_size))
        _, history = jax.lax.scan(ply, states, jax.random.split(play_key, num_plies))
        return history

    return jax.device_get(play(jax.random.key(seed)))


@pytest.fixture(scope="session")
def gardner_history(gardner_game):
    """Gardner chess: 16 random games × 30 plies (leaves [30, 16, ...])."""
    return random_play(gardner_game, batch_size=16, num_plies=30, seed=0)


# Seeds of the python-chess comparison: castling rights on both wings, en passant, promotions and under-promotions;
# play from them brings the same for the other side, with each side to move.
SEED_FENS = (
    chess.STARTING_FEN,
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 9",
    "rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq d3 0 2",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R w KQkq - 0 1",
)
GAMES_PER_SEED = 6
PLIES_PER_GAME = 16


def _is_special(board: chess.Board, move: chess.Move) -> bool:
    return board.is_castling(move) or board.is_en_passant(move) or move.promotion is not None


def _pick_move(board: chess.Board, rng: random.Random) -> chess.Move:
    """A random legal move, preferring castling, en passant and promotions (and pawn double steps) when there are."""
    moves = list(board.legal_moves)
    special = [move for move in moves if _is_special(board, move)]
    if special and rng.random() < 0.6:
        return rng.choice(special)
    double_steps = [
        move
        for move in moves
        if board.piece_type_at(move.from_square) == chess.PAWN
        and abs(chess.square_rank(move.to_square) - chess.square_rank(move.from_square)) == 2
    ]
    if double_steps and rng.random() < 0.3:
        return rng.choice(double_steps)
    return rng.choice(moves)


@pytest.fixture(scope="session")
def python_chess_positions(chess_game):
    """(observation [P, 8, 8, 119], legal_action_mask [P, 4672], python-chess legal UCI lists, FENs).

    python-chess plays the games; pgx replays the same moves in one jitted, vmapped step per ply, so every pgx state
    is reached by pgx's own rules (with its move history) from a state built once per seed with ``ChessGame.from_fen``.
    """
    rng = random.Random(0)
    seed_states = [chess_game.from_fen(fen) for fen in SEED_FENS]
    states = jax.tree.map(
        lambda *leaves: jnp.stack(leaves), *[state for state in seed_states for _ in range(GAMES_PER_SEED)]
    )
    boards = [chess.Board(fen) for fen in SEED_FENS for _ in range(GAMES_PER_SEED)]
    step = chess_game.batched_step
    observations, masks, expected, fens = [], [], [], []
    for _ in range(PLIES_PER_GAME):
        host = jax.device_get(states)
        actions = np.zeros(len(boards), dtype=np.int32)
        for index, board in enumerate(boards):
            if board.is_game_over() or host.terminated[index]:
                continue
            observations.append(host.observation[index])
            masks.append(host.legal_action_mask[index])
            expected.append(sorted(move.uci() for move in board.legal_moves))
            fens.append(board.fen())
            move = _pick_move(board, rng)
            state = jax.tree.map(lambda leaf, index=index: leaf[index], host)
            actions[index] = chess_game.uci_to_action(move.uci(), state)
            board.push(move)
        states = step(states, jnp.asarray(actions))
    return np.stack(observations), np.stack(masks), expected, fens


@pytest.fixture(scope="session")
def python_chess_positions_from_fen(chess_game, python_chess_positions):
    """The same positions built by ``ChessGame.from_fen`` from python-chess's FENs (observation, mask)."""
    _, _, _, fens = python_chess_positions
    states = [chess_game.from_fen(fen) for fen in fens]
    return np.stack([state.observation for state in states]), np.stack([state.legal_action_mask for state in states])


@pytest.fixture(scope="session")
def network_inputs(python_chess_positions, gardner_history):
    """{'chess': NetworkInputs [4, ...], 'gardner_chess': NetworkInputs [4, ...]} of mid-game positions."""
    observations, masks, _, _ = python_chess_positions
    return {
        "chess": NetworkInputs(jnp.asarray(observations[100:104]), jnp.asarray(masks[100:104])),
        "gardner_chess": NetworkInputs(
            jnp.asarray(gardner_history.observation[10, :4]), jnp.asarray(gardner_history.legal_action_mask[10, :4])
        ),
    }
