"""The board bridge (zerolab.games.board): python-chess boards with moves <-> pgx states with history, 8x8 and 5x5."""

import random

import chess
import jax
import numpy as np
import pytest

from zerolab.games.board import GameBoards, GardnerBoard, StateTracker, board_from_state, board_with_moves
from zerolab.games.fen import GARDNER_START_FEN, InvalidPositionError

MIDGAME_FEN = "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 9"



def stepped(game, state, moves):
    step = game.jitted_step
    for move in moves:
        state = step(state, np.int32(game.uci_to_action(move, state)))
    return state


def random_moves(board, plies, seed):
    rng, moves, board = random.Random(seed), [], board.copy()
    for _ in range(plies):
        legal = sorted(move.uci() for move in board.legal_moves)
        if not legal:
            break
        moves.append(rng.choice(legal))
        board.push_uci(moves[-1])
    return moves


@pytest.mark.parametrize("name", ["chess", "gardner_chess"])
def test_a_fen_state_has_no_start_position_behind_it(name, request):
    """pgx's own FEN readers put the standard start position into the history; ChessGame.from_fen does not."""
    game = request.getfixturevalue({"chess": "chess_game", "gardner_chess": "gardner_game"}[name])
    from_start_fen, initial = game.from_fen(game.start_fen), game.init(jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(from_start_fen.observation), np.asarray(initial.observation))
    assert game.history_placements(from_start_fen) == [game.start_fen.split()[0]] + [None] * 7
    if name == "chess":
        import pgx.experimental.chess

        pgx_own = pgx.experimental.chess.from_fen(MIDGAME_FEN)
        assert game.history_placements(pgx_own)[1] == chess.Board().board_fen()  # the bug being avoided
        ours = game.from_fen(MIDGAME_FEN)
        assert game.history_placements(ours)[1:] == [None] * 7
        observation = np.asarray(ours.observation)
        piece_planes = [observation[..., 14 * past: 14 * past + 12] for past in range(1, 8)]
        assert not np.any(piece_planes), "previous-position piece planes of a FEN position must be empty"


def test_chess_board_with_moves_becomes_the_pgx_state_of_the_same_game(chess_game):
    board = chess.Board(MIDGAME_FEN)
    for move in random_moves(board, 10, seed=1):
        board.push_uci(move)
    state = StateTracker(chess_game).state(board)
    expected = stepped(chess_game, chess_game.from_fen(MIDGAME_FEN), [m.uci() for m in board.move_stack])
    np.testing.assert_array_equal(np.asarray(state.observation), np.asarray(expected.observation))
    replay, placements = board.copy(), []
    while len(placements) < 8:
        placements.append(replay.board_fen())
        if not replay.move_stack:
            break
        replay.pop()
    assert chess_game.history_placements(state) == placements + [None] * (8 - len(placements))
    assert sorted(chess_game.legal_moves_uci(state)) == sorted(m.uci() for m in board.legal_moves)


def test_tracker_steps_only_new_moves_and_rebuilds_after_a_pgx_repetition(chess_game):
    tracker = StateTracker(chess_game)
    board = chess.Board()
    for move in ["g1f3", "g8f6", "f3g1", "f6g8"] * 2:  # the start position a third time: over for pgx only
        board.push_uci(move)
        state = tracker.state(board)
    assert tracker.rebuilds == 1 and not bool(state.terminated)
    assert chess_game.to_fen(state).split()[:4] == board.fen().split()[:4]
    board.push_uci("e2e4")
    assert chess_game.legal_moves_uci(tracker.state(board)) == sorted(m.uci() for m in board.legal_moves)


