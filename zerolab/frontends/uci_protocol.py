"""The UCI protocol's pieces, for the engine side (:mod:`zerolab.frontends.uci`'s server): what an agent's callback
sees and returns (:class:`SearchBudget`, :class:`MoveChoice`), parsing
``position``/``go``/``setoption`` (pure functions), the time rule, a search engine's simulations under a budget
(:func:`fixed_simulations`, :func:`affordable_simulations`) and the ``info`` line.  Engine options are
:class:`zerolab.frontends.uci_options.UCIOption`.

Time management (:func:`time_for_move`): with a clock the move may take
``remaining / (movestogo or 30) + 0.75 * increment``, at most ``remaining - overhead``, less the ``Move Overhead``
option (50 ms by default) for the transport, and at least 10 ms.  ``movetime`` gives ``movetime - overhead``.  The
result is ``budget.time_budget`` in seconds (None when ``go`` only limits nodes or depth); the callback maps it to
its own effort, e.g. simulations.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import chess

from zerolab.games.fen import validate_chess_fen

DEFAULT_MOVES_TO_GO = 30
INCREMENT_SHARE = 0.75
DEFAULT_MOVE_OVERHEAD_MS = 50
MINIMUM_MOVE_TIME = 0.01  # seconds
DEFAULT_MOVE_TIME = 1.0  # seconds, for `go` without limits, `go infinite` and `go ponder`
MOVE_OVERHEAD_OPTION = "Move Overhead"
MAXIMUM_SIMULATIONS = 100_000  # the most simulations ``go nodes`` or the Simulations option asks of a search engine

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
    #: Sends an interim :class:`MoveChoice` as ``info`` lines while the search goes on (the server sets it; a search
    #: of ``go infinite`` reports about once a second).  None: nowhere to report.
    report: Callable[["MoveChoice"], None] | None = dataclasses.field(default=None, compare=False, repr=False)

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
      depth: search depth (an MCTS engine: the mean depth of its simulations, as lc0 reports it).
      seldepth: the deepest line searched.
      principal_variation: the expected line, starting with ``move``.
      search_seconds: the time spent searching, when it differs from the time since ``go`` (e.g. a compilation
        waited for): ``nps`` is ``nodes / search_seconds`` then.
      note: a remark for the GUI, sent as ``info string`` before the ``info`` line.
      multipv: the line's rank under ``MultiPV`` (1 the best), printed as ``multipv N``; None: a single line.
      lines: the further lines of ``MultiPV`` (ranks 2, 3, …), each its own ``info`` line after this one's.
    """

    move: str | chess.Move
    score_centipawns: int | None = None
    mate_in: int | None = None
    nodes: int | None = None
    depth: int | None = None
    seldepth: int | None = None
    principal_variation: tuple[str, ...] = ()
    search_seconds: float | None = None
    note: str = ""
    multipv: int | None = None
    lines: tuple["MoveChoice", ...] = ()

    @property
    def uci(self) -> str:
        return self.move.uci() if isinstance(self.move, chess.Move) else str(self.move).strip()


ChooseMove = Callable[[chess.Board, SearchBudget], "MoveChoice | chess.Move | str"]


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
            if value < 0 and token in ("wtime", "btime"):  # a flagged clock: kept (as 0), so the move comes at once
                problems.append(f"go {token} is negative ({value} ms): the clock has run out; moving at once")
                value = 0
            elif value < 0 and token != "mate":  # `go mate N` is passed on as given
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


# --- simulations from a budget (a search engine's time rule) ----------------------------------------------------------


def largest_power_of_two(n: int) -> int:
    """The largest power of two ≤ ``n`` (0 when ``n`` < 1)."""
    return 0 if n < 1 else 1 << (int(n).bit_length() - 1)


def is_timed(budget: SearchBudget) -> bool:
    """True when ``go`` set a move time or a clock (not ``infinite`` / ``ponder``)."""
    clock = budget.move_time is not None or budget.white_time is not None or budget.black_time is not None
    return clock and not (budget.infinite or budget.ponder) and budget.time_budget is not None


def fixed_simulations(budget: SearchBudget, configured: int) -> int | None:
    """The simulations of a move that is not timed: ``go nodes N`` searches N, plain ``go`` / ``infinite`` /
    ``ponder`` the ``Simulations`` option; None for a timed move (:func:`affordable_simulations` then)."""
    if budget.nodes is not None:
        return min(max(int(budget.nodes), 0), MAXIMUM_SIMULATIONS)
    return None if is_timed(budget) else configured


def affordable_simulations(seconds_left: float, fixed_seconds: float, seconds_per_simulation: float,
                           compiled: Sequence[int]) -> int:
    """The largest compiled search (simulations > 0) that fits ``seconds_left`` — one costs ``fixed_seconds`` and
    ``seconds_per_simulation`` per simulation — or 0 when none fits."""
    fits = [size for size in compiled if 0 < size and fixed_seconds + size * seconds_per_simulation <= seconds_left]
    return max(fits, default=0)


def info_lines(choice: MoveChoice, board: chess.Board, elapsed: float) -> list[str]:
    """The ``info`` lines of ``choice`` and of its further ``MultiPV`` lines, in rank order."""
    return [line for line in (info_line(one, board, elapsed) for one in (choice, *choice.lines)) if line]


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
    if choice.seldepth is not None:
        parts.append(f"seldepth {int(choice.seldepth)}")
    if choice.multipv is not None:
        parts.append(f"multipv {int(choice.multipv)}")
    if choice.mate_in is not None:
        parts.append(f"score mate {int(choice.mate_in)}")
    elif choice.score_centipawns is not None:
        parts.append(f"score cp {int(round(choice.score_centipawns))}")
    if choice.nodes is not None:
        searched = elapsed if choice.search_seconds is None else choice.search_seconds
        parts.append(f"nodes {int(choice.nodes)}")
        parts.append(f"nps {int(choice.nodes / searched) if searched > 0 else 0}")
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


__all__ = [
    "DEFAULT_MOVES_TO_GO", "DEFAULT_MOVE_OVERHEAD_MS", "DEFAULT_MOVE_TIME", "GO_FLAGS", "GO_INTEGER_PARAMETERS",
    "GO_MILLISECOND_PARAMETERS", "INCREMENT_SHARE", "MAXIMUM_SIMULATIONS", "MINIMUM_MOVE_TIME", "MOVE_OVERHEAD_OPTION",
    "MoveChoice", "SearchBudget", "affordable_simulations", "allowed_moves",
    "fallback_move", "fixed_simulations", "info_line", "info_lines", "is_timed", "largest_power_of_two", "parse_go",
    "parse_position", "parse_setoption", "plan_budget", "search_move_problems", "time_for_move"
]
