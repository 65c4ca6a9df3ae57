"""lc0's 112 input planes (make_game("chess", observation="lc0")) against an independent python-chess + numpy
encoder, on positions reached by play; and the FEN-history question (FEN states carry no start position)."""

from __future__ import annotations

import chess
import jax
import numpy as np

from tests.zerolab.lc0.positions import Position


def _position_key(board: chess.Board) -> tuple:
    return board.board_fen(), board.turn, board.castling_rights  # en-passant squares aside


def _undo_double_push(board: chess.Board) -> chess.Board:
    """The position before the double pawn push that set ``board``'s en-passant square (the FEN's, as given)."""
    board = board.copy(stack=False)
    if board.ep_square is None:
        return board
    pushed_by_white = chess.square_rank(board.ep_square) == 2
    pawn_square = board.ep_square + (8 if pushed_by_white else -8)
    origin = board.ep_square + (-8 if pushed_by_white else 8)
    board.set_piece_at(origin, board.remove_piece_at(pawn_square))
    return board


def python_chess_planes(position: Position) -> np.ndarray:
    """[8, 8, 112] lc0 planes of ``position`` computed from python-chess boards, [rank, file, plane], mover's frame."""
    board = chess.Board(position.root_fen) if position.root_fen else chess.Board()
    history = [board.copy(stack=False)]
    for move in position.moves:
        board.push_uci(move)
        history.append(board.copy(stack=False))
    current, us = history[-1], history[-1].turn
    planes = np.zeros((112, 8, 8), np.float32)
    root_is_start = history[0].board_fen() == chess.STARTING_BOARD_FEN
    for step in range(8):
        index = len(history) - 1 - step
        if index >= 0:
            seen = history[index]
            repeated = any(_position_key(history[k]) == _position_key(seen) for k in range(index))
        elif root_is_start:
            break
        else:
            seen, repeated = _undo_double_push(history[0]), False
        for square, piece in seen.piece_map().items():
            rank = chess.square_rank(square) if us == chess.WHITE else 7 - chess.square_rank(square)
            planes[13 * step + (0 if piece.color == us else 6) + piece.piece_type - 1, rank,
                   chess.square_file(square)] = 1
        planes[13 * step + 12] = float(repeated)
    planes[104] = current.has_queenside_castling_rights(us)
    planes[105] = current.has_kingside_castling_rights(us)
    planes[106] = current.has_queenside_castling_rights(not us)
    planes[107] = current.has_kingside_castling_rights(not us)
    planes[108] = float(us == chess.BLACK)
    planes[109] = current.halfmove_clock
    planes[111] = 1
    return planes.transpose(1, 2, 0)


def test_encoder_matches_python_chess(played):
    positions, states = played
    assert len(positions) >= 200
    boards = [p.board() for p in positions]
    # the positions cover what the encoder must get right
    assert sum(b.turn == chess.BLACK for b in boards) > 50
    assert {m[-1] for p in positions for m in p.moves if len(m) == 5} == {"q", "r", "b", "n"}
    assert {"e1g1", "e1c1", "e8g8", "e8c8"} <= {p.moves[-1] for p in positions if p.moves}
    ep_captures = 0
    for position in positions:
        if position.moves:
            before = chess.Board(position.root_fen) if position.root_fen else chess.Board()
            for move in position.moves[:-1]:
                before.push_uci(move)
            ep_captures += before.is_en_passant(chess.Move.from_uci(position.moves[-1]))
    assert ep_captures >= 2
    assert sum(b.is_repetition(2) for b in boards) >= 3
    assert {p.root_fen for p in positions if p.root_fen and p.root_fen.split()[3] != "-"}, "FEN starts with ep"

    observations = np.asarray(states.observation)
    for position, observation in zip(positions, observations):
        expected = python_chess_planes(position)
        if not np.array_equal(observation, expected):
            differing = sorted(set(np.nonzero(observation != expected)[2].tolist()))
            raise AssertionError(f"{position}: planes {differing} differ")


def test_fen_states_have_no_start_position_as_history():
    """The FEN-history question: ChessGame.from_fen gives a FEN position no past (pgx's own from_fen keeps pgx's start
    board and hash in history slot 0, so the start position would be the previous position and from_fen(startpos)
    would already count a repetition)."""
    from zerolab.games import make_game

    for observation in ("pgx", "lc0"):
        game = make_game("chess", observation=observation)
        initial = game.init(jax.random.key(0))
        from_start = game.from_fen(chess.STARTING_FEN)
        np.testing.assert_array_equal(np.asarray(from_start.observation), np.asarray(initial.observation))
        step = game.jitted_step
        for move in ("g1f3", "g8f6"):
            initial = step(initial, game.uci_to_action(move, initial))
            from_start = step(from_start, game.uci_to_action(move, from_start))
        np.testing.assert_array_equal(np.asarray(from_start.observation), np.asarray(initial.observation))
    pgx_game = make_game("chess")
    state = pgx_game.from_fen("rnbqkb1r/pppp1ppp/5n2/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    history = np.asarray(state.observation)[..., 14:112].reshape(8, 8, 7, 14)
    assert not history[..., :12].any(), "a FEN position has no previous boards in pgx's observation"
    assert pgx_game.history_placements(state)[1:] == [None] * 7
    assert not np.asarray(state.observation)[..., 13].any(), "and no repetition"
