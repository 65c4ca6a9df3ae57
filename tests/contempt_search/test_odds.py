"""Odds openings against independent move generators: python-chess for 8×8, Fairy-Stockfish's (pyffish) for Gardner,
and pgx (the referee) agreeing with both."""

from __future__ import annotations

import chess
import pytest

from contempt_search.odds import ODDS_PIECES, odds_fen, odds_fens
from zerolab.games.fen import GARDNER_START_FEN
from zerolab.games import make_game

PIECE_TYPES = {"queen": chess.QUEEN, "rook": chess.ROOK, "knight": chess.KNIGHT, "bishop": chess.BISHOP}


@pytest.mark.parametrize("piece", sorted(ODDS_PIECES))
@pytest.mark.parametrize("giver", ["white", "black"])
def test_chess_odds_remove_one_piece_of_the_giver(piece, giver):
    fen = odds_fen("chess", piece, giver)
    board, start = chess.Board(fen), chess.Board()
    colour = chess.WHITE if giver == "white" else chess.BLACK
    assert board.is_valid() and board.turn == chess.WHITE
    for piece_type in chess.PIECE_TYPES:
        for side in chess.COLORS:
            expected = len(start.pieces(piece_type, side)) - (side == colour and piece_type == PIECE_TYPES[piece])
            assert len(board.pieces(piece_type, side)) == expected
    assert board.has_queenside_castling_rights(colour) == (piece != "rook")
    game = make_game("chess")
    state = game.from_fen(fen)
    assert sorted(game.legal_moves_uci(state)) == sorted(move.uci() for move in board.legal_moves)


@pytest.mark.parametrize("piece", sorted(ODDS_PIECES))
def test_gardner_odds_agree_with_fairy_stockfish_and_pgx(piece):
    import pyffish

    white_gives, black_gives = odds_fens("gardner_chess", piece)
    file_index = "abcde".index(ODDS_PIECES[piece])
    assert white_gives.split()[0].split("/")[4][file_index] == "1" and black_gives.split()[0].split("/")[0][file_index] == "1"
    game = make_game("gardner_chess")
    for fen in (white_gives, black_gives):
        assert pyffish.validate_fen(fen, "gardner") == 1
        state = game.from_fen(fen)
        assert sorted(game.legal_moves_uci(state)) == sorted(pyffish.legal_moves("gardner", fen, []))
    assert GARDNER_START_FEN.split()[1:] == white_gives.split()[1:]


def test_bad_odds_requests_are_refused():
    with pytest.raises(ValueError, match="odds piece must be one of"):
        odds_fen("chess", "king", "white")
    with pytest.raises(ValueError, match="odds-giver must be one of"):
        odds_fen("chess", "queen", "red")
    with pytest.raises(ValueError, match="odds positions exist for"):
        odds_fen("go", "queen", "white")
