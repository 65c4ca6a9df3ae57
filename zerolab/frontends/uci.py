"""A UCI front end (engine side) so the project's agents play in ordinary chess tools.

Any callable ``choose_move(board, budget) -> MoveChoice`` becomes a UCI engine that python-chess, cutechess-cli or
lichess-bot can drive (8×8 chess)::

    simulations = UCIOption("Simulations", "spin", 128, 1, 100000)
    server = UCIServer("zerolab-gateau", "zerolab", choose_move, options=[simulations])
    main_loop(server)            # reads sys.stdin, writes sys.stdout

``python -m zerolab.frontends.uci_examples --example random`` runs a built-in example agent
(:mod:`zerolab.frontends.uci_examples`) without JAX, for tests and for checking a tool's set-up.

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

The protocol's pieces — what the callback sees and returns, options, parsing commands, the time rule — are
:mod:`zerolab.frontends.uci_protocol`.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import chess

from zerolab.frontends.uci_options import UCIOption
from zerolab.frontends.uci_protocol import (
    DEFAULT_MOVE_OVERHEAD_MS,
    DEFAULT_MOVE_TIME,
    MOVE_OVERHEAD_OPTION,
    ChooseMove,
    MoveChoice,
    SearchBudget,
    allowed_moves,
    fallback_move,
    info_lines,
    parse_go,
    parse_position,
    parse_setoption,
    plan_budget,
    search_move_problems,
)

QUIT_JOIN_TIMEOUT = 5.0  # seconds a running search gets to finish after `quit`
MAXIMUM_MESSAGE = 300  # characters of an `info string error` message; longer ones are cut, saying so


def shortened(message: str, limit: int = MAXIMUM_MESSAGE) -> str:
    """``message``, or its first ``limit`` characters and a note of how long it was."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... (cut: {len(message)} characters)"


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
        """One ``info string error: ...`` line, on one line and at most :data:`MAXIMUM_MESSAGE` characters (a GUI's
        garbage line is not echoed back whole)."""
        self.send("info string error: " + shortened(" ".join(str(message).split())))

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
        board = self.board.copy()
        budget = dataclasses.replace(budget, stop_event=self._stop_event,
                                     report=lambda choice: self._report(choice, board, budget.elapsed()))
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
        # The pondered move was played: the search stops and its best move is sent (the pondering was its thinking).
        self._stop_event.set()
        self._release_event.set()

    def _report(self, choice: MoveChoice, board: chess.Board, elapsed: float) -> None:
        """An interim result of a running search, as ``info`` lines."""
        for line in info_lines(choice, board, elapsed):
            self.send(line)

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
        if choice.note:
            self.send("info string " + shortened(" ".join(choice.note.split())))
        for line in info_lines(choice, board, budget.elapsed()):
            self.send(line)
        return move


def main_loop(server: UCIServer) -> None:
    """Run ``server`` on standard input and output."""
    server.run(sys.stdin, sys.stdout)



__all__ = ["UCIServer", "main_loop"]
