"""External UCI engines (Stockfish, Fairy-Stockfish, …) driven through python-chess, for chess and Gardner chess.

:class:`UCIEngine` runs one engine process: ``play(board)`` / ``choose_move(fen, moves)`` and ``analyse``.  It is
started from an :class:`~zerolab.engines.uci_spec.EngineSpec` (an engine plus its strength and search limit, one
string such as ``stockfish:elo=1350``; :mod:`zerolab.engines.uci_spec`) and finds the executable with
:func:`zerolab.engines.executables.find_engine`.

**The engine sees the game's moves.**  A position is a board with its move stack (``chess.Board``, or
:class:`zerolab.games.board.GardnerBoard` for 5×5), or a root FEN plus UCI moves; python-chess sends it as
``position startpos moves ...`` or ``position fen ROOT moves ...``, so the engine knows the game's repetitions.
:class:`zerolab.play.engine_agents.EngineAgent` rebuilds those moves from the arena's pgx states (:mod:`zerolab.games.board`).

**Safety**: every position is validated before anything reaches the engine — Stockfish crashes (segfault) on
malformed FENs.  FENs are checked by :mod:`zerolab.games.fen`, moves by python-chess (8×8) or pgx (5×5).  Every call has a
time limit (the search limit plus ``EngineSpec.timeout``); a hung, crashed or misbehaving engine raises
:class:`EngineError` naming the engine and the position, after which the engine must be ``restart()``-ed.

Gardner chess (5×5) with python-chess: ``chess.Board`` cannot hold a 5×5 position, but python-chess's UCI
protocol only needs a few board methods, which :class:`zerolab.games.board.GardnerBoard` provides with pgx as the
referee (no second rule set); its ``uci_variant = "gardner"`` makes python-chess send
``setoption name UCI_Variant value gardner`` by itself.  Gardner positions import JAX and pgx (on first use);
8×8 chess does not.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

import chess
import chess.engine

from zerolab.engines.executables import find_engine
from zerolab.engines.uci_spec import EngineSpec, check_options
from zerolab.games.board import Board, GameOverError, GardnerBoard, board_with_moves, describe_position
from zerolab.games.fen import InvalidPositionError

GAMES = ("chess", "gardner_chess")

T = TypeVar("T")


class EngineError(chess.engine.EngineError):
    """An engine failed (crashed, hung, refused a command, sent an illegal move); the message names the engine and,
    for searches, the position. Also a ``chess.engine.EngineError``, so code catching that catches this too."""


# --- running an engine -------------------------------------------------------------------------------------------


class _TimedSimpleEngine(chess.engine.SimpleEngine):
    """SimpleEngine whose searches always have a time limit.

    python-chess puts a time limit on ``play``/``analyse`` only when the search limit has a time; a node or depth
    search of a hung engine would block forever.  Here every search gets ``timeout`` seconds on top of its time.
    """

    def _timeout_for(self, limit: chess.engine.Limit | None) -> float | None:
        if self.timeout is None:
            return None
        if limit is None:
            return self.timeout
        clock = max(limit.white_clock or 0.0, limit.black_clock or 0.0)
        return self.timeout + (limit.time or 0.0) + clock


def board_for(game: str, fen: str, moves: Sequence[str] = ()) -> Board:
    """A validated board of ``game`` at ``fen`` with ``moves`` (UCI) pushed; raises ``InvalidPositionError``.

    The FEN is checked by :mod:`zerolab.games.fen`; on 8×8 python-chess checks the moves, on 5×5 pgx does
    (:class:`zerolab.games.board.GardnerBoard`).
    """
    if game not in GAMES:
        raise ValueError(f"game must be one of {', '.join(GAMES)}, got {game!r}")
    if not isinstance(fen, str):
        raise InvalidPositionError(f"a FEN must be a string, got {fen!r}")
    return board_with_moves(game, fen.strip(), moves)


def checked_board(game: str, board: Board) -> Board:
    """``board`` (with its move stack) after checking it is a position of ``game`` an engine may be sent.

    A ``chess.Board`` is rebuilt from its root FEN and moves, since python-chess lets invalid positions and
    unchecked moves into a board; a :class:`GardnerBoard`'s moves were checked by pgx when pushed.
    """
    if game == "gardner_chess":
        if not isinstance(board, GardnerBoard):
            raise InvalidPositionError(f"a Gardner chess engine needs a GardnerBoard, got {type(board).__name__}")
        return board
    if not isinstance(board, chess.Board) or type(board).uci_variant != "chess":
        raise InvalidPositionError(f"a chess engine needs a chess.Board of standard chess, got {board!r}")
    return board_for(game, board.root().fen(), [move.uci() for move in board.move_stack])


class PonderAfterGameOverFilter(logging.Filter):
    """Drops python-chess's "Engine sent invalid ponder move" report (with its traceback) when the ponder move was
    refused only because pgx ended the game with the engine's move (:class:`zerolab.games.board.GameOverError`): zerolab
    never ponders and the move played stands.  Other invalid ponder moves are still reported."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, GameOverError)


