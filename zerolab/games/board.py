"""The board bridge: python-chess boards with their move stack ↔ pgx states with their history.

pgx's chess observations carry the last 8 positions (and repetition counts), python-chess boards carry the game's
move stack, and UCI engines want ``position startpos|fen ROOT moves ...``.  This module converts between them, for
chess (8×8, ``chess.Board``) and Gardner chess (5×5, :class:`GardnerBoard`), with pgx as the referee:

* :func:`state_from_board` / :class:`StateTracker` (python-chess → pgx): the root FEN read by
  ``ChessGame.from_fen`` (whose history is empty: no default start position behind a FEN) and the move stack stepped
  by pgx, so the network sees pgx's own history planes and repetition counts, exactly as in self-play.  When pgx
  cannot continue that way — it considers the game over (a threefold repetition, which python-chess only makes
  claimable; pgx's step limit) or rejects a move — the state is rebuilt from a later position: the last plies
  stepped from the FEN a few plies back (up to 7), which keeps as much history as pgx accepts.
* :func:`continue_board` / :class:`GameBoards` (pgx → python-chess): the board of a pgx state, continuing a known
  board of the same game by the moves played since.  Those moves are found through the state's own history
  (``ChessGame.history_placements``): at each ply the one legal move leading to the next recorded placement.  So an
  agent that sees only pgx states (the arena) still hands engines the game's moves, up to 7 plies between two of its
  calls (a team member that skipped turns included); a game it cannot connect starts a new board at the state's FEN.
  A game that its first call meets after the start is rebuilt from the standard start position when it began there;
  a game from another FEN then starts at the state's own FEN (pgx keeps only the placements of earlier positions,
  not their castling rights, en passant square or counters, so an earlier FEN cannot be rebuilt exactly).
* :class:`GardnerBoard`: a 5×5 position and move stack with the few ``chess.Board`` methods python-chess's UCI
  protocol uses (see :mod:`zerolab.engines.uci_client`), whose moves are checked and played by pgx: no second rule set.

Everything here runs on the host, one position at a time (engine and GUI I/O), not on the jitted self-play path.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Union

import chess
import numpy as np

from zerolab.games.fen import BOARD_SIZES, GARDNER_START_FEN, InvalidPositionError, position_key, validate_fen

if TYPE_CHECKING:
    import pgx

    from zerolab.games import ChessGame

logger = logging.getLogger(__name__)

HISTORY_PLIES = 7  # previous positions in pgx's observation (8 boards: the current one and 7 before it)


@functools.cache
def _game(name: str) -> ChessGame:
    from zerolab.games import ChessGame

    return ChessGame(name)



def board_ply(board: Board) -> int:
    """Half-moves since the game's first move as the FEN counters say (``chess.Board.ply`` for both boards)."""
    return board.ply()


# --- Gardner chess --------------------------------------------------------------------------------------------------


class GameOverError(ValueError):
    """A move asked of a board whose game pgx has already ended.  pgx ends some games where an engine plays on
    (Gardner: insufficient material, its repetition and 50-move counts), so an engine may still name a move there."""


