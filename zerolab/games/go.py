"""Go on small boards (7×7 by default) over pgx, with board size and komi as parameters.

pgx's Go scores by Tromp–Taylor area, gives ties to White and makes a positional-superko move lose.  Its komi is
a Python float fixed on the environment, not part of the state; code that needs a komi per game (SAI) scores the
final board itself.

:class:`GoGame` is the only module that reads pgx Go internals (``state._x``: the board, the colour to move, the
pass count, the step count).  Everything else asks it:

* ``black_to_move(states)`` — [B] bool (or a scalar for one state);
* ``area_difference(states)`` — Tromp–Taylor area of Black minus White: stones plus empty regions that reach only
  that colour; komi not included.  Black wins a finished game at komi ``k`` iff ``area_difference - k > 0``
  (ties go to White, as in pgx);
* ``ended_by_two_passes(states)`` — the game ended by two consecutive passes, so its result is the area count
  (pgx also ends a game when a move repeats a position, positional superko, which the mover loses, and at the ply
  cap below, where it counts the area like after two passes);
* ``ended_by_rule_violation(states)`` — the game ended by a positional-superko move (pgx's winner stands);
* ``max_game_plies`` — pgx ends every game after ``2·N²`` plies (98 on 7×7);
* ``black_player(states)`` — the pgx player id (0 or 1) playing Black, to read ``states.rewards``.

Go has no FEN: a **start position** (the arena's ``start_fens``, e.g. a handicap) is written as the moves that reach
it from the empty board, GTP vertices with Black first and colours alternating (``C3 pass E5``: two handicap stones,
White to move); :meth:`GoGame.start_moves` reads such a text and :meth:`GoGame.from_fen` builds its pgx state.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import pgx
import pgx.go

from zerolab.games.base import Game, InvalidPositionError

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

    @property
    def max_game_plies(self) -> int:
        """pgx ends a game after this many plies (``2·N²``: 98 on 7×7), counting the area as after two passes."""
        return int(self.env._game.max_termination_steps)

    # --- reading pgx Go states (the only place that does) ------------------------------------------------------
    # Each takes one state or a batch [B] and is jittable.

    def black_to_move(self, states) -> jax.Array:
        """[B] bool: Black is to move (pgx counts colours by ply parity: Black moves on even plies)."""
        return states._x.step_count % 2 == 0

    def black_player(self, states) -> jax.Array:
        """[B] int32: the pgx player id (index into ``states.rewards``) that plays Black in each game."""
        return states._player_order[..., 0]

    def plies_played(self, states) -> jax.Array:
        """[B] int32: plies played so far (passes included)."""
        return states._x.step_count

    def ended_by_two_passes(self, states) -> jax.Array:
        """[B] bool: the game is over because both players passed in a row."""
        return states._x.consecutive_pass_count >= 2

    def ended_by_rule_violation(self, states) -> jax.Array:
        """[B] bool: the game is over because the last move broke a rule (a positional-superko repetition, which
        pgx scores as a loss for the player who made it) rather than by two passes or the ply cap."""
        at_cap = states._x.step_count >= self.max_game_plies
        return states.terminated & ~self.ended_by_two_passes(states) & ~at_cap

    def stone_colours(self, states) -> jax.Array:
        """[B, N²] int32 in pgx's point order (row by row from the top): +1 Black stone, -1 White stone, 0 empty."""
        return jnp.sign(states._x.board).astype(jnp.int32)

    def area_difference(self, states) -> jax.Array:
        """[B] int32 Tromp–Taylor area of Black minus White, komi not included.

        A player's area is their stones plus the empty points whose empty region reaches only their stones.
        """
        stones = self.stone_colours(states)
        return _area_difference(stones.reshape((-1, self.size * self.size)), self.size).reshape(stones.shape[:-1])

    def black_wins(self, states, komi: float | None = None) -> jax.Array:
        """[B] bool: Black wins the finished, counted game at ``komi`` (default: this game's komi); ties to White."""
        komi = self.komi if komi is None else komi
        return self.area_difference(states) - komi > 0

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

    # --- start positions (see the module docstring) -------------------------------------------------------------

    def start_moves(self, text: str) -> list[int]:
        """pgx actions of a start-position text (GTP vertices from the empty board, Black first); raises
        :class:`InvalidPositionError` naming the text for a malformed vertex."""
        try:
            return [self.gtp_to_action(vertex) for vertex in text.split()]
        except ValueError as error:
            raise InvalidPositionError(f"Go start position {text!r}: {error}") from None

    def from_fen(self, text: str) -> pgx.State:
        """The unbatched pgx state a start-position text leads to; every move must be legal under pgx's rules and
        the game not over (:class:`InvalidPositionError` naming the text otherwise)."""
        step = self.jitted_step
        state = self.init(jax.random.key(0))
        for index, action in enumerate(self.start_moves(text)):
            if bool(state.terminated) or not bool(state.legal_action_mask[action]):
                reason = "the game is already over" if bool(state.terminated) else "it is illegal"
                raise InvalidPositionError(f"Go start position {text!r}: move {index + 1} "
                                           f"({self.action_to_gtp(action)}) cannot be played: {reason}")
            state = step(state, action)
        if bool(state.terminated):
            raise InvalidPositionError(f"Go start position {text!r}: the game is over after these moves")
        return state

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


def _neighbours(size: int) -> jnp.ndarray:
    """[N², 4] indices of each point's neighbours, -1 off the board."""
    rows, columns = jnp.divmod(jnp.arange(size * size), size)
    neighbour_rows = rows[:, None] + jnp.array([-1, 1, 0, 0])
    neighbour_columns = columns[:, None] + jnp.array([0, 0, -1, 1])
    on_board = (neighbour_rows >= 0) & (neighbour_rows < size) & (neighbour_columns >= 0) & (neighbour_columns < size)
    return jnp.where(on_board, neighbour_rows * size + neighbour_columns, -1)


def _reaches(stones: jax.Array, colour: int, neighbours: jax.Array) -> jax.Array:
    """[N²] bool: the point is a ``colour`` stone or an empty point connected through empty points to one."""
    empty = stones == 0

    def grow(carry):
        reached, _ = carry
        neighbour_reached = jnp.where(neighbours >= 0, reached[neighbours], False).any(axis=-1)
        grown = reached | (empty & neighbour_reached)
        return grown, (grown != reached).any()

    reached, _ = jax.lax.while_loop(lambda carry: carry[1], grow, (stones == colour, jnp.bool_(True)))
    return reached


def _area_difference(stones: jax.Array, size: int) -> jax.Array:
    """[B] Black area minus White area of [B, N²] stone colours (+1 Black, -1 White, 0 empty)."""
    neighbours = _neighbours(size)

    def one(board):
        black, white = _reaches(board, 1, neighbours), _reaches(board, -1, neighbours)
        empty = board == 0
        black_area = (board == 1).sum() + (empty & black & ~white).sum()
        white_area = (board == -1).sum() + (empty & white & ~black).sum()
        return (black_area - white_area).astype(jnp.int32)

    return jax.vmap(one)(stones)
