"""Progress bars with rate and ETA for long phases (self-play, training, matches, annotation)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)


def make_progress(console: Console | None = None) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[unit_rate]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console or Console(file=sys.stderr),
        transient=False,
    )


class ProgressBar:
    """One task bar: ``advance(n)`` and ``set_rate(text)``; use as a context manager."""

    def __init__(self, description: str, total: float | None, unit: str = "it", enabled: bool = True):
        self.description, self.total, self.unit = description, total, unit
        self.enabled = enabled
        self._progress: Progress | None = None
        self._task = None

    def __enter__(self) -> ProgressBar:
        if self.enabled:
            self._progress = make_progress()
            self._progress.start()
            self._task = self._progress.add_task(self.description, total=self.total, unit_rate="")
        return self

    def advance(self, amount: float = 1.0) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, amount)
            speed = self._progress.tasks[0].speed
            if speed:
                self._progress.update(self._task, unit_rate=f"{speed:,.1f} {self.unit}/s")

    def set_rate(self, text: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, unit_rate=text)

    def __exit__(self, *exc_info) -> None:
        if self._progress is not None:
            self._progress.stop()


@contextlib.contextmanager
def progress_bar(description: str, total: float | None, unit: str = "it", enabled: bool = True) -> Iterator[ProgressBar]:
    with ProgressBar(description, total, unit, enabled) as bar:
        yield bar
