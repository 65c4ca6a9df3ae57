"""lc0's 80×64 policy ↔ pgx's 4672 actions: on positions reached by play, the legal pgx actions map one-to-one onto
python-chess's legal moves and onto distinct lc0 indices equal to those of an index written here from the layout;
all 1858 lc0 moves are reachable."""

from __future__ import annotations

import chess
import numpy as np

from zerolab.networks.lc0.policy import action_lc0_indices, policy_map

# lc0's planes, written out from the layout: (Δfile, Δrank, promotion) -> plane
PLANES: dict[tuple[int, int, str], int] = {}
for direction, (df, dr) in enumerate([(0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1)]):
    for distance in range(1, 8):
        PLANES[(df * distance, dr * distance, "")] = 7 * direction + distance - 1
for offset, step in enumerate([(1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)]):
    PLANES[(*step, "")] = 56 + offset
for direction, df in enumerate((-1, 0, 1)):
    for piece_index, piece in enumerate("rbq"):
        PLANES[(df, 1, piece)] = 64 + 3 * direction + piece_index


def expected_index(board: chess.Board, move: chess.Move) -> int:
    """lc0 index of a python-chess move: mover's frame, castling king-onto-rook, knight promotion = plain move."""
    flip = board.turn == chess.BLACK
    origin, target = move.from_square, move.to_square
    if board.is_castling(move):
        target = chess.square(7 if chess.square_file(target) > 4 else 0, chess.square_rank(origin))
    rank = lambda square: 7 - chess.square_rank(square) if flip else chess.square_rank(square)  # noqa: E731
    promotion = chess.piece_symbol(move.promotion) if move.promotion and move.promotion != chess.KNIGHT else ""
    plane = PLANES[(chess.square_file(target) - chess.square_file(origin), rank(target) - rank(origin), promotion)]
    return plane * 64 + rank(origin) * 8 + chess.square_file(origin)


def test_legal_actions_map_one_to_one(lc0_game, played):
    positions, states = played
    observations = np.asarray(states.observation)
    indices = np.asarray(action_lc0_indices(observations[..., 0].reshape(-1, 64), observations[..., 5].reshape(-1, 64)))
    for row, position in enumerate(positions):
        board = position.board()
        state = __import__("jax").tree.map(lambda leaf: leaf[row], states)
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        if board.is_game_over(claim_draw=False) and not board.legal_moves:
            continue
        moves = {lc0_game.action_to_uci(action, state): action for action in legal}
        assert sorted(moves) == sorted(m.uci() for m in board.legal_moves), position
        mapped = [int(indices[row, action]) for action in legal]
        assert len(set(mapped)) == len(mapped) and min(mapped) >= 0, position
        for move in board.legal_moves:
            assert indices[row, moves[move.uci()]] == expected_index(board, move), (position, move.uci())


def test_all_1858_lc0_moves_are_reachable():
    table = policy_map()
    reachable = set(table.plain[table.plain >= 0].tolist()) | set(table.conditional[table.conditional >= 0].tolist())
    assert len(reachable) == 1858
    on_board = {plane * 64 + rank * 8 + file for (df, dr, _), plane in PLANES.items()
                for rank in range(8) for file in range(8) if 0 <= file + df < 8 and 0 <= rank + dr < 8
                and (plane < 64 or rank == 6)}
    assert reachable == on_board
    assert max(reachable) < 73 * 64  # planes 73-79 unused
