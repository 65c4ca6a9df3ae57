"""A client for external GTP engines (GNU Go) over pipes.

:class:`GTPEngine` starts the program, sends GTP commands and reads their responses with a time-out per command;
a crashed or hung engine raises :class:`GTPEngineError` naming the engine, and :meth:`GTPEngine.restart` starts a
fresh process.  GNU Go is started as ``gnugo --mode gtp --boardsize N --komi K --chinese-rules --level L --seed S``
(area scoring, like pgx).  Without ``--seed`` GNU Go seeds its random numbers from the clock: the same commands
then get other moves from run to run (seen here: ``play b E2``, ``genmove w`` answered C2, C3, D4 or E4 depending
on the commands' timing), so matches against it could not be repeated; with a seed they can (FIELD-NOTES' "GNU Go
is deterministic" holds only with a seed).  GNU Go's ``final_score`` can be stale (FIELD-NOTES): results come from
pgx, never from the engine.
"""

from __future__ import annotations

import dataclasses
import queue
import subprocess
import threading
from typing import Sequence

from zerolab.config import split_spec
from zerolab.engines.executables import find_engine

DEFAULT_MOVE_TIMEOUT = 30.0  # seconds a command may take before the engine counts as hung


class GTPEngineError(RuntimeError):
    """An external GTP engine failed (refused a command, crashed, hung); the message names the engine."""


@dataclasses.dataclass(frozen=True)
class GTPEngineOptions:
    """How to start a GTP engine.

    Attributes:
      engine: name (looked up on PATH and in /usr/games) or path of the executable.
      level: GNU Go's ``--level`` (0..10; higher is stronger and slower).
      timeout: seconds one command may take before the engine counts as hung.
      seed: GNU Go's ``--seed`` (its random numbers; the same seed and commands give the same moves).
      board_size, komi: the game it plays.
    """

    engine: str = "gnugo"
    level: int = 1
    timeout: float = DEFAULT_MOVE_TIMEOUT
    board_size: int = 7
    komi: float = 7.5
    seed: int = 1

    FIELDS = {"level": "GNU Go's --level, an integer 0..10", "timeout": "seconds per command, a positive number",
              "seed": "GNU Go's --seed, an integer"}

    @classmethod
    def parse(cls, spec: str, board_size: int = 7, komi: float = 7.5) -> GTPEngineOptions:
        """``gnugo``, ``gnugo:level=5,timeout=10`` → options; unknown keys or bad values raise ``ValueError``."""
        engine, items = split_spec(spec, "GTP engine spec")
        values: dict = {}
        for key, value in items.items():
            if key not in cls.FIELDS:
                raise ValueError(f"GTP engine spec {spec!r}: unknown option {key!r}; expected key=value with key "
                                 f"one of {', '.join(f'{name} ({meaning})' for name, meaning in cls.FIELDS.items())}")
            try:
                values[key] = int(value) if key in ("level", "seed") else float(value)
            except ValueError:
                raise ValueError(f"GTP engine spec {spec!r}: {key} expects {cls.FIELDS[key]}, got {value!r}") from None
        if not 0 <= values.get("level", 1) <= 10 or values.get("timeout", 1.0) <= 0:
            raise ValueError(f"GTP engine spec {spec!r}: level must be 0..10 and timeout a positive number")
        return cls(engine=engine.strip() or "gnugo", board_size=board_size, komi=float(komi), **values)

    def command_line(self) -> list[str]:
        return [find_engine(self.engine), "--mode", "gtp", "--boardsize", str(self.board_size), "--komi",
                f"{self.komi:g}", "--chinese-rules", "--level", str(self.level), "--seed", str(self.seed)]


class GTPEngine:
    """One external GTP engine process: ``send`` a command, get its response text (without ``=``).

    A command that gets no answer within ``options.timeout`` seconds kills the process; the next command (or
    :meth:`restart`) starts a fresh one, which knows no position: callers replay the game (``set_position``).
    """

    def __init__(self, options: GTPEngineOptions, command: Sequence[str] | None = None, name: str | None = None):
        """``command`` (default: ``options.command_line()``, GNU Go's) starts any other GTP program instead."""
        self.options = options
        self.command = list(command) if command is not None else None
        self.name = name or (f"{options.engine}:level={options.level}" if command is None else str(command[0]))
        self.process: subprocess.Popen | None = None
        self._lines: queue.Queue = queue.Queue()

    def open(self) -> GTPEngine:
        self.close()
        command = self.command if self.command is not None else self.options.command_line()
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self._lines = queue.Queue()
        threading.Thread(target=_pump, args=(self.process.stdout, self._lines), daemon=True).start()
        return self

    def restart(self) -> GTPEngine:
        return self.open()

    def close(self) -> None:
        if self.process is None:
            return
        process, self.process = self.process, None
        try:
            process.stdin.write("quit\n")
            process.stdin.flush()
            process.wait(timeout=30)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()

    def _kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def __enter__(self) -> GTPEngine:
        return self.open()

    def __exit__(self, *exception_info: object) -> None:
        self.close()

    def send(self, command: str) -> str:
        """The engine's answer to ``command``; raises :class:`GTPEngineError` on ``?``, a crash or a time-out."""
        if self.process is None:
            self.open()
        try:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as error:
            raise GTPEngineError(f"GTP engine {self.name} died before {command!r}: {error}") from None
        lines = []
        while True:
            try:
                line = self._lines.get(timeout=self.options.timeout)
            except queue.Empty:
                self._kill()  # a hung engine is not asked again; the next command starts a fresh one
                raise GTPEngineError(f"GTP engine {self.name} gave no answer to {command!r} within "
                                     f"{self.options.timeout:g} s") from None
            if line is None:
                raise GTPEngineError(f"GTP engine {self.name} exited while answering {command!r}")
            line = line.rstrip("\r\n")
            if not lines and not line.strip():
                continue
            if line.strip() == "" and lines:
                break
            lines.append(line)
        status, text = lines[0][:1], "\n".join([lines[0][1:].strip()] + lines[1:]).strip()
        if status != "=":
            raise GTPEngineError(f"GTP engine {self.name} refused {command!r}: {text}")
        return text

    def set_position(self, moves: Sequence[str]) -> None:
        """Clear the board and play ``moves`` (GTP vertices, Black first, alternating)."""
        self.send("clear_board")
        for index, vertex in enumerate(moves):
            self.send(f"play {'b' if index % 2 == 0 else 'w'} {vertex}")

    def generate_move(self, colour: str) -> str:
        """The engine's move for ``colour`` (``b``/``w``): a vertex, ``pass`` or ``resign``, lower case."""
        return self.send(f"genmove {colour}").lower()

    def __repr__(self) -> str:
        return f"GTPEngine({self.name!r})"


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)