def test_pgx_states_become_boards_with_the_moves_played(chess_game):
    """An agent seeing every second ply, then a team member seeing every fourth, gets the game's moves back."""
    board = chess.Board()
    moves = random_moves(board, 24, seed=3)
    states = [chess_game.init(jax.random.key(0))]
    for move in moves:
        states.append(stepped(chess_game, states[-1], [move]))
    for every in (2, 4):
        boards = GameBoards(chess_game)
        for ply in range(0, len(moves) + 1, every):
            found = boards.board(lane=0, state=states[ply])
            assert [m.uci() for m in found.move_stack] == moves[:ply] and found.root() == chess.Board()
    # More plies apart than pgx's history holds: a new board at the state's FEN.
    boards = GameBoards(chess_game)
    boards.board(0, states[2])
    lost = boards.board(0, states[12])
    assert lost.move_stack == [] and lost.board_fen() == chess_game.to_fen(states[12]).split()[0]
    # A game from a FEN (no history in its state) starts there, then collects its moves.
    start = chess_game.from_fen(MIDGAME_FEN)
    first = board_from_state(chess_game, start)
    assert first.root().fen() == chess.Board(MIDGAME_FEN).fen() and first.move_stack == []
    later = board_from_state(chess_game, stepped(chess_game, start, ["e1g1", "e8c8"]), known=first)
    assert [m.uci() for m in later.move_stack] == ["e1g1", "e8c8"] and first.move_stack == []


def test_gardner_board_is_refereed_by_pgx(gardner_game):
    board = board_with_moves("gardner_chess", GARDNER_START_FEN, ["a2a3", "b4a3", "b2a3"])
    assert board.fen() == gardner_game.to_fen(stepped(gardner_game, gardner_game.from_fen(GARDNER_START_FEN),
                                                      ["a2a3", "b4a3", "b2a3"]))
    assert board.root().fen() == GARDNER_START_FEN and [m.uci() for m in board.move_stack] == ["a2a3", "b4a3", "b2a3"]
    assert sorted(m.uci() for m in board.legal_moves) == gardner_game.legal_moves_uci(board.state)
    for move in ["a2a4", "a1a2", "f2f3", "e2"]:
        with pytest.raises(ValueError, match=f"{move!r}"):
            GardnerBoard().push_uci(move)
    with pytest.raises(InvalidPositionError, match=r"move 2 \('a2a3'\)"):
        board_with_moves("gardner_chess", GARDNER_START_FEN, ["a2a3", "a2a3"])
    promotion = GardnerBoard("k4/3P1/5/5/K4 w - - 7 30")
    with pytest.raises(ValueError, match="d4d5"):
        promotion.parse_uci("d4d5")  # a pawn on the last rank must name its piece
    promotion.push_uci("d4d5n")
    assert promotion.fen() == "k2N1/5/5/5/K4 b - - 0 30" and promotion.pop().uci() == "d4d5n"
    # pgx -> board, following a game seen every second ply
    moves = random_moves_gardner(gardner_game, 10, seed=0)
    boards, state = GameBoards(gardner_game), gardner_game.from_fen(GARDNER_START_FEN)
    for ply, move in enumerate(moves):
        if ply % 2 == 0:
            found = boards.board(0, state)
            assert isinstance(found, GardnerBoard) and [m.uci() for m in found.move_stack] == moves[:ply]
        state = stepped(gardner_game, state, [move])


def random_moves_gardner(game, plies, seed):
    rng, state, moves = random.Random(seed), game.from_fen(GARDNER_START_FEN), []
    for _ in range(plies):
        moves.append(rng.choice(game.legal_moves_uci(state)))
        state = stepped(game, state, [moves[-1]])
    return moves


def test_gardner_board_agrees_with_fairy_stockfish_where_pgx_plays_on(pyffish):
    rng = np.random.default_rng(0)
    for _ in range(2):
        board, moves = GardnerBoard(), []
        for _ in range(30):
            legal = pyffish.legal_moves("gardner", GARDNER_START_FEN, moves)
            if not legal or board.is_game_over():
                break
            assert sorted(legal) == sorted(m.uci() for m in board.legal_moves), board
            moves.append(str(rng.choice(sorted(legal))))
            board.push_uci(moves[-1])
        assert board.fen() == pyffish.get_fen("gardner", GARDNER_START_FEN, moves)