class GardnerBoard:
    """A Gardner chess (5×5) position with its move stack, refereed by pgx.

    Provides the part of ``chess.Board`` that python-chess's UCI protocol uses (``uci_variant``, ``chess960``,
    ``move_stack``, ``root``, ``fen``, ``copy``, ``turn``, ``parse_uci``, ``push``, ``push_uci``, ``pop``), plus
    ``legal_moves``, ``ply``, ``board_fen``, ``is_game_over`` and the pgx ``state``.  Its class attribute
    ``uci_variant = "gardner"`` makes python-chess send ``setoption name UCI_Variant value gardner`` by itself.
    Squares are python-chess squares on files a–e and ranks 1–5, so ``chess.Move.from_uci`` applies unchanged.
    """

    uci_variant = "gardner"
    chess960 = False

    def __init__(self, fen: str = GARDNER_START_FEN):
        self.game = _game("gardner_chess")
        self._states = [self.game.from_fen(fen)]  # raises InvalidPositionError naming the FEN
        self.move_stack: list[chess.Move] = []

    @classmethod
    def from_state(cls, state: pgx.State) -> GardnerBoard:
        """A board at an unbatched pgx Gardner state, without a move stack."""
        board = cls.__new__(cls)
        board.game, board._states, board.move_stack = _game("gardner_chess"), [state], []
        return board

    @property
    def state(self) -> pgx.State:
        """The unbatched pgx state of the current position (with pgx's history of this board's moves)."""
        return self._states[-1]

    @property
    def turn(self) -> bool:
        """``chess.WHITE`` or ``chess.BLACK``: the side to move."""
        return self.game.color(self.state) == 0

    def fen(self, *, shredder: bool = False, en_passant: str = "legal", promoted: bool | None = None) -> str:
        """The 5×5 FEN of the current position (the keyword arguments exist for python-chess and change nothing)."""
        return self.game.to_fen(self.state)

    def board_fen(self) -> str:
        """The placement field of the FEN."""
        return self.game.history_placements(self.state)[0]

    def ply(self) -> int:
        fields = self.fen().split()
        return 2 * (int(fields[5]) - 1) + (fields[1] == "b")

    @property
    def legal_moves(self) -> list[chess.Move]:
        """The moves pgx allows here (none once pgx has ended the game)."""
        if bool(self.state.terminated):
            return []
        return [chess.Move.from_uci(uci) for uci in self.game.legal_moves_uci(self.state)]

    def is_game_over(self, *, claim_draw: bool = False) -> bool:
        return bool(self.state.terminated)

    def root(self) -> GardnerBoard:
        """The position before the first move of the stack, without a stack."""
        return GardnerBoard.from_state(self._states[0])

    def copy(self, *, stack: bool | int = True) -> GardnerBoard:
        """A copy; ``stack=False`` drops the move stack (the copy starts at the current position)."""
        if stack is True:
            board = GardnerBoard.from_state(self._states[0])
            board._states, board.move_stack = list(self._states), list(self.move_stack)
            return board
        return GardnerBoard.from_state(self.state)

    def parse_uci(self, uci: str) -> chess.Move:
        """The move ``uci`` (``a2a3``, ``b4b5q``) after pgx has checked it is legal here; raises ValueError."""
        try:
            move = chess.Move.from_uci(uci)
        except chess.InvalidMoveError:
            raise ValueError(f"malformed UCI move {uci!r} in Gardner position {self.fen()}") from None
        self._action(move)
        return move

    def _action(self, move: chess.Move) -> int:
        if bool(self.state.terminated):
            raise GameOverError(f"move {move.uci()!r}: the game is over in Gardner position {self.fen()} "
                                "(pgx's rules)")
        try:
            return self.game.uci_to_action(move.uci(), self.state)
        except ValueError as error:
            raise ValueError(f"move {move.uci()!r} is not legal in Gardner position {self.fen()} under pgx's rules "
                             f"({error})") from None

    def push(self, move: chess.Move) -> None:
        action = self._action(move)
        self._states.append(self.game.jitted_step(self.state, np.int32(action)))
        self.move_stack.append(move)

    def push_uci(self, uci: str) -> chess.Move:
        move = self.parse_uci(uci)
        self.push(move)
        return move

    def pop(self) -> chess.Move:
        if not self.move_stack:
            raise IndexError("pop from a Gardner board with an empty move stack")
        self._states.pop()
        return self.move_stack.pop()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GardnerBoard) and self.fen() == other.fen()

    def __repr__(self) -> str:
        return f"GardnerBoard({self.fen()!r}, moves={[move.uci() for move in self.move_stack]})"


Board = Union[chess.Board, GardnerBoard]


def rules_name(game: ChessGame) -> str:
    """``chess`` or ``gardner_chess``: the rules a chess game is played by, whatever its observation (``chess:lc0``
    observes 8×8 chess in lc0's planes)."""
    return "chess" if game.board_size == 8 else "gardner_chess"


