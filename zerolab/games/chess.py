"""Chess (8×8) and Gardner chess (5×5) over pgx, with FEN and UCI conversions.

pgx encodes a move AlphaZero-style as ``from_square * planes + plane`` where the board is seen from the side to
move: squares are numbered ``file * n + rank`` with rank 0 the mover's first rank, ``planes`` is 73 on 8×8 and 49
on 5×5, and the first 9 planes are under-promotions (rook, bishop, knight × forward, right, left).  A queen
promotion is an ordinary forward move of a pawn onto the last rank.  This module and
:mod:`zerolab.games.lc0_observation` (lc0's input planes) are the only places in the project that read pgx's
internal chess tables and state fields (they moved between pgx versions); everything else goes through
:class:`ChessGame`.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pgx.chess
import pgx.experimental.chess as pgx_chess_fen
import pgx.gardner_chess as pgx_gardner
from pgx._src.games import chess as pgx_chess_internals
from pgx._src import gardner_chess_utils as pgx_gardner_internals

from zerolab.games.fen import GARDNER_START_FEN, InvalidPositionError, validate_chess_fen, validate_gardner_fen
from zerolab.games.base import Game, ObservationPlanes
from zerolab.games.lc0_observation import OBSERVATIONS, Lc0ObservationEnv, compiled_lc0_observation

PROMOTION_PIECES = "rbn"  # order of pgx's under-promotion planes
FILES = "abcdefgh"


@dataclasses.dataclass(frozen=True)
class MoveTable:
    """Static description of every action id of one board size, in the mover's frame.

    Attributes:
      from_square: [A] origin square ``file * n + rank`` (mover's frame).
      to_square: [A] destination square, -1 where the action leaves the board.
      underpromotion: [A] 0 rook, 1 bishop, 2 knight, -1 for other moves.
      action_of_move: [n*n, n*n] action id of the non-under-promoting move from→to, -1 where none.
    """

    board_size: int
    from_square: np.ndarray
    to_square: np.ndarray
    underpromotion: np.ndarray
    action_of_move: np.ndarray

    @property
    def num_actions(self) -> int:
        return self.from_square.shape[0]

    @property
    def planes(self) -> int:
        return self.num_actions // (self.board_size**2)


@functools.cache
def move_table(board_size: int) -> MoveTable:
    """The action table of pgx's chess (``board_size`` 8) or Gardner chess (``board_size`` 5)."""
    if board_size == 8:
        destination = np.asarray(pgx_chess_internals.FROM_PLANE)  # [64, 73] -> to square
    elif board_size == 5:
        destination = np.asarray(pgx_gardner_internals.TO_MAP)  # [25, 49] -> to square
    else:
        raise ValueError(f"board_size must be 5 or 8, got {board_size}")
    squares, planes = destination.shape
    from_square = np.repeat(np.arange(squares, dtype=np.int32), planes)
    plane = np.tile(np.arange(planes, dtype=np.int32), squares)
    to_square = destination.reshape(-1).astype(np.int32)
    underpromotion = np.where((plane < 9) & (to_square >= 0), plane // 3, -1).astype(np.int32)
    action_of_move = -np.ones((squares, squares), dtype=np.int32)
    ordinary = (plane >= 9) & (to_square >= 0)
    action_of_move[from_square[ordinary], to_square[ordinary]] = np.flatnonzero(ordinary)
    return MoveTable(board_size, from_square, to_square, underpromotion, action_of_move)


def square_name(square: int, board_size: int, color: int) -> str:
    """Name (``e4``) of ``square`` given in the frame of the side ``color`` (0 white, 1 black)."""
    file, rank = divmod(int(square), board_size)
    if color == 1:
        rank = board_size - 1 - rank
    return f"{FILES[file]}{rank + 1}"


def parse_square(name: str, board_size: int, color: int) -> int:
    """Inverse of :func:`square_name`."""
    file, rank = FILES.index(name[0]), int(name[1:]) - 1
    if not (0 <= file < board_size and 0 <= rank < board_size):
        raise ValueError(f"square {name!r} is off a {board_size}x{board_size} board")
    if color == 1:
        rank = board_size - 1 - rank
    return file * board_size + rank


def _board_codes(placement: str, board_size: int) -> np.ndarray:
    """[n, n] piece codes of a FEN placement, rank n first (+ white, − black; 1 pawn … 6 king)."""
    rows = []
    for rank in placement.split("/"):
        row = []
        for symbol in rank:
            if symbol.isdigit():
                row.extend([0] * int(symbol))
            else:
                code = "pnbrqk".index(symbol.lower()) + 1
                row.append(code if symbol.isupper() else -code)
        rows.append(row)
    return np.asarray(rows, dtype=np.int32).reshape(board_size, board_size)


def _mover_frame_squares(codes: np.ndarray, black_to_move: bool) -> np.ndarray:
    """[n*n] FEN board (rank n first) as pgx's mover-frame squares ``file * n + rank`` (own pieces positive)."""
    if black_to_move:
        codes = -np.flip(codes, axis=0)
    return np.rot90(codes, k=3).reshape(-1).astype(np.int32)


def _placement(squares: np.ndarray, board_size: int, black_to_move: bool) -> str:
    """FEN placement of [n*n] mover-frame squares (inverse of :func:`_mover_frame_squares` and ``_board_codes``)."""
    codes = np.rot90(np.asarray(squares).reshape(board_size, board_size), k=1)
    if black_to_move:
        codes = -np.flip(codes, axis=0)
    rows = []
    for row in codes:
        text, empty = "", 0
        for code in row:
            if code == 0:
                empty += 1
                continue
            symbol = "pnbrqk"[abs(int(code)) - 1]
            text += (str(empty) if empty else "") + (symbol.upper() if code > 0 else symbol)
            empty = 0
        rows.append(text + (str(empty) if empty else ""))
    return "/".join(rows)


@functools.cache
def _chess_state_finisher():
    """Jitted once: completes an 8×8 pgx state (legal moves, history, termination, observation) from its board."""
    rules = pgx_chess_internals.Game()

    def finish(x):
        legal = pgx_chess_internals._legal_action_mask(x)
        x = pgx_chess_internals._update_history(x._replace(legal_action_mask=legal))
        player_order = jnp.int32([0, 1])
        return pgx.chess.State(
            _player_order=player_order,
            _x=x,
            current_player=player_order[x.color],
            legal_action_mask=legal,
            terminated=rules.is_terminal(x),
            rewards=rules.rewards(x)[player_order],
            observation=rules.observe(x, x.color),
        )

    return jax.jit(finish)


@functools.cache
def _gardner_state_finisher():
    """Jitted once: completes a 5×5 pgx state from its board, turn and counters."""

    def finish(state):
        state = state.replace(_possible_piece_positions=pgx_gardner._possible_piece_positions(state))
        state = state.replace(legal_action_mask=pgx_gardner._legal_action_mask(state))
        state = state.replace(_zobrist_hash=pgx_gardner._zobrist_hash(state))
        state = pgx_gardner._check_termination(pgx_gardner._update_history(state))
        return state.replace(observation=pgx_gardner._observe(state, state.current_player))

    return jax.jit(finish)


def chess_state_from_fen(fen: str) -> pgx.State:
    """pgx 8×8 state of a validated FEN, with no history: the position has no past positions.

    pgx's own reader (``pgx.experimental.chess.from_fen``, and ``pgx.gardner_chess._from_fen``) starts from its
    default state, so the standard start position becomes the FEN position's previous position in the history
    planes of the observation and in the repetition hashes; it also re-traces its functions on every call.  Here
    the history is empty, as in ``env.init``'s state: ``from_fen(start_fen)`` observes exactly as ``init`` does.
    """
    placement, turn, castling, en_passant, halfmove, fullmove = fen.split()
    black = turn == "b"
    rights = np.array([["Q" in castling, "K" in castling], ["q" in castling, "k" in castling]])
    if black:
        rights = rights[::-1]
    if en_passant == "-":
        en_passant_square = -1
    else:
        file, rank = FILES.index(en_passant[0]), int(en_passant[1]) - 1
        en_passant_square = file * 8 + (7 - rank if black else rank)
    x = pgx_chess_internals.GameState(
        board=jnp.asarray(_mover_frame_squares(_board_codes(placement, 8), black)),
        color=jnp.int32(int(black)),
        castling_rights=jnp.asarray(rights),
        en_passant=jnp.int32(en_passant_square),
        halfmove_count=jnp.int32(int(halfmove)),
        fullmove_count=jnp.int32(int(fullmove)),
        # pgx's defaults hold the standard start position as the previous one; a FEN position has no past.
        hash_history=jnp.zeros_like(pgx_chess_internals.GameState().hash_history),
        board_history=jnp.zeros_like(pgx_chess_internals.GameState().board_history),
    )
    return _chess_state_finisher()(x)


def gardner_state_from_fen(fen: str) -> pgx.State:
    """pgx 5×5 state of a validated Gardner FEN."""
    placement, turn, _, _, halfmove, fullmove = fen.split()
    black = turn == "b"
    state = pgx_gardner.State(
        _board=jnp.asarray(_mover_frame_squares(_board_codes(placement, 5), black)),
        _turn=jnp.int32(int(black)),
        _halfmove_count=jnp.int32(int(halfmove)),
        _fullmove_count=jnp.int32(int(fullmove)),
        _hash_history=jnp.zeros_like(pgx_gardner.State()._hash_history),  # no start position as the past
        _board_history=jnp.zeros_like(pgx_gardner.State()._board_history),
    )
    return _gardner_state_finisher()(state)


class ChessGame(Game):
    """pgx ``chess`` (8×8) or ``gardner_chess`` (5×5) with FEN and UCI conversions.

    Conversions act on one unbatched pgx state; they run on the host and are meant for I/O (engines, files, the
    arena), not for the jitted self-play path.
    """

    def __init__(self, name: str, observation: str = "pgx"):
        if name not in ("chess", "gardner_chess"):
            raise ValueError(f"ChessGame name must be 'chess' or 'gardner_chess', got {name!r}")
        if observation not in OBSERVATIONS:
            raise ValueError(f"unknown chess observation {observation!r}; expected one of {', '.join(OBSERVATIONS)}")
        if observation == "lc0" and name != "chess":
            raise ValueError(f"the lc0 observation exists for 8x8 chess only: use make_game('chess', "
                             f"observation='lc0'), not {name!r}")
        #: ``"pgx"`` (pgx's own planes) or ``"lc0"`` (lc0's 112 classical input planes, :func:`zerolab.games.lc0_observation.lc0_observation`).
        self.observation = observation
        env = pgx.make(name)
        super().__init__(name=name, env=Lc0ObservationEnv(env) if observation == "lc0" else env)
        self.board_size = 8 if name == "chess" else 5
        self.moves = move_table(self.board_size)
        if self.moves.num_actions != self.num_actions:
            raise RuntimeError(f"pgx {name} has {self.num_actions} actions, move table {self.moves.num_actions}")

    @property
    def move_record_format(self) -> str:
        return "pgn" if self.board_size == 8 else "pgn-gardner"

    @property
    def max_legal_actions(self) -> int:
        """K: 218 on 8×8, the most legal moves of any legal chess position (R6R/3Q4/1Q4Q1/4Q3/2Q4Q/Q4Q2/pp1Q4/kBNN1KB1
        w - - 0 1).  Gardner: 128, a bound from the pieces' reach on 5×5 (king 8; queen 16; rook, bishop and knight 8
        each; five pawns, each at most 16 moves as a promoted queen or 12 as a pawn promoting three ways four times),
        blocking ignored."""
        return 218 if self.board_size == 8 else 128

    @property
    def observation_planes(self) -> ObservationPlanes:
        """Eight positions of history come first, as binary planes: pgx's 14 a position (the mover's and the
        opponent's six pieces, two repetition planes), lc0's 13 (twelve pieces, one repetition plane).  Then planes
        constant over the board: pgx's side to move, total move count / 512, four castling rights (8×8 only) and
        half-move clock / 100; lc0's four castling rights, Black to move, the half-move clock, zeros and ones
        (:func:`zerolab.games.lc0_observation.lc0_observation`)."""
        if self.observation == "lc0":
            history, binary_scalars = 104, (True, True, True, True, True, False, True, True)
        elif self.board_size == 8:
            history, binary_scalars = 112, (True, False, True, True, True, True, False)
        else:
            history, binary_scalars = 112, (True, False, False)
        if history + len(binary_scalars) != self.observation_shape[-1]:
            raise RuntimeError(f"{self!r}: {self.observation_shape[-1]} observation planes, expected "
                               f"{history + len(binary_scalars)}")
        return ObservationPlanes(constant=(False,) * history + (True,) * len(binary_scalars),
                                 binary=(True,) * history + binary_scalars)

    def action_to_text(self, action: int, state: pgx.State) -> str:
        return self.action_to_uci(action, state)

    def text_to_action(self, text: str, state: pgx.State) -> int:
        return self.uci_to_action(text, state)

    @property
    def start_fen(self) -> str:
        return chess.STARTING_FEN if self.board_size == 8 else GARDNER_START_FEN

    # --- pgx internals, read in one place -------------------------------------------------------------------
    def color(self, state: pgx.State) -> int:
        """Side to move of an unbatched state: 0 white, 1 black."""
        return int(state._x.color if self.board_size == 8 else state._turn)

    def mover_board(self, state: pgx.State) -> np.ndarray:
        """[n*n] piece codes in the mover's frame (+ own, − opponent; 1 pawn … 6 king)."""
        return np.asarray(state._x.board if self.board_size == 8 else state._board)

    def color_batch(self, states: pgx.State) -> jax.Array:
        """[B] side to move of a batch of states, inside or outside jit."""
        return states._x.color if self.board_size == 8 else states._turn

    def mover_board_batch(self, states: pgx.State) -> jax.Array:
        """[B, n*n] piece codes in the mover's frame, inside or outside jit."""
        return states._x.board if self.board_size == 8 else states._board

    def history_placements(self, state: pgx.State) -> list[str | None]:
        """FEN placements of an unbatched state's position and the (up to 7) positions before it, newest first.

        They are the boards of pgx's observation history; None where the history holds no position (the game
        started fewer plies ago, or from a FEN).
        """
        history = np.asarray(state._x.board_history if self.board_size == 8 else state._board_history)
        black = self.color(state) == 1
        return [_placement(board, self.board_size, black) if board.any() else None for board in history]

    # --- FEN ------------------------------------------------------------------------------------------------
    def validate_fen(self, fen: str) -> str:
        return validate_chess_fen(fen) if self.board_size == 8 else validate_gardner_fen(fen)

    def from_fen(self, fen: str) -> pgx.State:
        """An unbatched pgx state for ``fen``; raises :class:`InvalidPositionError` naming the FEN."""
        validated = self.validate_fen(fen.strip())
        if self.observation == "lc0":
            # lc0 keeps a FEN's en-passant square even when no capture is legal (it undoes that double push to fill
            # the missing history), as pgx keeps it after every double push: do not drop it here.
            return compiled_lc0_observation()(chess_state_from_fen(chess.Board(validated.split()[0] + " " + " ".join(
                fen.split()[1:])).fen(en_passant="fen")))
        return chess_state_from_fen(validated) if self.board_size == 8 else gardner_state_from_fen(validated)

    @property
    def identity(self) -> tuple:
        return (*super().identity, self.observation)

    def __repr__(self) -> str:
        text = super().__repr__()
        return text if self.observation == "pgx" else text[:-1] + f", observation={self.observation!r})"

    def to_fen(self, state: pgx.State) -> str:
        if self.board_size == 8:
            return pgx_chess_fen.to_fen(state)
        return pgx_gardner._to_fen(state)

    # --- moves ------------------------------------------------------------------------------------------------
    def action_to_uci(self, action: int, state: pgx.State) -> str:
        """UCI of pgx ``action`` in ``state`` (queen promotions get their ``q``)."""
        action = int(action)
        if not 0 <= action < self.num_actions or self.moves.to_square[action] < 0:
            raise ValueError(f"action {action} is not a move on a {self.board_size}x{self.board_size} board")
        color = self.color(state)
        origin, destination = self.moves.from_square[action], self.moves.to_square[action]
        uci = square_name(origin, self.board_size, color) + square_name(destination, self.board_size, color)
        if self.moves.underpromotion[action] >= 0:
            return uci + PROMOTION_PIECES[self.moves.underpromotion[action]]
        is_pawn = self.mover_board(state)[origin] == 1
        if is_pawn and destination % self.board_size == self.board_size - 1:
            uci += "q"
        return uci

    def uci_to_action(self, uci: str, state: pgx.State) -> int:
        """pgx action id of the UCI move ``uci`` in ``state``; raises ``ValueError`` for malformed or illegal moves."""
        match = re.fullmatch(r"([a-h][1-8])([a-h][1-8])([qrbn]?)", uci.strip())
        if not match:
            raise ValueError(f"malformed UCI move {uci!r}")
        color = self.color(state)
        origin = parse_square(match.group(1), self.board_size, color)
        destination = parse_square(match.group(2), self.board_size, color)
        promotion = match.group(3)
        if promotion in ("r", "b", "n"):
            file_step = destination // self.board_size - origin // self.board_size
            if file_step not in (-1, 0, 1):
                raise ValueError(f"illegal move {uci!r}: not a pawn step")
            direction = {0: 0, 1: 1, -1: 2}[file_step]
            action = origin * self.moves.planes + PROMOTION_PIECES.index(promotion) * 3 + direction
        else:
            action = int(self.moves.action_of_move[origin, destination])
        if action < 0 or not np.asarray(state.legal_action_mask)[action]:
            raise ValueError(f"illegal move {uci!r} in {self.to_fen(state)}")
        if promotion == "q" and self.action_to_uci(action, state) != uci.strip():
            raise ValueError(f"illegal move {uci!r}: not a promotion")
        if not promotion and self.action_to_uci(action, state) != uci.strip():
            raise ValueError(f"illegal move {uci!r}: a promotion needs its piece letter")
        return action

    def legal_moves_uci(self, state: pgx.State) -> list[str]:
        """Sorted UCI moves of the legal actions of ``state``."""
        actions = np.flatnonzero(np.asarray(state.legal_action_mask))
        return sorted(self.action_to_uci(a, state) for a in actions)


__all__ = ["ChessGame", "MoveTable", "move_table", "validate_chess_fen", "validate_gardner_fen"]
