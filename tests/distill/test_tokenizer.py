"""The 77-token FEN encoding and the 1968-move action vocabulary: exact layout and invertibility."""

import chess
import numpy as np
import pytest

from distill import tokenizer
from distill.tokenizer import ACTION_INDEX, ACTIONS, TokenizationError


def test_start_position_layout():
    text = tokenizer.fen_to_text(chess.STARTING_FEN)
    assert len(text) == 77
    assert text == ("w" + "rnbqkbnr" + "pppppppp" + "." * 32 + "PPPPPPPP" + "RNBQKBNR"
                    + "KQkq" + ".." + "0.." + "1..")
    assert tokenizer.NUM_CHARACTERS == 31


def test_fields_are_padded_not_flipped():
    fen = "r3k2r/8/8/3pP3/8/8/8/R3K2R w Kq d6 12 105"
    text = tokenizer.fen_to_text(fen)
    assert text[0] == "w"
    assert text[1:9] == "r...k..r"  # rank 8 first: the board is never flipped
    assert text[65:69] == "Kq.."
    assert text[69:71] == "d6"
    assert text[71:74] == "12."
    assert text[74:77] == "105"
    black = tokenizer.fen_to_text("r3k2r/8/8/8/8/8/8/R3K2R b - - 0 1")
    assert black[0] == "b" and black[1:9] == "r...k..r" and black[65:71] == "......"


def test_round_trip_on_hundreds_of_positions(random_game_fens):
    tokens = tokenizer.tokenize_many(random_game_fens)
    assert tokens.shape == (len(random_game_fens), 77) and tokens.dtype == np.uint8
    assert tokens.max() < tokenizer.NUM_CHARACTERS
    for fen, row in zip(random_game_fens, tokens):
        assert np.array_equal(row, tokenizer.tokenize(fen))
        assert tokenizer.detokenize(row) == fen
    fields = [fen.split() for fen in random_game_fens]
    assert any(f[3] != "-" for f in fields), "no en-passant square among the test positions"
    assert any(f[2] not in ("KQkq", "-") for f in fields), "no partial castling rights among the test positions"


def test_distinct_positions_get_distinct_tokens(random_game_fens):
    unique_fens = sorted(set(random_game_fens))
    unique_tokens = {tokenizer.tokenize(fen).tobytes() for fen in unique_fens}
    assert len(unique_tokens) == len(unique_fens)


@pytest.mark.parametrize("fen, problem", [
    ("8/8/8/8/8/8/8/8 w - -", "expected 6"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1", "8 ranks"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1", "side to move"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1000", "fullmove number"),
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KXkq - 0 1", "castling"),
])
def test_bad_fens_are_named(fen, problem):
    with pytest.raises(TokenizationError, match=problem) as error:
        tokenizer.tokenize(fen)
    assert fen in str(error.value)


def test_action_vocabulary_is_sorted_complete_and_invertible(random_game_fens):
    assert len(ACTIONS) == 1968 and list(ACTIONS) == sorted(set(ACTIONS))
    assert sum(len(move) == 5 for move in ACTIONS) == 176  # promotions
    for index, move in enumerate(ACTIONS):
        assert ACTION_INDEX[move] == index and tokenizer.action_to_move(index) == move
    seen = set()
    for fen in random_game_fens:
        board = chess.Board(fen)
        moves, actions = tokenizer.legal_actions(board)
        assert [ACTIONS[a] for a in actions] == [m.uci() for m in moves]
        seen.update(m.uci() for m in moves)
    assert any(len(m) == 5 for m in seen), "no promotion among the test positions"
    assert seen & {"e1g1", "e1c1", "e8g8", "e8c8"}, "no castling among the test positions"
    with pytest.raises(KeyError, match="a1b3q"):
        tokenizer.move_to_action("a1b3q")
