"""A GTP v2 server (Go Text Protocol) over any move chooser for Go, with pgx as the referee.

``python -m zerolab gtp --checkpoint DIR`` puts a zerolab Go checkpoint behind it, so GTP tools (GoGui, twogtp, a
GNU Go referee script) can play it.  The server keeps a pgx state and the list of moves played; ``undo`` replays the
list without its last move.

Commands: protocol_version, name, version, known_command, list_commands, boardsize, clear_board, komi, play,
genmove, undo, final_score, showboard, quit.

Protocol details:

* numeric ids are echoed (``12 genmove b`` → ``=12 C4``); ``#`` comments, control characters and CR are removed;
  blank lines are ignored; every response ends with a blank line;
* bad input (unknown command, missing or malformed arguments, bad colour or vertex, illegal move, a board size the
  chooser cannot play) answers ``? reason`` and the loop goes on;
* **play or genmove for the colour not to move** inserts a pass for the other colour first (GTP allows either colour
  to move at any time; pgx alternates colours).  If that pass ends the game (the previous move was a pass too), the
  command fails with ``? the game is over``;
* after the game has ended (two passes, positional superko, or pgx's ply cap of ``2·N²``), ``play`` fails with
  ``? the game is over`` and ``genmove`` answers ``pass`` without changing the position;
* ``komi K`` rebuilds the game at that komi (a :class:`~zerolab.games.go.GoGame` is identified by size and komi)
  and keeps the position; ``final_score`` counts the board by Tromp–Taylor area minus komi (``B+3.5``, ``W+0.5``,
  ``0``).  It counts the board even after a positional-superko ending, which pgx scores as a loss for the mover.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from typing import Callable, TextIO

import jax
import numpy as np
import pgx

from zerolab.games.go import GTP_COLUMNS, GoGame

#: Chooses the move for the side to move of one unbatched pgx Go state: ``(game, state, key) -> pgx action``.
MoveChooser = Callable[[GoGame, pgx.State, jax.Array], int]

PROTOCOL_VERSION = "2"
COMMANDS = ("protocol_version", "name", "version", "known_command", "list_commands", "boardsize", "clear_board",
            "komi", "play", "genmove", "undo", "final_score", "showboard", "quit")
COLOURS = {"b": "black", "black": "black", "w": "white", "white": "white"}


class GTPError(ValueError):
    """A command that fails: its message is the text after ``?`` in the response."""


def random_chooser(game: GoGame, state: pgx.State, key: jax.Array) -> int:
    """A uniformly random legal move (passes included)."""
    legal = np.flatnonzero(np.asarray(state.legal_action_mask))
    return int(legal[jax.random.randint(key, (), 0, len(legal))])


def agent_chooser(agent) -> MoveChooser:
    """A :class:`MoveChooser` from a zerolab agent (``select_actions`` over a batch of one state)."""

    def choose(game: GoGame, state: pgx.State, key: jax.Array) -> int:
        return int(agent.select_actions(jax.tree.map(lambda leaf: leaf[None], state), key)[0])

    return choose


def warmed_up(chooser: MoveChooser, game: GoGame, seed: int = 0) -> MoveChooser:
    """``chooser`` with its search compiled in a background thread from the start (one move chosen on the empty
    board), while the GTP tool sends its first commands; ``genmove`` waits for that compilation rather than starting
    its own (a second start reads it from the persistent compilation cache).  A warm-up that fails is left to the
    first ``genmove``, which then fails with the error in its ``?`` answer."""
    import threading

    ready = threading.Event()

    def warm() -> None:
        try:
            chooser(game, game.init(jax.random.key(seed)), jax.random.key(seed))
        except Exception:  # noqa: BLE001 - genmove reports it
            pass
        finally:
            ready.set()

    threading.Thread(target=warm, name="gtp-warm-up", daemon=True).start()

    def choose(game: GoGame, state: pgx.State, key: jax.Array) -> int:
        ready.wait()
        return chooser(game, state, key)

    return choose


def clean_line(line: str) -> str:
    """A GTP input line without its comment, CR and control characters (tabs become spaces), stripped."""
    line = line.split("#", 1)[0].replace("\t", " ")
    return "".join(character for character in line if character >= " " or character == "\n").strip()


@dataclasses.dataclass
class GTPServer:
    """The state of one GTP session: the game (size and komi), the moves played and the pgx state they lead to.

    Attributes:
      game: the Go game being played; replaced by ``komi`` and ``boardsize``.
      chooser: picks the server's moves for ``genmove``.
      board_sizes: the sizes ``boardsize`` accepts (those the chooser can play).
      name, version: answers to ``name`` and ``version``.
      seed: seeds the PRNG keys handed to the chooser.
    """

    game: GoGame
    chooser: MoveChooser
    board_sizes: tuple[int, ...] = ()
    name: str = "zerolab"
    version: str = "0.1"
    seed: int = 0

    #: Commands a subclass adds (answered by its ``command_<name>`` method, ``-`` read as ``_``), listed after
    #: GTP's own by ``list_commands`` and known to ``known_command``.
    extra_commands = ()

    @property
    def command_names(self) -> tuple[str, ...]:
        return COMMANDS + tuple(self.extra_commands)

    def __post_init__(self):
        self.board_sizes = tuple(self.board_sizes) or (self.game.size,)
        self.key = jax.random.key(self.seed)
        self.moves: list[int] = []
        self.finished = False
        self.state = self._replay([])

    # --- the position -------------------------------------------------------------------------------------------

    def _replay(self, moves: list[int]) -> pgx.State:
        step = self.game.jitted_step
        state = self.game.init(jax.random.key(0))
        for action in moves:
            state = step(state, action)
        return state

    def _step(self, action: int) -> None:
        self.state = self.game.jitted_step(self.state, action)
        self.moves.append(int(action))

    def _bring_colour_to_move(self, colour: str) -> None:
        """Insert a pass when ``colour`` is not to move (see the module docstring)."""
        if bool(self.state.terminated):
            raise GTPError("the game is over")
        black_to_move = bool(self.game.black_to_move(self.state))
        if black_to_move != (colour == "black"):
            self._step(self.game.pass_action)
            if bool(self.state.terminated):
                self.state, self.moves = self._replay(self.moves[:-1]), self.moves[:-1]
                raise GTPError("the game is over")

    # --- commands -----------------------------------------------------------------------------------------------

    def handle(self, line: str) -> str | None:
        """The full response (ending with a blank line) to one input line, or None for a blank or comment line."""
        words = clean_line(line).split()
        if not words:
            return None
        identifier = ""
        if words[0].isdigit():
            identifier, words = words[0], words[1:]
            if not words:
                return f"?{identifier} missing command\n\n"
        command, arguments = words[0].lower(), words[1:]
        try:
            if command not in self.command_names:
                raise GTPError(f"unknown command {words[0]!r}")
            response = getattr(self, f"command_{command.replace('-', '_')}")(arguments)
        except GTPError as error:
            return f"?{identifier} {error}\n\n"
        if command == "quit":
            self.finished = True
        separator = " " if response and not response.startswith("\n") else ""
        return f"={identifier}{separator}{response}\n\n"

    @staticmethod
    def _arguments(command: str, arguments: list[str], names: tuple[str, ...]) -> list[str]:
        if len(arguments) != len(names):
            raise GTPError(f"{command} expects {len(names)} argument(s) ({' '.join(names) or 'none'}), "
                           f"got {len(arguments)}")
        return arguments

    @staticmethod
    def _colour(text: str) -> str:
        colour = COLOURS.get(text.lower())
        if colour is None:
            raise GTPError(f"invalid color {text!r}: expected b, w, black or white")
        return colour

    def command_protocol_version(self, arguments):
        return PROTOCOL_VERSION

    def command_name(self, arguments):
        return self.name

    def command_version(self, arguments):
        return self.version

    def command_known_command(self, arguments):
        (command,) = self._arguments("known_command", arguments, ("command",))
        return "true" if command.lower() in self.command_names else "false"

    def command_list_commands(self, arguments):
        return "\n".join(self.command_names)

    def command_quit(self, arguments):
        return ""

    def command_boardsize(self, arguments):
        (text,) = self._arguments("boardsize", arguments, ("size",))
        supported = ", ".join(map(str, self.board_sizes))
        try:
            size = int(text)
        except ValueError:
            raise GTPError(f"boardsize expects a board size ({supported}), got {text!r}") from None
        if size not in self.board_sizes:
            raise GTPError(f"unacceptable size {text}: this engine plays {supported}")
        self.game = GoGame(size=size, komi=self.game.komi)
        return self.command_clear_board([])

    def command_clear_board(self, arguments):
        self.moves, self.state = [], self._replay([])
        return ""

    def command_komi(self, arguments):
        (text,) = self._arguments("komi", arguments, ("komi",))
        try:
            komi = float(text)
        except ValueError:
            raise GTPError(f"komi expects a number, got {text!r}") from None
        if not math.isfinite(komi):
            raise GTPError(f"komi must be finite, got {text!r}")
        self.game = GoGame(size=self.game.size, komi=komi)
        self.state = self._replay(self.moves)
        return ""

    def command_play(self, arguments):
        colour_text, vertex = self._arguments("play", arguments, ("color", "vertex"))
        colour = self._colour(colour_text)
        try:
            action = self.game.gtp_to_action(vertex)
        except ValueError as error:
            raise GTPError(f"invalid vertex: {error}") from None
        before = (self.state, list(self.moves))
        self._bring_colour_to_move(colour)
        if not bool(self.state.legal_action_mask[action]):
            self.state, self.moves = before
            raise GTPError(f"illegal move {colour} {vertex}: the point is occupied or the move is suicide")
        self._step(action)
        return ""

    def command_genmove(self, arguments):
        (colour_text,) = self._arguments("genmove", arguments, ("color",))
        colour = self._colour(colour_text)
        if bool(self.state.terminated):
            return "pass"
        self._bring_colour_to_move(colour)
        self.key, key = jax.random.split(self.key)
        action = int(self.chooser(self.game, self.state, key))
        if not bool(self.state.legal_action_mask[action]):
            raise GTPError(f"the engine chose the illegal move {self.game.action_to_gtp(action)}")
        self._step(action)
        return self.game.action_to_gtp(action)

    def command_undo(self, arguments):
        self._arguments("undo", arguments, ())
        if not self.moves:
            raise GTPError("cannot undo: no move has been played")
        self.moves = self.moves[:-1]
        self.state = self._replay(self.moves)
        return ""

    def command_final_score(self, arguments):
        return format_score(float(self.game.area_difference(self.state)) - self.game.komi)

    def command_showboard(self, arguments):
        return "\n" + render_board(self.game, self.state)

    def serve(self, input_stream: TextIO, output_stream: TextIO) -> None:
        """Answer commands from ``input_stream`` until ``quit``, the end of the input, or a controller that closed
        its end of ``output_stream`` (gnugo's twogtp closes it right after ``quit``): then the session ends quietly."""
        for line in input_stream:
            response = self.handle(line)
            if response is None:
                continue
            try:
                output_stream.write(response)
                output_stream.flush()
            except (BrokenPipeError, ValueError):  # nobody reads the answers any more (ValueError: stream closed)
                silence(output_stream)
                return
            if self.finished:
                return


def silence(stream: TextIO) -> None:
    """Points ``stream``'s file descriptor (if it has one) at the null device, so that the text still buffered in it
    does not fail again, with a traceback, when the interpreter flushes it at exit."""
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError):  # an in-memory or closed stream: nothing is flushed at exit
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, descriptor)
    os.close(null)