def new_board(game_name: str, fen: str | None = None) -> Board:
    """A board of ``game_name`` (``chess`` or ``gardner_chess``) at ``fen`` (default: the start), validated."""
    if game_name not in BOARD_SIZES:
        raise ValueError(f"boards exist for {', '.join(BOARD_SIZES)}, not {game_name!r}")
    if game_name == "gardner_chess":
        return GardnerBoard(fen or GARDNER_START_FEN)
    if fen is None:
        return chess.Board()
    return chess.Board(validate_fen(game_name, fen))


def board_with_moves(game_name: str, fen: str | None, moves: Sequence[str] = ()) -> Board:
    """A validated board of ``game_name`` at ``fen`` with ``moves`` (UCI) pushed; raises InvalidPositionError.

    On 8×8 python-chess checks the moves, on 5×5 pgx does.
    """
    board = new_board(game_name, fen)
    for index, move in enumerate(moves):
        try:
            board.push(board.parse_uci(move))
        except ValueError as error:
            raise InvalidPositionError(
                f"move {index + 1} ({move!r}) cannot be played after {fen or 'the start position'!r} and "
                f"{list(moves[:index])}: {error}"
            ) from None
    return board


def describe_position(board: Board) -> str:
    """``fen <root fen> [moves ...]``: the position as an engine is sent it."""
    moves = " ".join(move.uci() for move in board.move_stack)
    return f"fen {board.root().fen()}" + (f" moves {moves}" if moves else "")


# --- python-chess → pgx ---------------------------------------------------------------------------------------------


class StateTracker:
    """pgx states of the boards of one game after another, stepping only the new moves (see the module docstring).

    ``state(board)`` remembers the root and moves it last converted, so a GUI sending ``position startpos moves ...``
    with one or two more moves each time costs one or two pgx steps.
    """

    def __init__(self, game: ChessGame):
        self.game = game
        self._step = game.jitted_step
        self._root_fen: str | None = None
        self._moves: tuple[str, ...] = ()
        self._state: pgx.State | None = None
        self.rebuilds = 0  # positions pgx could not reach by stepping from the root (for tests and logs)

    def reset(self) -> None:
        self._root_fen, self._moves, self._state = None, (), None

    def state(self, board: Board) -> pgx.State:
        """The unbatched pgx state of ``board``, with its game's history; ``board`` must be of this game."""
        if isinstance(board, GardnerBoard):
            if self.game.board_size != 5:
                raise ValueError(f"a Gardner board is not a position of {self.game.name}")
            return board.state
        if self.game.board_size != 8:
            raise ValueError(f"a chess.Board is not a position of {self.game.name}")
        root_fen = board.root().fen()
        moves = tuple(move.uci() for move in board.move_stack)
        try:
            state = self._continue(root_fen, moves)
        except ValueError as error:
            logger.info("pgx cannot step the move list (%s); rebuilding from a later position", error)
            state = None
        if state is None or bool(state.terminated):
            state = self._rebuild(board)
        self._root_fen, self._moves, self._state = root_fen, moves, state
        return state

    def _continue(self, root_fen: str, moves: tuple[str, ...]) -> pgx.State:
        known = self._moves
        if self._state is not None and root_fen == self._root_fen and moves[: len(known)] == known:
            state, remaining = self._state, moves[len(known):]
        else:
            state, remaining = self.game.from_fen(root_fen), moves
        return self._play(state, remaining)

    def _play(self, state: pgx.State, moves: Sequence[str]) -> pgx.State:
        for move in moves:
            if bool(state.terminated):
                return state
            state = self._step(state, np.int32(self.game.uci_to_action(move, state)))
        return state

    def _rebuild(self, board: chess.Board) -> pgx.State:
        """The last plies stepped from an earlier FEN: as many (up to 7) as keep pgx's game going."""
        self.rebuilds += 1
        for plies in range(min(HISTORY_PLIES, len(board.move_stack)), -1, -1):
            earlier = board.copy()
            recent = [earlier.pop().uci() for _ in range(plies)][::-1]
            try:
                state = self._play(self.game.from_fen(earlier.fen()), recent)
            except ValueError:
                continue
            if not bool(state.terminated):
                return state
        return self.game.from_fen(board.fen())


