"""Hand-made 7×7 endgames with two winning moves of different margins, verified by exhaustive minimax.

SAI's Figs. 2–3 ask how an agent chooses between two winning moves of which one wins by more.  Each :class:`Endgame`
here is a nearly filled board, a side to move, a komi, the move with the largest margin (``best``) and another winning
move with a smaller one (``second``).  The claims are checked by :func:`sai_go.exact_solver.solve` (exhaustive
minimax under pgx's rules, played by :class:`sai_go.exact_solver.Rules`).  ``tests/sai_go/test_endgames.py`` checks
the five endgames' claims; ``experiments/sai_go_positions.py`` asks SAI networks to choose.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from sai_go.exact_solver import BLACK, EMPTY, PASS, WHITE, Position, Rules, Solution


# --- positions from diagrams --------------------------------------------------------------------------------------

STONE_SYMBOLS = {"X": BLACK, "O": WHITE, ".": EMPTY}


def parse_diagram(rows: Iterable[str]) -> tuple[int, ...]:
    """A board from N rows, top row first, one symbol a point (``X`` Black, ``O`` White, ``.`` empty; spaces
    ignored)."""
    cells = [STONE_SYMBOLS[symbol] for row in rows for symbol in row.replace(" ", "")]
    size = int(round(len(cells) ** 0.5))
    if size * size != len(cells):
        raise ValueError(f"a diagram needs N rows of N points, got {len(cells)} points")
    return tuple(cells)


def setup_vertices(rules: Rules, board: tuple[int, ...], to_move: int) -> list[str]:
    """GTP moves from the empty board (Black first, alternating) that build ``board`` with ``to_move`` to move: the
    stones in reading order, the colour with more stones passing in between at the start (never two passes in a row),
    the last move a stone.  No stone is ever captured on the way when every chain of ``board`` has a liberty: each
    intermediate board's chains are then parts of final chains with at least one liberty each."""
    black = [rules.vertex(p) for p in range(rules.points) if board[p] == BLACK]
    white = [rules.vertex(p) for p in range(rules.points) if board[p] == WHITE]
    steps = len(black) + len(white)
    while steps % 2 != (0 if to_move == BLACK else 1) or (steps + 1) // 2 < len(black) or steps // 2 < len(white):
        steps += 1
    black_steps = [PASS] * ((steps + 1) // 2 - len(black)) + black
    white_steps = [PASS] * (steps // 2 - len(white)) + white
    moves = [(black_steps if ply % 2 == 0 else white_steps)[ply // 2] for ply in range(steps)]
    if any(a == b == PASS for a, b in zip(moves, moves[1:])) or moves[-1] == PASS:
        raise ValueError("the diagram's stone counts need passes from both sides; add or remove a stone")
    return moves


@dataclasses.dataclass(frozen=True)
class Endgame:
    """A hand-made endgame: a diagram, the side to move, the komi (to White), and two winning moves of which
    ``best`` has the largest margin."""

    name: str
    diagram: tuple[str, ...]
    to_move: str  # "black" | "white"
    komi: float
    best: str
    second: str
    note: str = ""

    @property
    def mover(self) -> int:
        return BLACK if self.to_move == "black" else WHITE

    def board(self) -> tuple[int, ...]:
        return parse_diagram(self.diagram)

    def setup(self, rules: Rules) -> list[str]:
        """The GTP moves that reach the position (see :func:`setup_vertices`)."""
        return setup_vertices(rules, self.board(), self.mover)

    def position(self, rules: Rules) -> Position:
        position = rules.replay(self.setup(rules))
        if position.board != self.board() or position.to_move != self.mover or position.terminated:
            raise ValueError(f"endgame {self.name!r}: its setup moves do not reach the diagram")
        return position

    def margins(self, solution: Solution) -> dict[str, float]:
        """Each move's exact final margin for the mover at the komi (positive: the mover wins)."""
        return {move: self.mover * (value - self.komi) for move, value in solution.values.items()}


#: The five endgames of ``sai-go-positions`` (margins: the mover's, at the komi, by :func:`solve`; both sides' eyes
#: are A6/A2 and G6/G2, or B1/F1 and B7/F7).  Each is a double-gote choice: whichever point the mover leaves, the
#: opponent takes.
ENDGAMES = (
    Endgame("capture-or-dame", (
        "X X X X O O O",
        ". X X X O O .",
        "X X X X O O O",
        "X X O . O O O",
        "X X X X O O O",
        ". X X X O O .",
        "X X X . O O O"), "black", 0.5, best="D4", second="D1",
        note="D4 captures the cutting stone C4 (White would connect it at D4): +4.5; the dame D1: +2.5"),
    Endgame("connect-or-dame", (
        "X X X . O O O",
        ". X X X O O .",
        "X X X X O O O",
        "X X O . O O O",
        "X X O X O O O",
        ". X X X O O .",
        "X X X X O O O"), "white", 9.5, best="D4", second="D7",
        note="D4 connects White's two stones C4-C3 (Black would capture them at D4): +8.5; the dame D7: +4.5"),
    Endgame("two-captures", (
        "X X X X O O O",
        ". X O . O O .",
        "X X X X O O O",
        "X X O . O O O",
        "X X O X O O O",
        ". X X X O O .",
        "X X X X O O O"), "black", 0.5, best="D4", second="D6",
        note="D4 captures two stones (C4-C3): +2.5; D6 captures one (C6): +0.5; a pass loses (−1.5)"),
    Endgame("capture-two-or-save-one", (
        "O . O O O . O",
        "O O O O O O O",
        "O O X X O O O",
        "X O O . X . X",
        "X X X X X O X",
        "X X X X X X X",
        "X . X X X . X"), "white", 9.5, best="D4", second="F4",
        note="D4 captures Black's C5-D5: +8.5; F4 saves White's F3: +6.5"),
    Endgame("save-two-or-capture-one", (
        "X X X X O O O",
        ". X O . O O .",
        "X X X O O O O",
        "X X X . X X O",
        "X X X X O O O",
        ". X X X O O .",
        "X X X X O O O"), "black", 0.5, best="D4", second="D6",
        note="D4 saves Black's E4-F4: +4.5; D6 captures White's C6: +2.5"),
)