def format_score(score: float) -> str:
    """GTP's score text: ``B+3.5``, ``W+0.5`` or ``0`` (Black's margin ``score``, komi included)."""
    if score == 0:
        return "0"
    return f"{'B' if score > 0 else 'W'}+{abs(score):g}"


def render_board(game: GoGame, state: pgx.State) -> str:
    """The board as text, rows from the top, with GTP column letters and row numbers (``X`` Black, ``O`` White)."""
    stones = np.asarray(game.stone_colours(state)).reshape(game.size, game.size)
    letters = " ".join(GTP_COLUMNS[: game.size])
    rows = [f"   {letters}"]
    for row in range(game.size):
        points = " ".join({1: "X", -1: "O", 0: "."}[int(value)] for value in stones[row])
        rows.append(f"{game.size - row:2d} {points} {game.size - row:d}")
    rows.append(f"   {letters}")
    to_move = "Black" if bool(game.black_to_move(state)) else "White"
    rows.append(f"{to_move} to move, komi {game.komi:g}")
    return "\n".join(rows)


def serve(game: GoGame, chooser: MoveChooser, input_stream: TextIO = sys.stdin, output_stream: TextIO = sys.stdout,
          **options) -> None:
    """Run a GTP session over ``chooser`` on the given streams (stdin/stdout by default)."""
    GTPServer(game, chooser, **options).serve(input_stream, output_stream)
