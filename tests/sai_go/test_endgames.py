"""sai_go.endgames: the pure-Python rules engine against pgx move by move, and the five endgames' claims (two winning
moves of different margins) by exhaustive minimax, with and without alpha-beta pruning."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from zerolab import GoGame
from sai_go.endgames import ENDGAMES
from sai_go.exact_solver import BLACK, Rules, own_eyes, solve
from tests.fast_compile import fast_jit
from tests.sai_go.conftest import played_random_games

RULES = Rules(size=7)


def played_moves(boards: np.ndarray, terminated: np.ndarray) -> list[int]:
    """The pgx actions of one random game, read off its boards ``[plies, N²]`` (the point that took the mover's
    colour; none: a pass), up to its end."""
    before = np.zeros(RULES.points, np.int32)
    moves = []
    for ply in range(len(boards)):
        mover = BLACK if ply % 2 == 0 else -BLACK
        placed = np.flatnonzero((boards[ply] == mover) & (before != mover))
        assert len(placed) <= 1
        moves.append(int(placed[0]) if len(placed) else RULES.pass_move)
        before = boards[ply]
        if terminated[ply]:
            return moves
    raise AssertionError("the game did not end")


def test_the_rules_engine_plays_like_pgx():
    """Random games (the scoring tests' seed: two of them end by positional superko; passes, captures, simple ko):
    at every ply the engine's legal moves, board, ending and score equal pgx's."""
    game = GoGame(size=7, komi=7.5)
    _, path = played_random_games(7.5, 3)
    # [plies, B, ...] after each ply: boards, endings, legal moves; the final area difference [B]
    boards, terminated, superko, two_passes, legal, area = jax.device_get(fast_jit(lambda path: (
        game.stone_colours(path), path.terminated, game.ended_by_rule_violation(path),
        game.ended_by_two_passes(path), path.legal_action_mask,
        game.area_difference(jax.tree.map(lambda x: x[-1], path))))(path))
    assert superko[-1].sum() == 2
    lanes = [*range(4), *np.flatnonzero(superko[-1]), *np.flatnonzero(two_passes[-1])[:2]]
    kinds = set()
    for lane in lanes:
        position = RULES.initial()
        for ply, move in enumerate(played_moves(boards[:, lane], terminated[:, lane])):
            if ply:  # the position before this move: legal moves as pgx's mask
                assert set(RULES.legal_moves(position)) == set(np.flatnonzero(legal[ply - 1, lane])), (lane, ply)
            stones_before = sum(map(abs, position.board))
            position = RULES.play(position, move)
            np.testing.assert_array_equal(position.board, boards[ply, lane], f"{lane} {ply}")
            assert position.terminated == terminated[ply, lane] and position.superko == superko[ply, lane]
            kinds.add("capture" if sum(map(abs, position.board)) <= stones_before and move != RULES.pass_move else "")
            kinds.add("ko" if position.ko >= 0 else "")
        assert RULES.area_difference(position.board) == area[lane]
        kinds.add("superko" if position.superko else "passes" if position.passes >= 2 else "cap")
    assert {"capture", "ko", "superko", "passes", "cap"} <= kinds


@pytest.mark.parametrize("endgame", ENDGAMES, ids=[endgame.name for endgame in ENDGAMES])
def test_each_endgame_has_two_winning_moves_of_different_margins(endgame, go_game):
    position = endgame.position(RULES)
    # pgx reaches the same position by the same setup moves, with nobody having just passed.
    step = fast_jit(go_game.step)
    state = go_game.init(jax.random.key(0))
    for vertex in endgame.setup(RULES):
        state = step(state, go_game.gtp_to_action(vertex))
    np.testing.assert_array_equal(np.asarray(go_game.stone_colours(state)), endgame.board())
    assert bool(go_game.black_to_move(state)) == (endgame.to_move == "black") and not bool(state.terminated)
    assert not bool(go_game.ended_by_two_passes(state)) and position.passes == 0
    assert len(own_eyes(RULES, position.board, BLACK)) == len(own_eyes(RULES, position.board, -BLACK)) == 2

    solution = solve(RULES, position)
    assert solve(RULES, position, alpha_beta=False).values == solution.values  # pruning changes no value
    margins = endgame.margins(solution)
    best, second = margins.pop(endgame.best), margins.pop(endgame.second)
    assert best > second > 0, (best, second)  # both win, the best by more
    assert best > max(margins.values())  # and no other move wins by as much
