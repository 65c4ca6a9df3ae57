"""The exact solver of small Go endgames: a pure-Python rules engine that reproduces pgx's rules, and minimax.

:class:`Rules` plays by pgx's rules:

* a move is legal on an empty point that is not the simple-ko point and that has an empty neighbour, or captures an
  adjacent opponent chain (its last liberty), or joins an own chain with another liberty (no suicide); a pass is
  always legal;
* captures remove chains without liberties; a capture of exactly one stone by a stone whose neighbours were all
  opponent stones or the edge sets the ko point (the captured point, forbidden on the next move only);
* a move (not a pass) that recreates any board seen after an earlier move of the game (positional superko) ends the
  game, lost by the player who made it; two passes in a row end it; so does the ply cap ``2·N²``;
* games that end by passes or at the cap are scored by Tromp–Taylor area: stones plus empty regions that reach only
  that colour; Black wins at komi k iff ``area_B − area_W − k > 0``.

The solver's value of a position is Black's final area difference (komi excluded) under optimal play by both sides
for the **score** (each side maximises its own margin); a side wins at komi k iff it can force a margin beyond k, so
a move is winning iff its minimax margin is. A superko move is never better than a pass (it loses outright), so the
solver leaves such moves out.
``tests/sai_go/test_endgames.py`` checks the engine against pgx move by move; ``tests/sai_go/test_endgame_solver.py``
checks the solver against an independent one; the endgames it verifies are :mod:`sai_go.endgames`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from zerolab import GoGame

PASS = "pass"
BLACK, WHITE, EMPTY = 1, -1, 0


@dataclasses.dataclass(frozen=True)
class Position:
    """A game state of :class:`Rules`: the board (``N²`` ints, +1 Black, −1 White, 0 empty, row by row from the top,
    pgx's point order), who moves, consecutive passes, the simple-ko point (−1: none), plies played (pgx's step
    count), the boards seen after every earlier move of the game, and how the game ended (if it did)."""

    board: tuple[int, ...]
    to_move: int
    passes: int = 0
    ko: int = -1
    ply: int = 0
    history: frozenset = frozenset()
    terminated: bool = False
    superko: bool = False  # ended by a positional-superko move (its mover lost)


class Rules:
    """pgx's Go rules on an N×N board (see the module docstring), on :class:`Position` values."""

    def __init__(self, size: int = 7, max_plies: int | None = None):
        self.size = size
        self.points = size * size
        self.pass_move = self.points
        self.game = GoGame(size=size)  # GTP vertices <-> point indices, the same numbering as pgx's
        self.max_plies = 2 * self.points if max_plies is None else max_plies
        self.neighbours = tuple(
            tuple(r * size + c for r, c in ((row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1))
                  if 0 <= r < size and 0 <= c < size)
            for row, col in (divmod(point, size) for point in range(self.points)))

    # --- text ---------------------------------------------------------------------------------------------------

    def vertex(self, move: int) -> str:
        return self.game.action_to_gtp(move)

    def move(self, vertex: str) -> int:
        return self.game.gtp_to_action(vertex)

    def initial(self) -> Position:
        return Position(board=(EMPTY,) * self.points, to_move=BLACK)

    # --- chains and moves ---------------------------------------------------------------------------------------

    def chain(self, board: tuple[int, ...], point: int) -> tuple[set[int], set[int]]:
        """The chain through the stone at ``point`` and its liberties."""
        colour, stones, liberties, frontier = board[point], {point}, set(), [point]
        while frontier:
            for neighbour in self.neighbours[frontier.pop()]:
                if board[neighbour] == EMPTY:
                    liberties.add(neighbour)
                elif board[neighbour] == colour and neighbour not in stones:
                    stones.add(neighbour)
                    frontier.append(neighbour)
        return stones, liberties

    def liberty_counts(self, board: tuple[int, ...]) -> list[int]:
        """For each point, the liberties of the chain through it (0 on empty points)."""
        counts = [0] * self.points
        for point in range(self.points):
            if board[point] != EMPTY and not counts[point]:
                stones, liberties = self.chain(board, point)
                for stone in stones:
                    counts[stone] = len(liberties)
        return counts

    def is_legal(self, position: Position, move: int, liberty_counts: list[int] | None = None) -> bool:
        """pgx's legal-action mask for one move (superko moves are legal: they lose)."""
        if position.terminated:
            return False
        if move == self.pass_move:
            return True
        board = position.board
        if board[move] != EMPTY or move == position.ko:
            return False
        counts = self.liberty_counts(board) if liberty_counts is None else liberty_counts
        for neighbour in self.neighbours[move]:
            colour = board[neighbour]
            if colour == EMPTY:
                return True
            if colour == -position.to_move and counts[neighbour] == 1:  # captures it
                return True
            if colour == position.to_move and counts[neighbour] >= 2:  # joins a chain that keeps a liberty
                return True
        return False

    def legal_moves(self, position: Position) -> list[int]:
        counts = self.liberty_counts(position.board)
        return [move for move in range(self.points + 1) if self.is_legal(position, move, counts)]

    def play(self, position: Position, move: int) -> Position:
        """The position after a legal ``move`` (a ValueError otherwise)."""
        if not self.is_legal(position, move):
            colour = "Black" if position.to_move == BLACK else "White"
            raise ValueError(f"illegal move {self.vertex(move)} for {colour}")
        ply = position.ply + 1
        if move == self.pass_move:
            passes = position.passes + 1
            return dataclasses.replace(position, to_move=-position.to_move, passes=passes, ko=-1, ply=ply,
                                       history=position.history | {position.board},
                                       terminated=passes >= 2 or ply >= self.max_plies)
        board = list(position.board)
        mover = position.to_move
        surrounded = all(board[n] == -mover for n in self.neighbours[move])
        captured: set[int] = set()
        for neighbour in self.neighbours[move]:
            if board[neighbour] == -mover and neighbour not in captured:
                stones, liberties = self.chain(position.board, neighbour)
                if liberties == {move}:
                    captured |= stones
        for point in captured:
            board[point] = EMPTY
        board[move] = mover
        board = tuple(board)
        ko = next(iter(captured)) if surrounded and len(captured) == 1 else -1
        superko = board in position.history
        return Position(board=board, to_move=-mover, passes=0, ko=ko, ply=ply, history=position.history | {board},
                        terminated=superko or ply >= self.max_plies, superko=superko)

    def replay(self, vertices: Iterable[str], start: Position | None = None) -> Position:
        position = self.initial() if start is None else start
        for vertex in vertices:
            position = self.play(position, self.move(vertex))
        return position

    # --- scoring ------------------------------------------------------------------------------------------------

    def area_difference(self, board: tuple[int, ...]) -> int:
        """Tromp–Taylor area of Black minus White: stones plus empty regions that reach only that colour."""
        total, seen = sum(board), set()
        for point in range(self.points):
            if board[point] != EMPTY or point in seen:
                continue
            region, reaches, frontier = {point}, set(), [point]
            while frontier:
                for neighbour in self.neighbours[frontier.pop()]:
                    if board[neighbour] == EMPTY and neighbour not in region:
                        region.add(neighbour)
                        frontier.append(neighbour)
                    elif board[neighbour] != EMPTY:
                        reaches.add(board[neighbour])
            seen |= region
            if len(reaches) == 1:
                total += len(region) * reaches.pop()
        return total


