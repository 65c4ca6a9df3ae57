"""Go on small boards (7×7 by default) over pgx, with board size and komi as parameters.

pgx's Go scores by Tromp–Taylor area, gives ties to White and makes a positional-superko move lose.  Its komi is
a Python float fixed on the environment, not part of the state; code that needs a komi per game (SAI) scores the
final board itself.
"""

from __future__ import annotations

import pgx.go

from zerolab.games.base import Game

GTP_COLUMNS = "ABCDEFGHJKLMNOPQRST"  # GTP skips the letter I


class GoGame(Game):
    def __init__(self, size: int = 7, komi: float = 7.5):
        if not 2 <= size <= 19:
            raise ValueError(f"go size must be between 2 and 19, got {size}")
        super().__init__(name="go", env=pgx.go.Go(size=size, komi=float(komi)))
        self.size = size
        self.komi = float(komi)

    @property
    def identity(self) -> tuple:
        return (type(self).__name__, self.name, self.size, self.komi)

    move_record_format = "sgf"
    gtp_columns = GTP_COLUMNS

    def action_to_text(self, action: int, state=None) -> str:
        return self.action_to_gtp(action)

    def text_to_action(self, text: str, state=None) -> int:
        """pgx action of a GTP vertex; with ``state``, the move must also be legal there."""
        action = self.gtp_to_action(text)
        if state is not None and not bool(state.legal_action_mask[action]):
            raise ValueError(f"illegal move {text!r}: the point is occupied or the move is suicide or superko")
        return action

    @property
    def pass_action(self) -> int:
        return self.size * self.size

    def action_to_gtp(self, action: int) -> str:
        """GTP vertex (``C4``, ``pass``) of a pgx action; pgx numbers points row by row from the top."""
        action = int(action)
        if action == self.pass_action:
            return "pass"
        row, column = divmod(action, self.size)
        return f"{GTP_COLUMNS[column]}{self.size - row}"

    def gtp_to_action(self, vertex: str) -> int:
        vertex = vertex.strip().upper()
        if vertex == "PASS":
            return self.pass_action
        if len(vertex) < 2 or vertex[0] not in GTP_COLUMNS[: self.size] or not vertex[1:].isdigit():
            raise ValueError(f"malformed GTP vertex {vertex!r} for a {self.size}x{self.size} board")
        column, row = GTP_COLUMNS.index(vertex[0]), self.size - int(vertex[1:])
        if not 0 <= row < self.size:
            raise ValueError(f"GTP vertex {vertex!r} is off a {self.size}x{self.size} board")
        return row * self.size + column
