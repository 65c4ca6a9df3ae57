"""Stopping a training run on a signal without losing work: the first SIGINT or SIGTERM finishes the iteration.

A pod's scheduler sends SIGTERM before it preempts a job, and a person at a terminal presses Ctrl-C.  Inside
:class:`StopOnSignal` the first of either only asks the run to stop: the iteration in progress finishes and saves
its checkpoint, and the run then raises :class:`TrainingInterrupted`, whose message says how to resume.  A second
signal stops at once (``KeyboardInterrupt``, as Python's default for Ctrl-C): the iteration in progress is abandoned,
and the newest saved checkpoint is where the same command resumes (checkpoints are written whole or not at all).
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

logger = logging.getLogger(__name__)

#: The signals that ask a run to stop.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class TrainingInterrupted(Exception):
    """A run stopped on a signal after saving its last iteration.

    Attributes:
      signal_number: the signal that asked it to stop.
      iteration: the last iteration saved.
    """

    def __init__(self, signal_number: int, iteration: int, workdir: str):
        self.signal_number, self.iteration, self.workdir = signal_number, iteration, workdir
        super().__init__(f"stopped by {signal.Signals(signal_number).name} after iteration {iteration}, whose "
                         f"checkpoint is saved in {workdir}: run the same command to resume")


class StopOnSignal:
    """A context in which SIGINT and SIGTERM ask for a stop (``requested`` is the signal's number) instead of ending
    the process; a second signal raises ``KeyboardInterrupt``.  The handlers it replaced are restored on exit.
    Outside the main thread (where Python cannot set handlers) it does nothing."""

    def __init__(self) -> None:
        self.requested: int | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            for number in STOP_SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exception) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()

    def _handle(self, number: int, frame: FrameType | None) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt(f"{signal.Signals(number).name} again: stopping now")
        self.requested = number
        logger.warning("%s: finishing the current iteration and saving it, then stopping (send it again to stop "
                       "now, losing the iteration in progress)", signal.Signals(number).name)


def interrupt_on_sigterm() -> None:
    """Makes SIGTERM end a command as Ctrl-C does (``KeyboardInterrupt``, reported in one line by the command line),
    where Python's default ends the process silently; training runs handle both with :class:`StopOnSignal`."""

    def interrupt(number: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(signal.Signals(number).name)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupt)


def interruption_report(error: BaseException, workdir: str) -> tuple[str, int]:
    """``(line, exit status)`` for a command line whose run stopped with ``error``: a :class:`TrainingInterrupted`
    (status 128 + the signal's number, as a shell reports a process a signal ended) or a ``KeyboardInterrupt``
    (status 130)."""
    if isinstance(error, TrainingInterrupted):
        return f"stopped: {error}", 128 + int(error.signal_number)
    return (f"interrupted: the iteration in progress is lost; run the same command to resume from the newest "
            f"checkpoint in {workdir}"), 128 + int(signal.SIGINT)


__all__ = ["STOP_SIGNALS", "StopOnSignal", "TrainingInterrupted", "interrupt_on_sigterm", "interruption_report"]
