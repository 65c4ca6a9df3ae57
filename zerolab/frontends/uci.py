"""A UCI front end (engine side) so the project's agents play in ordinary chess tools.

Any callable ``choose_move(board, budget) -> MoveChoice`` becomes a UCI engine that python-chess, cutechess-cli or
lichess-bot can drive (8×8 chess)::

    simulations = UCIOption("Simulations", "spin", 128, 1, 100000)
    server = UCIServer("zerolab-gateau", "zerolab", choose_move, options=[simulations])
    main_loop(server)            # reads sys.stdin, writes sys.stdout

``python -m zerolab.frontends.uci --example random`` runs a built-in example agent (:class:`RandomMover`,
:class:`GreedyMaterialMover`) without JAX, for tests and for checking a tool's set-up.

Protocol handling:

- ``uci`` → ``id name``/``id author``, one ``option`` line per option, ``uciok``; ``isready`` → ``readyok`` at any
  time, also while searching; ``ucinewgame`` resets the position and calls ``on_new_game``;
  ``setoption name N [value V]`` checks the value against the option's type (spin range, check true/false, combo
  choices); ``position startpos|fen F [moves ...]`` is checked with python-chess; ``go``, ``stop``, ``ponderhit``,
  ``quit``, ``debug``.
- The search runs in a worker thread, so ``isready`` and ``stop`` are answered during it.  ``stop`` sets
  ``budget.stop_event``, which a searching callback may poll.  ``go infinite`` searches with the default budget,
  ``go ponder`` with the clocks' allowance for the pondered position (the default without clocks); both hold
  ``bestmove`` until ``stop`` (or ``ponderhit``).  ``quit`` during a search stops it, waits up to 5 s for its
  ``bestmove`` and ends the server.
- ``go searchmoves m1 m2 ...`` restricts the move: a callback's move outside them, and the fallback move, are
  replaced by the first legal one of them; illegal search moves are reported (all illegal: all moves are searched).
- Bad input never stops the server: a malformed or unknown command, a bad option value — each gets one
  ``info string error: ...`` line.  **An invalid ``position``** (bad FEN, unplayable move) leaves the server with
  no position, rather than the previous one, which the GUI no longer means: the next ``go`` answers
  ``info string error: no position to search ...`` and ``bestmove (none)``, until a valid ``position`` or
  ``ucinewgame``.  Every other ``go`` gets exactly one ``bestmove`` with a legal move: if the callback raises or
  returns an illegal move, that is reported in an ``info string`` and the first legal move in UCI order is played
  (``bestmove (none)`` when there is no legal move).
- Before ``bestmove`` the callback's :class:`MoveChoice` becomes one ``info`` line: ``depth``, ``score cp N`` or
  ``score mate N`` (moves to mate, negative when being mated), ``nodes``, ``nps``, ``time`` and the legal prefix of
  its ``pv``.

Time management (:func:`time_for_move`): with a clock the move may take
``remaining / (movestogo or 30) + 0.75 * increment``, at most ``remaining - overhead``, less the ``Move Overhead``
option (50 ms by default) for the transport, and at least 10 ms.  ``movetime`` gives ``movetime - overhead``.  The
result is ``budget.time_budget`` in seconds (None when ``go`` only limits nodes or depth); the callback maps it to
its own effort, e.g. simulations.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TextIO

import chess

from zerolab.games.fen import validate_chess_fen

DEFAULT_MOVES_TO_GO = 30
INCREMENT_SHARE = 0.75
DEFAULT_MOVE_OVERHEAD_MS = 50
MINIMUM_MOVE_TIME = 0.01  # seconds
DEFAULT_MOVE_TIME = 1.0  # seconds, for `go` without limits, `go infinite` and `go ponder`
QUIT_JOIN_TIMEOUT = 5.0  # seconds a running search gets to finish after `quit`
MOVE_OVERHEAD_OPTION = "Move Overhead"

GO_INTEGER_PARAMETERS = {
    "wtime": "white_time",
    "btime": "black_time",
    "winc": "white_increment",
    "binc": "black_increment",
    "movestogo": "moves_to_go",
    "depth": "depth",
    "nodes": "nodes",
    "mate": "mate",
    "movetime": "move_time",
}
GO_MILLISECOND_PARAMETERS = {"wtime", "btime", "winc", "binc", "movetime"}
GO_FLAGS = {"infinite", "ponder"}


# --- what the callback sees and returns ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SearchBudget:
    """What ``go`` asked for, and the time the server allows for this move.

    Times are in seconds (UCI sends milliseconds). ``time_budget`` is the server's per-move allowance (see the module
    docstring), None when the search is limited by nodes, depth or mate only. A callback that searches incrementally
    should stop when :meth:`should_stop` turns true.
    """

    nodes: int | None = None
    depth: int | None = None
    mate: int | None = None
    move_time: float | None = None
    white_time: float | None = None
    black_time: float | None = None
    white_increment: float | None = None
    black_increment: float | None = None
    moves_to_go: int | None = None
    infinite: bool = False
    ponder: bool = False
    search_moves: tuple[str, ...] = ()
    time_budget: float | None = None
    started_at: float = dataclasses.field(default_factory=time.monotonic, compare=False)
    stop_event: threading.Event = dataclasses.field(default_factory=threading.Event, compare=False, repr=False)

    def should_stop(self) -> bool:
        """True once ``stop`` (or ``quit``) arrived, or the time budget is spent."""
        if self.stop_event.is_set():
            return True
        return self.time_budget is not None and self.elapsed() >= self.time_budget

    def elapsed(self) -> float:
        return time.monotonic() - self.started_at

    def time_left(self) -> float | None:
        """Seconds left of ``time_budget`` (None without one)."""
        return None if self.time_budget is None else max(self.time_budget - self.elapsed(), 0.0)


@dataclasses.dataclass(frozen=True)
class MoveChoice:
    """A chosen move and optional search information printed as an ``info`` line before ``bestmove``.

    Attributes:
      move: the move in UCI notation (``e2e4``, ``e7e8q``) or a ``chess.Move``.
      score_centipawns: evaluation from the mover's side, in centipawns.
      mate_in: moves to mate (negative when being mated); printed instead of the centipawn score.
      nodes: nodes (simulations) searched.
      depth: search depth.
      principal_variation: the expected line, starting with ``move``.
    """

    move: str | chess.Move
    score_centipawns: int | None = None
    mate_in: int | None = None
    nodes: int | None = None
    depth: int | None = None
    principal_variation: tuple[str, ...] = ()

    @property
    def uci(self) -> str:
        return self.move.uci() if isinstance(self.move, chess.Move) else str(self.move).strip()


ChooseMove = Callable[[chess.Board, SearchBudget], "MoveChoice | chess.Move | str"]


# --- options -------------------------------------------------------------------------------------------------------

OPTION_TYPES = ("spin", "check", "string", "combo", "button")


@dataclasses.dataclass
class UCIOption:
    """An engine option announced on ``uci`` and set by ``setoption``.

    Attributes:
      name: the option's name (matched case-insensitively, as UCI asks).
      type: ``spin`` (integer in [minimum, maximum]), ``check`` (bool), ``string``, ``combo`` (one of ``choices``)
        or ``button`` (no value; ``on_change`` is called with None).
      default: the starting value.
      minimum, maximum: bounds of a spin.
      choices: values of a combo.
      on_change: called with the new typed value after a successful ``setoption``.
    """

    name: str
    type: str
    default: Any = None
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    on_change: Callable[[Any], None] | None = None

    def __post_init__(self):
        if not self.name or self.name != self.name.strip() or " value " in f" {self.name.lower()} ":
            raise ValueError(
                f"UCI option name {self.name!r} must be non-empty, trimmed and not contain the word 'value'"
            )
        if self.type not in OPTION_TYPES:
            raise ValueError(
                f"UCI option {self.name!r}: type must be one of {', '.join(OPTION_TYPES)}, got {self.type!r}"
            )
        if self.type == "spin" and (self.minimum is None or self.maximum is None or self.minimum > self.maximum):
            raise ValueError(f"spin option {self.name!r} needs minimum <= maximum, got {self.minimum}, {self.maximum}")
        if self.type == "combo" and not self.choices:
            raise ValueError(f"combo option {self.name!r} needs choices")
        self.choices = tuple(self.choices)
        if self.type == "string" and self.default is None:
            self.default = ""
        if self.type != "button":
            text = str(self.default).lower() if isinstance(self.default, bool) else str(self.default)
            self.default = self.parse(text)

    def parse(self, value: str | None) -> Any:
        """The typed value of ``value``; raises ValueError saying what the option expects."""
        if self.type == "button":
            if value:
                raise ValueError(f"option {self.name!r} is a button and takes no value, got {value!r}")
            return None
        if value is None:
            raise ValueError(f"option {self.name!r} needs a value ('setoption name {self.name} value ...')")
        if self.type == "spin":
            try:
                number = int(value)
            except ValueError:
                raise ValueError(f"option {self.name!r} expects an integer, got {value!r}") from None
            if not self.minimum <= number <= self.maximum:
                raise ValueError(
                    f"option {self.name!r} expects an integer from {self.minimum} to {self.maximum}, got {number}"
                )
            return number
        if self.type == "check":
            if value.lower() not in ("true", "false"):
                raise ValueError(f"option {self.name!r} expects true or false, got {value!r}")
            return value.lower() == "true"
        if self.type == "combo":
            for choice in self.choices:
                if choice.lower() == value.lower():
                    return choice
            raise ValueError(f"option {self.name!r} expects one of {', '.join(self.choices)}, got {value!r}")
        return value

    def declaration(self) -> str:
        """The ``option name ... type ...`` line for ``uci``."""
        line = f"option name {self.name} type {self.type}"
        if self.type == "button":
            return line
        if self.type == "check":
            default = str(self.default).lower()
        else:
            default = "<empty>" if self.default == "" else self.default
        line += f" default {default}"
        if self.type == "spin":
            line += f" min {self.minimum} max {self.maximum}"
        if self.type == "combo":
            line += "".join(f" var {choice}" for choice in self.choices)
        return line


# --- parsing commands (pure functions) ----------------------------------------------------------------------------


def parse_position(arguments: Sequence[str]) -> chess.Board:
    """The board of ``position startpos|fen <FEN> [moves ...]`` (arguments after ``position``); raises ValueError."""
    if not arguments:
        raise ValueError("position needs 'startpos' or 'fen <FEN>', then optionally 'moves ...'")
    tokens = list(arguments)
    moves: list[str] = []
    if "moves" in tokens:
        split = tokens.index("moves")
        tokens, moves = tokens[:split], tokens[split + 1 :]
    kind, rest = tokens[0], tokens[1:]
    if kind == "startpos":
        if rest:
            raise ValueError(f"unexpected {' '.join(rest)!r} after 'position startpos'")
        board = chess.Board()
    elif kind == "fen":
        if not rest:
            raise ValueError("'position fen' needs a FEN")
        board = chess.Board(validate_chess_fen(" ".join(rest)))
    else:
        raise ValueError(f"position expects 'startpos' or 'fen', got {kind!r}")
    for index, move in enumerate(moves):
        try:
            board.push(board.parse_uci(move))
        except ValueError as error:
            raise ValueError(f"move {index + 1} ({move!r}) cannot be played in {board.fen()}: {error}") from None
    return board


def parse_go(arguments: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """Fields of :class:`SearchBudget` asked by ``go`` (arguments after ``go``) and a list of problems found.

    Malformed parameters are reported and skipped, so the search still happens with the rest.
    """
    fields: dict[str, Any] = {}
    problems: list[str] = []
    search_moves: list[str] = []
    index = 0
    while index < len(arguments):
        token = arguments[index]
        index += 1
        if token in GO_FLAGS:
            fields[token] = True
        elif token in GO_INTEGER_PARAMETERS:
            if index >= len(arguments):
                problems.append(f"go {token} needs a number")
                continue
            text = arguments[index]
            index += 1
            try:
                value = int(text)
            except ValueError:
                problems.append(f"go {token} expects an integer, got {text!r}; ignored")
                continue
            negative_allowed = token in ("wtime", "btime", "mate")  # a clock may run slightly negative
            if value < 0 and not negative_allowed:
                problems.append(f"go {token} must not be negative, got {value}; ignored")
                continue
            fields[GO_INTEGER_PARAMETERS[token]] = value / 1000.0 if token in GO_MILLISECOND_PARAMETERS else value
        elif token == "searchmoves":
            keywords = GO_INTEGER_PARAMETERS.keys() | GO_FLAGS
            while index < len(arguments) and arguments[index] not in keywords:
                search_moves.append(arguments[index])
                index += 1
        else:
            problems.append(f"unknown go parameter {token!r} ignored")
    if search_moves:
        fields["search_moves"] = tuple(search_moves)
    return fields, problems


def parse_setoption(arguments: Sequence[str]) -> tuple[str, str | None]:
    """``(name, value)`` of ``setoption name <name> [value <value>]`` (arguments after ``setoption``)."""
    if not arguments or arguments[0] != "name" or len(arguments) < 2:
        raise ValueError("setoption expects 'setoption name <name> [value <value>]'")
    tokens = list(arguments[1:])
    if "value" in tokens:
        split = tokens.index("value")
        name, value = " ".join(tokens[:split]), " ".join(tokens[split + 1 :])
        if not name:
            raise ValueError("setoption has no option name before 'value'")
        return name, value
    return " ".join(tokens), None


def time_for_move(
    remaining: float,
    increment: float = 0.0,
    moves_to_go: int | None = None,
    move_overhead: float = DEFAULT_MOVE_OVERHEAD_MS / 1000.0,
) -> float:
    """Seconds to spend on a move with ``remaining`` seconds on the clock (see the module docstring).

    ``remaining / (moves_to_go or 30) + 0.75 * increment``, capped at ``remaining - move_overhead``, minus
    ``move_overhead``, and at least :data:`MINIMUM_MOVE_TIME`.
    """
    moves = moves_to_go if moves_to_go and moves_to_go > 0 else DEFAULT_MOVES_TO_GO
    allowance = remaining / moves + INCREMENT_SHARE * max(increment, 0.0)
    allowance = min(allowance, remaining - move_overhead) - move_overhead
    return max(allowance, MINIMUM_MOVE_TIME)


def plan_budget(
    fields: dict[str, Any],
    turn: chess.Color,
    *,
    move_overhead: float = DEFAULT_MOVE_OVERHEAD_MS / 1000.0,
    default_move_time: float = DEFAULT_MOVE_TIME,
) -> SearchBudget:
    """The :class:`SearchBudget` of parsed ``go`` fields for the side ``turn``, with its ``time_budget``."""
    budgets = []
    if fields.get("move_time") is not None:
        budgets.append(max(fields["move_time"] - move_overhead, MINIMUM_MOVE_TIME))
    remaining = fields.get("white_time" if turn == chess.WHITE else "black_time")
    if remaining is not None:
        increment = fields.get("white_increment" if turn == chess.WHITE else "black_increment") or 0.0
        budgets.append(time_for_move(remaining, increment, fields.get("moves_to_go"), move_overhead))
    limited_otherwise = any(fields.get(key) is not None for key in ("nodes", "depth", "mate"))
    # `go ponder` with clocks searches as if the pondered move were played (the budget the clocks give);
    # `go infinite` and a `go` without limits search the default time.
    if fields.get("infinite") or (not budgets and not limited_otherwise) or (fields.get("ponder") and not budgets):
        budgets.append(default_move_time)
    return SearchBudget(**fields, time_budget=min(budgets) if budgets else None)


def allowed_moves(board: chess.Board, search_moves: Iterable[str] = ()) -> list[chess.Move]:
    """The legal moves of ``board`` in UCI order, only those among ``search_moves`` when some of them are legal."""
    legal = sorted(board.legal_moves, key=lambda move: move.uci())
    wanted = set(search_moves)
    return [move for move in legal if move.uci() in wanted] or legal


def search_move_problems(board: chess.Board, search_moves: Sequence[str]) -> list[str]:
    """What is wrong with ``go searchmoves ...`` in ``board``: each move that is not legal, and none being legal."""
    legal = {move.uci() for move in board.legal_moves}
    problems = [f"go searchmoves: {move!r} is not a legal move in {board.fen()}; ignored"
                for move in search_moves if move not in legal]
    if search_moves and legal and not legal & set(search_moves):
        problems.append("go searchmoves: none of the moves is legal; searching all moves")
    return problems


def fallback_move(board: chess.Board, search_moves: Iterable[str] = ()) -> chess.Move | None:
    """The first legal move in UCI order (among ``search_moves`` when some are legal), or None when none exists."""
    candidates = allowed_moves(board, search_moves)
    return candidates[0] if candidates else None


def info_line(choice: MoveChoice, board: chess.Board, elapsed: float) -> str | None:
    """The ``info ...`` line describing ``choice`` (None when it carries no information); the pv is cut at the first
    move that is not legal."""
    parts = []
    if choice.depth is not None:
        parts.append(f"depth {int(choice.depth)}")
    if choice.mate_in is not None:
        parts.append(f"score mate {int(choice.mate_in)}")
    elif choice.score_centipawns is not None:
        parts.append(f"score cp {int(round(choice.score_centipawns))}")
    if choice.nodes is not None:
        parts.append(f"nodes {int(choice.nodes)}")
        parts.append(f"nps {int(choice.nodes / elapsed) if elapsed > 0 else 0}")
    if not parts and not choice.principal_variation:
        return None
    parts.append(f"time {int(elapsed * 1000)}")
    variation, line_board = [], board.copy()
    for move in choice.principal_variation:
        try:
            line_board.push(line_board.parse_uci(str(move)))
        except ValueError:
            break
        variation.append(str(move))
    if variation:
        parts.append("pv " + " ".join(variation))
    return "info " + " ".join(parts)


# --- the server ------------------------------------------------------------------------------------------------------


class UCIServer:
    """A UCI engine front end around a ``choose_move(board, budget)`` callback (see the module docstring).

    Args:
      name, author: sent as ``id name`` / ``id author``.
      choose_move: the agent. It receives a copy of the position (with the game's move stack) and the
        :class:`SearchBudget`; it returns a :class:`MoveChoice`, a ``chess.Move`` or a UCI string. It runs in a
        worker thread.
      options: engine options; a ``Move Overhead`` spin (milliseconds, used by the time rule) is added unless given.
      default_move_time: seconds for ``go`` without limits, ``go infinite`` and ``go ponder``.
      on_new_game: called on ``ucinewgame`` (e.g. to clear a search tree).
    """

    def __init__(
        self,
        name: str,
        author: str,
        choose_move: ChooseMove,
        options: Sequence[UCIOption] = (),
        *,
        default_move_time: float = DEFAULT_MOVE_TIME,
        on_new_game: Callable[[], None] | None = None,
    ):
        self.name = name
        self.author = author
        self.choose_move = choose_move
        self.default_move_time = default_move_time
        self.on_new_game = on_new_game
        self.options: dict[str, UCIOption] = {}
        for option in options:
            if option.name.lower() in self.options:
                raise ValueError(f"UCI option {option.name!r} is declared twice")
            self.options[option.name.lower()] = option
        if MOVE_OVERHEAD_OPTION.lower() not in self.options:
            self.options[MOVE_OVERHEAD_OPTION.lower()] = UCIOption(
                MOVE_OVERHEAD_OPTION, "spin", DEFAULT_MOVE_OVERHEAD_MS, 0, 5000
            )
        self.option_values: dict[str, Any] = {option.name: option.default for option in self.options.values()}
        self.board: chess.Board | None = chess.Board()
        self.position_error: str | None = None  # why the last `position` was rejected (then board is None)
        self.debug = False
        self._output: TextIO | None = None
        self._output_lock = threading.Lock()
        self._search_thread: threading.Thread | None = None
        self._search_finished = threading.Event()  # set just before a search's bestmove is written
        self._search_finished.set()
        self._stop_event = threading.Event()
        self._release_event = threading.Event()

    # --- running ---------------------------------------------------------------------------------------------------
    def run(self, input_stream: TextIO, output_stream: TextIO) -> None:
        """Answer commands from ``input_stream`` until ``quit`` or end of input."""
        self._output = output_stream
        try:
            while True:
                line = input_stream.readline()
                if not line:
                    break
                try:
                    keep_going = self.handle(line)
                except Exception as error:  # a bug in a handler must not stop the engine
                    self.send_error(f"internal error on {line.strip()!r}: {type(error).__name__}: {error}")
                    keep_going = True
                if not keep_going:
                    break
        finally:
            self._end_search(QUIT_JOIN_TIMEOUT)

    def handle(self, line: str) -> bool:
        """Act on one command line; False when the server should stop (``quit``)."""
        tokens = line.split()
        if not tokens:
            return True
        command, arguments = tokens[0], tokens[1:]
        handler = {
            "uci": self._uci,
            "isready": self._isready,
            "ucinewgame": self._ucinewgame,
            "setoption": self._setoption,
            "position": self._position,
            "go": self._go,
            "stop": self._stop,
            "ponderhit": self._ponderhit,
            "debug": self._debug,
            "register": lambda arguments: None,
        }.get(command)
        if command == "quit":
            return False
        if handler is None:
            self.send_error(f"unknown command {command!r}; expected one of uci, isready, ucinewgame, setoption, "
                            "position, go, stop, ponderhit, debug, quit")
            return True
        handler(arguments)
        return True

    def send(self, line: str) -> None:
        """Write one line and flush (thread-safe; a closed output is ignored)."""
        with self._output_lock:
            if self._output is None:
                return
            try:
                self._output.write(line + "\n")
                self._output.flush()
            except (OSError, ValueError):  # the GUI went away
                self._output = None

    def send_error(self, message: str) -> None:
        self.send("info string error: " + " ".join(str(message).split()))

    @property
    def searching(self) -> bool:
        """True from ``go`` until the search's ``bestmove`` is about to be written."""
        return not self._search_finished.is_set()

    # --- commands --------------------------------------------------------------------------------------------------
    def _uci(self, arguments: Sequence[str]) -> None:
        self.send(f"id name {self.name}")
        self.send(f"id author {self.author}")
        for option in self.options.values():
            self.send(option.declaration())
        self.send("uciok")

    def _isready(self, arguments: Sequence[str]) -> None:
        self.send("readyok")

    def _debug(self, arguments: Sequence[str]) -> None:
        if arguments not in (["on"], ["off"]):
            self.send_error(f"debug expects 'on' or 'off', got {' '.join(arguments)!r}")
            return
        self.debug = arguments == ["on"]

    def _ucinewgame(self, arguments: Sequence[str]) -> None:
        self.board, self.position_error = chess.Board(), None
        if self.on_new_game is not None:
            try:
                self.on_new_game()
            except Exception as error:
                self.send_error(f"new game hook failed: {type(error).__name__}: {error}")

    def _setoption(self, arguments: Sequence[str]) -> None:
        try:
            name, text = parse_setoption(arguments)
        except ValueError as error:
            self.send_error(str(error))
            return
        option = self.options.get(name.lower())
        if option is None:
            self.send_error(f"unknown option {name!r}; options: {', '.join(o.name for o in self.options.values())}")
            return
        try:
            value = option.parse(text)
        except ValueError as error:
            self.send_error(str(error))
            return
        if option.type != "button":
            self.option_values[option.name] = value
        if option.on_change is not None:
            try:
                option.on_change(value)
            except Exception as error:
                self.send_error(f"setting option {option.name!r} failed: {type(error).__name__}: {error}")

    def _position(self, arguments: Sequence[str]) -> None:
        try:
            self.board, self.position_error = parse_position(arguments), None
        except ValueError as error:
            # The GUI meant another position: searching the previous one would answer for the wrong board.
            self.board, self.position_error = None, str(error)
            self.send_error(f"{error}; no position until the next valid 'position' command")

    def _go(self, arguments: Sequence[str]) -> None:
        if self.searching:  # a protocol error by the GUI: finish that search (it answers its bestmove) first
            self.send_error("go while a search is running; stopping that search first")
            self._end_search(timeout=None)
        if self.board is None:
            self.send_error(f"no position to search: the last 'position' command was rejected ({self.position_error}); "
                            "send a valid 'position' before 'go'")
            self.send("bestmove (none)")
            return
        fields, problems = parse_go(arguments)
        problems += search_move_problems(self.board, fields.get("search_moves", ()))
        for problem in problems:
            self.send_error(problem)
        overhead = self.option_values.get(MOVE_OVERHEAD_OPTION, DEFAULT_MOVE_OVERHEAD_MS) / 1000.0
        self._stop_event = threading.Event()
        self._release_event = threading.Event()
        self._search_finished = threading.Event()
        budget = plan_budget(
            fields, self.board.turn, move_overhead=overhead, default_move_time=self.default_move_time
        )
        budget = dataclasses.replace(budget, stop_event=self._stop_event)
        if not (budget.infinite or budget.ponder):
            self._release_event.set()
        self._search_thread = threading.Thread(
            target=self._search,
            args=(self.board.copy(), budget, self._release_event, self._search_finished),
            name="uci-search",
            daemon=True,
        )
        self._search_thread.start()

    def _stop(self, arguments: Sequence[str] = ()) -> None:
        self._stop_event.set()
        self._release_event.set()

    def _ponderhit(self, arguments: Sequence[str] = ()) -> None:
        self._release_event.set()

    def _end_search(self, timeout: float | None) -> None:
        self._stop()
        if self._search_thread is not None:
            self._search_thread.join(timeout)

    # --- the search ------------------------------------------------------------------------------------------------
    def _search(
        self, board: chess.Board, budget: SearchBudget, release: threading.Event, finished: threading.Event
    ) -> None:
        try:
            move = self._chosen_move(board, budget)
        except Exception as error:  # never leave a `go` without its bestmove
            self.send_error(f"search failed: {type(error).__name__}: {error}; playing a fallback move")
            move = fallback_move(board, budget.search_moves)
        release.wait()
        # Marked finished before writing: the GUI may send the next `go` as soon as it reads this bestmove.
        finished.set()
        self.send(f"bestmove {move.uci() if move else '(none)'}")

    def _chosen_move(self, board: chess.Board, budget: SearchBudget) -> chess.Move | None:
        """The callback's move when it is legal, else the fallback; problems are reported as info strings."""
        if not any(board.legal_moves):
            return None
        try:
            answer = self.choose_move(board.copy(), budget)
        except Exception as error:
            self.send_error(f"choose_move failed: {type(error).__name__}: {error}; playing a fallback move")
            return fallback_move(board, budget.search_moves)
        choice = answer if isinstance(answer, MoveChoice) else MoveChoice(answer)
        try:
            move = board.parse_uci(choice.uci)
        except (ValueError, TypeError) as error:
            self.send_error(
                f"choose_move returned {choice.move!r}, not a legal move here: {error}; playing a fallback move"
            )
            return fallback_move(board, budget.search_moves)
        if move not in allowed_moves(board, budget.search_moves):
            self.send_error(f"choose_move returned {move.uci()!r}, not one of the searchmoves "
                            f"{' '.join(budget.search_moves)}; playing a fallback move")
            return fallback_move(board, budget.search_moves)
        line = info_line(choice, board, budget.elapsed())
        if line:
            self.send(line)
        return move


def main_loop(server: UCIServer) -> None:
    """Run ``server`` on standard input and output."""
    server.run(sys.stdin, sys.stdout)


# --- example agents (no JAX) ----------------------------------------------------------------------------------------


class RandomMover:
    """Plays a uniformly random legal move (seeded, so games are reproducible)."""

    def __init__(self, seed: int = 0):
        self._random = random.Random(seed)

    def __call__(self, board: chess.Board, budget: SearchBudget) -> MoveChoice:
        moves = sorted(board.legal_moves, key=lambda move: move.uci())
        return MoveChoice(self._random.choice(moves), nodes=len(moves), depth=1)


PIECE_VALUES = {chess.PAWN: 100, chess.KNIGHT: 300, chess.BISHOP: 300, chess.ROOK: 500, chess.QUEEN: 900, chess.KING: 0}


class GreedyMaterialMover:
    """Mates when it can, else takes the most material (promotions count), cheapest attacker first; ties at random."""

    def __init__(self, seed: int = 0):
        self._random = random.Random(seed)

    def move_value(self, board: chess.Board, move: chess.Move) -> int:
        """Material gained by ``move`` in centipawns (a mate counts 100000), not looking at replies."""
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return 100_000
        value = 0
        if board.is_en_passant(move):
            value += PIECE_VALUES[chess.PAWN]
        elif board.piece_type_at(move.to_square) is not None:
            victim, attacker = board.piece_type_at(move.to_square), board.piece_type_at(move.from_square)
            value += PIECE_VALUES[victim] - PIECE_VALUES[attacker] // 100  # the cheapest attacker breaks ties
        if move.promotion:
            value += PIECE_VALUES[move.promotion] - PIECE_VALUES[chess.PAWN]
        return value

    def __call__(self, board: chess.Board, budget: SearchBudget) -> MoveChoice:
        scored = [(self.move_value(board, move), move.uci()) for move in board.legal_moves]
        best = max(value for value, _ in scored)
        choice = self._random.choice(sorted(uci for value, uci in scored if value == best))
        return MoveChoice(choice, score_centipawns=min(best, 10_000), nodes=len(scored), depth=1)


EXAMPLE_AGENTS = {"random": RandomMover, "greedy": GreedyMaterialMover}


def example_server(agent: str = "random", seed: int = 0) -> UCIServer:
    """A server around one of :data:`EXAMPLE_AGENTS`."""
    if agent not in EXAMPLE_AGENTS:
        raise ValueError(f"unknown example agent {agent!r}; expected one of {', '.join(EXAMPLE_AGENTS)}")
    return UCIServer(f"zerolab-{agent}", "zerolab", EXAMPLE_AGENTS[agent](seed))


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m zerolab.frontends.uci --example random|greedy [--seed N]``: run an example agent as a UCI engine."""
    parser = argparse.ArgumentParser(prog="python -m zerolab.frontends.uci", description=main.__doc__)
    parser.add_argument("--example", choices=sorted(EXAMPLE_AGENTS), required=True, help="the example agent to run")
    parser.add_argument("--seed", type=int, default=0, help="seed of the agent's random choices")
    arguments = parser.parse_args(argv)
    main_loop(example_server(arguments.example, arguments.seed))


__all__ = [
    "GreedyMaterialMover",
    "MoveChoice",
    "RandomMover",
    "SearchBudget",
    "UCIOption",
    "UCIServer",
    "example_server",
    "fallback_move",
    "main_loop",
    "parse_go",
    "parse_position",
    "parse_setoption",
    "plan_budget",
    "time_for_move",
]


if __name__ == "__main__":
    main()
