"""The frameworks' rules: bitstrings and roles, colour pairing, piece types from pgx, the two-stage hand against the
restricted policy (χ² on 20k jitted draws), the interaction classes, and win-share with its standard error."""

from __future__ import annotations

import math

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from skill_compat import frameworks


def test_bitstrings_are_fixed_by_the_seed_and_saved(tmp_path):
    bits = frameworks.bitstrings_for_run(tmp_path, seed=3, count=4, length=10)
    assert bits.shape == (4, 10) and set(np.unique(bits)) <= {0, 1}
    np.testing.assert_array_equal(bits, frameworks.draw_bitstrings(3, 4, 10))
    assert not np.array_equal(bits, frameworks.draw_bitstrings(4, 4, 10))
    # read back from the run directory, shared by every matchup
    np.testing.assert_array_equal(frameworks.bitstrings_for_run(tmp_path, 3, 4, 10), bits)
    np.testing.assert_array_equal(frameworks.load_bitstrings(tmp_path / frameworks.BITSTRINGS_FILE), bits)
    with pytest.raises(ValueError, match="framework.seed=3"):
        frameworks.bitstrings_for_run(tmp_path, seed=5, count=4, length=10)


def test_bit_to_role_and_colour_pairing():
    bits = frameworks.parse_bitstring("1001")
    assert [frameworks.stt_role(bits, ply) for ply in range(4)] == [1, 0, 0, 1]
    slots = frameworks.game_pairing(4)
    assert [(slot.pairing, slot.focal_is_white) for slot in slots] == [(0, True), (0, False), (1, True), (1, False)]
    # the focal team moves at even plies as White, at odd plies as Black
    assert [frameworks.focal_to_move(ply, True) for ply in range(4)] == [True, False, True, False]
    assert [frameworks.focal_to_move(ply, False) for ply in range(4)] == [False, True, False, True]


@pytest.mark.parametrize("text", ["", "0120", "abc", None])
def test_bad_bitstrings_are_refused(text):
    with pytest.raises(ValueError, match="bitstring"):
        frameworks.parse_bitstring(text)


def test_short_bitstring_and_odd_game_count_are_refused():
    with pytest.raises(ValueError, match="need 8"):
        frameworks.parse_bitstring("0101", length=8)
    with pytest.raises(ValueError, match="even"):
        frameworks.game_pairing(3)
    with pytest.raises(ValueError, match="outside"):
        frameworks.stt_role(np.zeros(3, np.uint8), 3)


# a position with pawn, knight, bishop, queen, king moves and castling, White to move
TYPES_FEN = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"


@pytest.fixture(scope="module")
def typed_position(chess_game):
    state = chess_game.from_fen(TYPES_FEN)
    states = jax.tree.map(lambda leaf: leaf[None], state)
    types = np.asarray(frameworks.action_piece_types(chess_game, states))[0]
    return state, states, types


def test_action_piece_types_match_python_chess(chess_game, typed_position):
    state, _, types = typed_position
    board = chess.Board(TYPES_FEN)
    legal = np.flatnonzero(np.asarray(state.legal_action_mask))
    assert len(legal) == board.legal_moves.count()
    for action in legal:
        move = chess.Move.from_uci(chess_game.action_to_uci(int(action), state))
        assert types[action] == board.piece_type_at(move.from_square), move
    castle = chess_game.uci_to_action("e1g1", state)
    assert types[castle] == chess.KING
    assert (types[~np.asarray(state.legal_action_mask)] == 0).all()


def test_two_stage_hand_equals_the_restricted_policy(typed_position):
    """20,000 jitted draws: the played move's frequencies against p(m)/P_T over the named type (χ²), and h0's
    against p; with knights named, h0 is a knight move about P_T of the time."""
    _, states, types = typed_position
    legal = types > 0
    probabilities = np.zeros(types.shape, np.float64)
    probabilities[legal] = np.random.default_rng(0).dirichlet(np.ones(legal.sum()))
    draws = 20_000
    named = frameworks.piece_type_index("N")
    # the draws see the legal actions only (the function takes any action axis): 20k × 4672 would be slow on CPU
    legal_actions = np.flatnonzero(legal)
    batch_probabilities = jnp.broadcast_to(jnp.asarray(probabilities[legal_actions], jnp.float32),
                                           (draws, len(legal_actions)))
    batch_types = jnp.broadcast_to(jnp.asarray(types[legal_actions]), (draws, len(legal_actions)))
    hand = jax.jit(frameworks.two_stage_hand)
    h0, played = hand(jax.random.key(1), batch_probabilities, batch_types, jnp.full(draws, named))
    h0, played = legal_actions[np.asarray(h0)], legal_actions[np.asarray(played)]
    knights = np.flatnonzero(types == named)
    assert set(np.unique(played)) <= set(knights)
    restricted = probabilities[knights] / probabilities[knights].sum()
    observed = np.array([(played == action).sum() for action in knights])
    assert scipy.stats.chisquare(observed, restricted * draws).pvalue > 1e-3
    # a one-stage hand that always plays a knight move uniformly would be caught by the same test
    uniform = np.full(len(knights), draws / len(knights))
    assert scipy.stats.chisquare(observed, uniform).pvalue < 1e-6
    observed_h0 = np.array([(h0 == action).sum() for action in legal_actions])
    expected_h0 = probabilities[legal_actions] * draws
    pooled = expected_h0 >= 5  # χ² needs expected counts of 5: pool the rare moves
    observed_h0 = np.append(observed_h0[pooled], observed_h0[~pooled].sum())
    expected_h0 = np.append(expected_h0[pooled], expected_h0[~pooled].sum())
    assert scipy.stats.chisquare(observed_h0, expected_h0).pvalue > 1e-3
    # whenever h0 already had the type it was played
    kept = np.isin(h0, knights)
    np.testing.assert_array_equal(played[kept], h0[kept])


def test_interactions_are_classified(typed_position, chess_game):
    state, _, types = typed_position
    action = {uci: chess_game.uci_to_action(uci, state) for uci in ("f3g5", "f3d4", "d2d3", "c4f7", "f3h4")}
    # brain move: Ng5 (a knight move) in all rows
    h0 = np.array([action["f3g5"], action["f3d4"], action["d2d3"], action["d2d3"], action["c4f7"]])
    played = np.array([action["f3g5"], action["f3d4"], action["f3g5"], action["f3d4"], action["f3h4"]])
    brain = np.full(5, action["f3g5"])
    names = frameworks.classify_interactions(h0, played, brain, np.broadcast_to(types, (5, types.size)))
    assert list(names) == ["agreement", "blindsiding", "correction", "disagreement", "disagreement"]


def test_win_share_and_its_standard_error():
    share, se = frameworks.win_share(6, 2, 2)
    assert share == pytest.approx(0.7)
    scores = np.array([1] * 6 + [0.5] * 2 + [0] * 2)
    assert se == pytest.approx(scores.std(ddof=1) / math.sqrt(10))  # the sample sd of the scores over √n
    assert frameworks.win_share(0, 10, 0) == (0.5, 0.0)
    assert frameworks.win_share(5, 0, 5)[1] == pytest.approx(0.5 / math.sqrt(9))
    assert frameworks.result_counts([1, 0.5, 0, 1]) == (2, 1, 1)
    with pytest.raises(ValueError, match="no games"):
        frameworks.win_share(0, 0, 0)
    with pytest.raises(ValueError, match="losses"):
        frameworks.win_share(1, 0, -1)