#: Installed on python-chess's ``chess.engine`` logger by :meth:`UCIEngine.open` (once: ``addFilter`` keeps one copy).
PONDER_AFTER_GAME_OVER = PonderAfterGameOverFilter()


class UCIEngine:
    """One external UCI engine process, for ``chess`` or ``gardner_chess``.

    Use as a context manager (``with UCIEngine("stockfish:elo=1350") as engine: engine.choose_move(fen)``) or call
    :meth:`open` (else the first search starts the process) and :meth:`close`.  After an :class:`EngineError` the
    engine is considered broken until :meth:`restart`.
    """

    def __init__(self, spec: EngineSpec | str, game: str = "chess", *, variant: str | None = None):
        """``game`` is ``chess`` or ``gardner_chess``; ``variant`` may name it the UCI way instead (``gardner``)."""
        if variant is not None:
            by_variant = {"chess": "chess", "gardner": "gardner_chess"}
            if variant not in by_variant:
                raise ValueError(f"UCIEngine variant must be 'chess' or 'gardner', got {variant!r}")
            if game != "chess" and game != by_variant[variant]:
                raise ValueError(f"UCIEngine got game={game!r} but variant={variant!r}")
            game = by_variant[variant]
        if game not in GAMES:
            raise ValueError(f"UCIEngine game must be one of {', '.join(GAMES)}, got {game!r}")
        self.spec = EngineSpec.parse(spec)
        self.game = game
        self.path: str | None = None
        self._engine: chess.engine.SimpleEngine | None = None
        self._failure: str | None = None
        self._game_token: object = object()

    # --- life cycle ----------------------------------------------------------------------------------------------
    def open(self) -> UCIEngine:
        """Start the engine and apply the spec's options; raises EngineNotFoundError, EngineSpecError, EngineError."""
        if self._engine is not None:
            return self
        self.path = find_engine(self.spec.engine)
        logging.getLogger("chess.engine").addFilter(PONDER_AFTER_GAME_OVER)
        try:
            engine = _TimedSimpleEngine.popen_uci(self.path, timeout=self.spec.timeout)
        except (OSError, chess.engine.EngineError, TimeoutError) as error:
            raise EngineError(f"could not start engine {self.path}: {type(error).__name__}: {error}") from error
        try:
            name = engine.id.get("name", self.spec.name)
            options = engine.options
            if self.game == "gardner_chess":
                variant = options.get("UCI_Variant")
                if variant is None or "gardner" not in (variant.var or []):
                    raise EngineError(
                        f"{name} ({self.path}) cannot play Gardner chess: it has no UCI_Variant 'gardner' "
                        "(use fairy-stockfish)"
                    )
            engine.configure(check_options(self.spec, options, name))
        except BaseException as error:
            engine.close()
            if isinstance(error, (TimeoutError, chess.engine.EngineTerminatedError)):
                raise EngineError(f"engine {self.path} failed while being configured: {error}") from error
            raise
        self._engine, self._failure = engine, None
        self._game_token = object()
        return self

    def close(self) -> None:
        """Stop the engine process (politely with ``quit`` unless it has failed; then killed)."""
        engine, self._engine = self._engine, None
        if engine is None:
            return
        try:
            if self._failure is None:
                engine.quit()
        except Exception:  # the process is going away either way
            pass
        finally:
            engine.close()

    def restart(self) -> UCIEngine:
        """Close (killing a hung or dead engine) and open a fresh process with the same spec."""
        self._failure = "restarting"
        self.close()
        self._failure = None
        return self.open()

    def __enter__(self) -> UCIEngine:
        return self.open()

    def __exit__(self, *exception_info: object) -> None:
        self.close()

    @property
    def is_open(self) -> bool:
        return self._engine is not None

    @property
    def name(self) -> str:
        """The engine's ``id name`` when running, else the spec's engine name."""
        if self._engine is not None and self._failure is None:
            try:
                return self._engine.id.get("name", self.spec.name)
            except chess.engine.EngineError:
                pass
        return self.spec.name

    def new_game(self) -> None:
        """Tell the engine a new game starts (``ucinewgame`` before the next search: clears its hash)."""
        self._game_token = object()

    # --- searching -----------------------------------------------------------------------------------------------
    def position(self, fen: str, moves: Sequence[str] = ()) -> Board:
        """The validated board this engine would be sent for ``fen`` and ``moves`` (see :func:`board_for`)."""
        return board_for(self.game, fen, moves)

    def play(self, board: Board, limit: chess.engine.Limit | None = None) -> str:
        """The engine's move (UCI) in ``board``, which is sent with its move stack (``position ... moves ...``).

        Raises:
          InvalidPositionError: the board is not a valid position of this engine's game (nothing is sent).
          ValueError: the position has no legal move.
          EngineError: the engine crashed, hung, or answered with an illegal move.
        """
        board = checked_board(self.game, board)
        if not any(board.legal_moves):
            raise ValueError(f"no legal move in {describe_position(board)}: the game is over")
        limit = limit or self.spec.limit()
        result = self._call(lambda engine: engine.play(board, limit, game=self._game_token), board)
        if result.move is None:
            raise ValueError(f"{self.name} reports no legal move in {describe_position(board)}: the game is over")
        return result.move.uci()

    def choose_move(self, fen: str, moves: Sequence[str] = (), limit: chess.engine.Limit | None = None) -> str:
        """The engine's move (UCI) in ``fen`` after ``moves``, searched with ``limit`` (default: the spec's).

        The engine is sent ``position fen FEN moves ...`` (``startpos`` for the standard start); raises as
        :meth:`play`, and InvalidPositionError for a malformed FEN or an unplayable move.
        """
        return self.play(self.position(fen, moves), limit)

    def analyse(
        self,
        fen: str | Board,
        limit: chess.engine.Limit | None = None,
        multipv: int | None = None,
        moves: Sequence[str] = (),
        info: chess.engine.Info = chess.engine.INFO_ALL,
    ) -> chess.engine.InfoDict | list[chess.engine.InfoDict]:
        """python-chess analysis info (``score``, ``pv``, ``nodes``, ``wdl`` with ``option.UCI_ShowWDL=true`` …).

        ``fen`` is a FEN (then ``moves`` are played from it) or a board with its move stack.  With ``multipv`` a list
        of info dicts, best first; without, one dict. ``score`` is a ``PovScore``:
        ``info["score"].white().wdl(model="sf15.1")`` gives win/draw/loss expectations.
        """
        if isinstance(fen, str):
            board = self.position(fen, moves)
        else:
            board = checked_board(self.game, fen)
        limit = limit or self.spec.limit()
        return self._call(
            lambda engine: engine.analyse(board, limit, multipv=multipv, game=self._game_token, info=info), board
        )

    def _call(self, action: Callable[[chess.engine.SimpleEngine], T], board: Board) -> T:
        """Run ``action`` on the engine, turning every failure into :class:`EngineError` naming the position."""
        if self._failure is not None:
            raise EngineError(f"{self.name} failed earlier ({self._failure}); call restart() before using it again")
        if self._engine is None:
            self.open()  # started on first use; close() (or a 'with' block) stops it
        where = f"{self.name} ({self.path}) in position {describe_position(board)}"
        try:
            return action(self._engine)
        except TimeoutError:
            self._failure = "it did not answer in time"
            raise EngineError(f"{where}: no answer within the search limit plus {self.spec.timeout:g} s") from None
        except chess.engine.EngineTerminatedError as error:
            self._failure = f"it terminated: {error}"
            raise EngineError(f"{where}: the engine process terminated ({error})") from None
        except chess.engine.EngineError as error:
            self._failure = f"it sent a bad answer: {error}"
            raise EngineError(f"{where}: {error}") from None

    def __repr__(self) -> str:
        state = "running" if self._engine is not None else "stopped"
        return f"UCIEngine('{self.spec}', game={self.game!r}, {state})"


__all__ = ["EngineError", "UCIEngine", "board_for", "checked_board"]