# --- the exact solver ---------------------------------------------------------------------------------------------

#: A superko loss, from the loser's view: below any area difference.
SUPERKO_LOSS = -10_000


def unconditionally_alive(rules: Rules, board: tuple[int, ...], colour: int) -> set[int]:
    """The stones of ``colour``'s chains that can never be captured, even if ``colour`` always passes (Benson's
    algorithm: keep the chains with at least two vital regions among the regions bordered only by kept chains)."""
    chains: list[tuple[frozenset, frozenset]] = []
    owner: dict[int, int] = {}
    for point in range(rules.points):
        if board[point] == colour and point not in owner:
            stones, liberties = rules.chain(board, point)
            for stone in stones:
                owner[stone] = len(chains)
            chains.append((frozenset(stones), frozenset(liberties)))
    regions = []  # (empty points, bordering chain indices) of each connected set of points without colour's stones
    seen: set[int] = set()
    for point in range(rules.points):
        if board[point] == colour or point in seen:
            continue
        region, borders, frontier = {point}, set(), [point]
        while frontier:
            for neighbour in rules.neighbours[frontier.pop()]:
                if board[neighbour] == colour:
                    borders.add(owner[neighbour])
                elif neighbour not in region:
                    region.add(neighbour)
                    frontier.append(neighbour)
        seen |= region
        regions.append((frozenset(p for p in region if board[p] == EMPTY), frozenset(borders)))
    alive = set(range(len(chains)))
    while True:
        healthy = [(empties, borders) for empties, borders in regions if borders <= alive]
        keep = {index for index in alive
                if sum(index in borders and empties <= chains[index][1] for empties, borders in healthy) >= 2}
        if keep == alive:
            return {stone for index in alive for stone in chains[index][0]}
        alive = keep