def state_from_board(game: ChessGame, board: Board) -> pgx.State:
    """The unbatched pgx state of ``board`` with its history (one-off; :class:`StateTracker` for a game's moves)."""
    return StateTracker(game).state(board)


# --- pgx → python-chess ---------------------------------------------------------------------------------------------


def continue_board(game: ChessGame, board: Board, state: pgx.State) -> Board | None:
    """``board`` with the moves that lead to the unbatched ``state`` pushed, or None when none do.

    The moves are found through the state's history (at most :data:`HISTORY_PLIES` plies after ``board``): at each
    ply the legal move whose resulting placement is the next one in the history.  ``board`` is changed in place.
    """
    target = game.to_fen(state)
    fields = target.split()
    plies = 2 * (int(fields[5]) - 1) + (fields[1] == "b") - board_ply(board)
    if not 0 <= plies <= HISTORY_PLIES:
        return None
    placements = game.history_placements(state)
    if plies and placements[plies] != board.board_fen():
        return None
    for index in range(plies - 1, -1, -1):
        wanted = placements[index]
        for move in list(board.legal_moves):
            board.push(move)
            if board.board_fen() == wanted:
                break
            board.pop()
        else:
            return None
    return board if position_key(board.fen()) == position_key(target) else None


def board_from_state(game: ChessGame, state: pgx.State, known: Board | None = None) -> Board:
    """The board of the unbatched ``state``: ``known`` (a board of the same game, not changed) continued to it when
    it can be (see :func:`continue_board`), else the game from its start position when the state is one of its
    first plies, else a new board at the state's FEN (no moves)."""
    starts = ([known] if known is not None else []) + [new_board(rules_name(game))]
    for start in starts:
        continued = continue_board(game, start.copy(), state)
        if continued is not None:
            return continued
    if game.board_size == 5:
        return GardnerBoard.from_state(state)
    return chess.Board(game.to_fen(state))


class GameBoards:
    """The boards of the games an agent plays in a batch, one per lane, kept from call to call.

    ``board(lane, state)`` is the lane's board continued to ``state`` (:func:`board_from_state`), so an agent that is
    handed pgx states gives external engines the game's moves.  A board can be continued over at most
    :data:`HISTORY_PLIES` plies (pgx's history); an agent not asked to move for longer (a team member the team's rule
    skips) keeps its boards in step with :meth:`follow` on the positions it sees but does not play.  Call
    :meth:`reset` before new games.
    """

    def __init__(self, game: ChessGame):
        self.game = game
        self._boards: dict[int, Board] = {}

    def reset(self) -> None:
        self._boards.clear()

    def board(self, lane: int, state: pgx.State) -> Board:
        """A copy of ``lane``'s board continued to the unbatched ``state``."""
        board = board_from_state(self.game, state, self._boards.get(lane))
        self._boards[lane] = board
        return board.copy()

    def follow(self, states: pgx.State) -> None:
        """Continue the board of every lane of the batched ``states`` whose game is running (no engine involved)."""
        import jax

        states = jax.device_get(states)
        for lane in np.flatnonzero(~np.asarray(states.terminated)):
            lane = int(lane)
            self._boards[lane] = board_from_state(self.game, jax.tree.map(lambda leaf: leaf[lane], states),
                                                  self._boards.get(lane))


__all__ = [
    "GameOverError",
    "Board",
    "GameBoards",
    "GardnerBoard",
    "HISTORY_PLIES",
    "StateTracker",
    "board_from_state",
    "board_with_moves",
    "continue_board",
    "describe_position",
    "new_board",
    "rules_name",
    "state_from_board",
]
