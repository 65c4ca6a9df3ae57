"""The five SAI endgames' exact values, checked by a second solver that prunes no move.

:func:`sai_go.exact_solver.solve` leaves out every move that fills a single-point eye of the mover's unconditionally
alive chains (its docstring argues such a move never helps).  The solver here is a plain negamax with alpha-beta over
**every** legal move of pgx's rules — own-eye fills, suicidal-looking self-ataris, moves that lose by positional
superko and the pass — so its values do not rest on that argument.  Alpha-beta is exact; what keeps the full tree
small enough is null-window search (a value is proved by two searches, "≥ v" and "≤ v", which cut far more than one
full-window search) and move ordering (eye fills and large captures last), neither of which changes a value.  The
moves are played by :class:`sai_go.exact_solver.Rules`, which ``test_endgames.py`` checks against pgx move by move.

Each endgame's margins are written here from its note (not read from the solver): the best and second moves must
have exactly those, and every other legal move must win by less than the best.
"""

from __future__ import annotations

import random

import pytest

from sai_go.endgames import ENDGAMES
from sai_go.exact_solver import Rules, solve

RULES = Rules(size=7)
#: A superko loss for the player who made the move: beyond any area difference.
LOSS = 1000

#: The mover's margins at the endgame's komi, as the endgames' notes state them: (best, second).
MARGINS = {
    "capture-or-dame": (4.5, 2.5),
    "connect-or-dame": (8.5, 4.5),
    "two-captures": (2.5, 0.5),
    "capture-two-or-save-one": (8.5, 6.5),
    "save-two-or-capture-one": (4.5, 2.5),
}


def captured_stones(rules: Rules, position, move: int) -> int:
    """How many opponent stones ``move`` captures."""
    if move == rules.pass_move:
        return 0
    board, seen, total = position.board, set(), 0
    for neighbour in rules.neighbours[move]:
        if board[neighbour] == -position.to_move and neighbour not in seen:
            stones, liberties = rules.chain(board, neighbour)
            seen |= stones
            if liberties == {move}:
                total += len(stones)
    return total


def ordered_moves(rules: Rules, position) -> list[int]:
    """Every legal move, small captures first, then the other stones, the pass, fills of points whose neighbours are
    all the mover's own stones, and captures of more than four stones last (the order only speeds the search up)."""
    board, mover = position.board, position.to_move

    def key(move: int):
        captures = captured_stones(rules, position, move)
        own_point = move != rules.pass_move and all(board[n] == mover for n in rules.neighbours[move])
        return captures > 4, own_point, move == rules.pass_move, -captures, move

    return sorted(rules.legal_moves(position), key=key)


class Negamax:
    """The mover's final area difference (mover minus opponent, komi excluded) under optimal play for the score, a
    superko move losing outright (−LOSS for its mover); fail-soft alpha-beta, exact inside ``(alpha, beta)``."""

    def __init__(self, rules: Rules = RULES):
        self.rules = rules
        self.nodes = 0

    def __call__(self, position, alpha: int, beta: int) -> int:
        self.nodes += 1
        if position.terminated:
            if position.superko:  # the player who just moved lost
                return LOSS
            return position.to_move * self.rules.area_difference(position.board)
        best = -LOSS - 1
        for move in ordered_moves(self.rules, position):
            value = -self(self.rules.play(position, move), -beta, -alpha)
            best = max(best, value)
            alpha = max(alpha, value)
            if alpha >= beta:
                break
        return best

    def move_value_at_least(self, position, move: int, value: int) -> bool:
        """Whether ``move`` gives its mover a final area difference ≥ ``value`` (one null-window search)."""
        return -self(self.rules.play(position, move), -value, -value + 1) >= value

    def move_value(self, position, move: int, expected: int) -> int | None:
        """``expected`` when it is ``move``'s exact value for its mover (proved from both sides), else None."""
        exact = self.move_value_at_least(position, move, expected) and not self.move_value_at_least(
            position, move, expected + 1)
        return expected if exact else None


def plain_minimax(rules: Rules, position, endings: set) -> int:
    """The mover's value by visiting the whole tree (no cut, no ordering): the reference for :class:`Negamax`;
    ``endings`` collects how the games in the tree ended."""
    if position.terminated:
        endings.add("superko" if position.superko else "passes" if position.passes >= 2 else "cap")
        return LOSS if position.superko else position.to_move * rules.area_difference(position.board)
    return max(-plain_minimax(rules, rules.play(position, move), endings) for move in rules.legal_moves(position))


def test_null_window_proofs_equal_plain_minimax_on_small_boards():
    """On 3×3 positions six plies before the ply cap (random games; captures among the root moves, games ending by
    superko, two passes and the cap in the trees), every legal move's value proved by two null-window searches is the
    whole tree's minimax value, and no neighbouring value is proved."""
    rules = Rules(size=3)
    rng = random.Random(0)
    checked, kinds, endings = 0, set(), set()
    while checked < 40:
        position = rules.initial()
        while position.ply < rules.max_plies - 6 and not position.terminated:
            position = rules.play(position, rng.choice(rules.legal_moves(position)))
        if position.terminated:
            continue
        for move in rules.legal_moves(position):
            child = rules.play(position, move)
            exact = -plain_minimax(rules, child, endings)
            search = Negamax(rules)
            assert search.move_value(position, move, exact) == exact
            assert search.move_value(position, move, exact - 1) is None
            assert search.move_value(position, move, exact + 1) is None
            kinds.add("capture" if captured_stones(rules, position, move) else "")
            checked += 1
    assert "capture" in kinds and endings == {"superko", "passes", "cap"}, (kinds, endings)


@pytest.mark.parametrize("endgame", ENDGAMES, ids=[endgame.name for endgame in ENDGAMES])
def test_endgame_values_hold_without_own_eye_pruning(endgame):
    position = endgame.position(RULES)
    mover, komi = endgame.mover, endgame.komi
    best_margin, second_margin = MARGINS[endgame.name]
    search = Negamax()

    # Margins at the komi -> the mover's area difference (an integer): margin = mover·(black's difference − komi).
    def difference(margin: float) -> int:
        value = margin + mover * komi
        assert value == int(value)
        return int(value)

    for vertex, margin in ((endgame.best, best_margin), (endgame.second, second_margin)):
        assert search.move_value(position, RULES.move(vertex), difference(margin)) is not None, (vertex, margin)
    # Every other legal move (own-eye fills and the pass included) gives the mover less than the best move.
    others = [m for m in RULES.legal_moves(position) if RULES.vertex(m) not in (endgame.best, endgame.second)]
    assert RULES.pass_move in others
    for move in others:
        assert not search.move_value_at_least(position, move, difference(best_margin)), RULES.vertex(move)

    # The pruning solver agrees on every move it keeps.
    margins = endgame.margins(solve(RULES, position))
    assert (margins[endgame.best], margins[endgame.second]) == (best_margin, second_margin)
    assert search.nodes < 200_000