def own_eyes(rules: Rules, board: tuple[int, ...], colour: int) -> set[int]:
    """Single empty points whose neighbours are all stones of ``colour``'s unconditionally alive chains."""
    alive = unconditionally_alive(rules, board, colour)
    return {point for point in range(rules.points)
            if board[point] == EMPTY and all(n in alive for n in rules.neighbours[point])}


@dataclasses.dataclass
class Solution:
    """Exact minimax values (Black's area difference, komi excluded) of every legal move of a position."""

    values: dict[str, int]  # move (GTP vertex) -> Black's final area difference after it, both sides playing it best
    nodes: int  # positions visited


def solve(rules: Rules, position: Position, alpha_beta: bool = True) -> Solution:
    """Every legal move's minimax value: alpha-beta (or, with ``alpha_beta=False``, plain minimax, for checking it)
    over the whole game tree under pgx's rules, in which no player
    fills a single-point eye of its own unconditionally alive chains (:func:`own_eyes`).

    That one restriction keeps the tree small: such a move changes no area (a stone replaces a point of territory)
    and, repeated, only hands the opponent the chain; without it every line in which a player fills its own eyes
    would have to be searched to the end of the game that follows the capture.  The opponent cannot play there at
    all (suicide).  Small-board Go solvers prune moves inside a player's own safe regions the same way (van der Werf
    et al., *Solving Go on small boards*, 2003).  Superko moves are left out too (each loses at once; a pass is
    always available instead).
    """
    counter = [0]

    def negamax(position: Position, alpha: int, beta: int) -> int:
        """The mover's best final area difference (mover minus opponent) from ``position``, exact inside
        ``(alpha, beta)``."""
        counter[0] += 1
        if position.terminated:
            if position.superko:  # the player who just moved lost; the mover here won
                return -SUPERKO_LOSS
            return position.to_move * rules.area_difference(position.board)
        best = SUPERKO_LOSS
        for move in candidate_moves(position):
            child = rules.play(position, move)
            if child.superko:
                continue
            value = -negamax(child, -beta, -alpha)
            best = max(best, value)
            alpha = max(alpha, value)
            if alpha >= beta and alpha_beta:
                break
        return best

    def candidate_moves(position: Position) -> list[int]:
        """Legal moves but own eyes; captures first, the pass last (the order only speeds alpha-beta up)."""
        eyes = own_eyes(rules, position.board, position.to_move)
        stones = [m for m in rules.legal_moves(position) if m != rules.pass_move and m not in eyes]
        stones.sort(key=lambda m: -sum(position.board[n] == -position.to_move for n in rules.neighbours[m]))
        return stones + [rules.pass_move]

    values = {}
    wide = 10 * rules.points
    for move in candidate_moves(position):
        child = rules.play(position, move)
        if not child.superko:
            # negamax gives the child's mover's view; Black's is its sign times it
            values[rules.vertex(move)] = child.to_move * negamax(child, -wide, wide)
    return Solution(values, counter[0])
