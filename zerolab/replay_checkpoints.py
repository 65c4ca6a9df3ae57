"""Replay checkpoints: each process's frame window, saved and restored under ``workdir/replay``.

Two layouts, both read back:

* a single-process run writes ``replay/<step>/`` with orbax (the layout of every run before multi-process training);
* in a run of P > 1 processes, process i writes its own window, with its own numpy random state, to
  ``replay/process-<i>/<step>.npz``.  Not orbax: orbax takes numpy arrays for replicated data and writes them from
  process 0 only, while these windows differ from process to process and stay on the host.  An archive is written
  to a temporary file and renamed into place, so a process killed mid-save leaves the previous steps intact.

A multi-process step is complete when every one of its processes wrote it.  A step written by Q processes and
restored by P: with Q == P each process gets back its own window and random state; otherwise (a single process
resuming a multi-process run, or another number of processes) see :func:`window_share` and :func:`numpy_rng_share`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import pathlib
import re

import jax
import numpy as np

from zerolab.checkpoint import Checkpointer
from zerolab.replay import FrameWindow

logger = logging.getLogger(__name__)

PROCESS_DIRECTORY = re.compile(r"^process-(\d+)$")
ARCHIVE = re.compile(r"^(\d+)\.npz$")
METADATA_KEY = "metadata"


def window_share(windows: list[dict[str, np.ndarray]], process_index: int, process_count: int) -> dict[str, np.ndarray]:
    """Process ``process_index``'s window out of the windows ``windows`` that the Q writers of a step saved.

    With Q == ``process_count``, its own.  Otherwise the Q windows are concatenated in process order and the process
    keeps frames ``process_index``, ``process_index + process_count``, ...: a single process keeps every frame of
    every writer (a run written by 2 processes resumes in one process with both windows, one after the other).
    """
    if len(windows) == process_count:
        return windows[process_index]
    concatenated = {name: np.concatenate([window[name] for window in windows]) for name in windows[0]}
    return {name: array[process_index::process_count] for name, array in concatenated.items()}


def numpy_rng_share(states: list[dict | None], step: int, process_index: int, process_count: int
                    ) -> np.random.Generator | None:
    """The numpy generator process ``process_index`` continues with, from the random states of a step's writers.

    Process i continues writer i's state (with Q == P, its own; a single process continues writer 0's, as the
    train-state checkpoint records it).  None for a writer of the single-process layout, whose state is the one in
    the train-state checkpoint.  A process with no writer of its own (more processes than writers) starts
    ``default_rng([step, i])``: reproducible and distinct from the others.
    """
    if process_index >= len(states):
        return np.random.default_rng([int(step), int(process_index)])
    state = states[process_index]
    if state is None:
        return None
    rng = np.random.default_rng()
    rng.bit_generator.state = state
    return rng


@dataclasses.dataclass
class RestoredReplay:
    """A step's replay for this process: its window and its numpy generator (None: the train-state checkpoint's)."""

    window: FrameWindow
    numpy_rng: np.random.Generator | None


class ProcessWindows:
    """The replay windows one process of a multi-process run wrote: ``directory/<step>.npz``, newest ``keep`` kept.

    An archive holds the window's arrays and, under ``metadata``, a JSON string: the step, the process's index, the
    number of processes and the process's numpy random state.
    """

    def __init__(self, directory: pathlib.Path, keep: int):
        self.directory = pathlib.Path(directory)
        self.keep = keep

    def path(self, step: int) -> pathlib.Path:
        return self.directory / f"{step}.npz"

    def steps(self) -> list[int]:
        if not self.directory.is_dir():
            return []
        return sorted(int(match.group(1)) for name in os.listdir(self.directory) if (match := ARCHIVE.match(name)))

    def save(self, step: int, arrays: dict[str, np.ndarray], metadata: dict) -> pathlib.Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.path(step)
        temporary = path.with_name(f"{path.name}.tmp")
        with open(temporary, "wb") as stream:
            np.savez(stream, **arrays, **{METADATA_KEY: np.asarray(json.dumps(metadata))})
        os.replace(temporary, path)
        for old in self.steps()[:-self.keep]:
            self.path(old).unlink(missing_ok=True)
        return path

    def load(self, step: int) -> tuple[dict[str, np.ndarray], dict]:
        with np.load(self.path(step), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files if name != METADATA_KEY}
            metadata = json.loads(str(archive[METADATA_KEY]))
        return arrays, metadata

    def metadata(self, step: int) -> dict:
        with np.load(self.path(step), allow_pickle=False) as archive:
            return json.loads(str(archive[METADATA_KEY]))

    def discard_after(self, step: int) -> None:
        for stale in [s for s in self.steps() if s > step]:
            logger.warning("discarding replay window %s (newer than the resumed step %d)", self.path(stale), step)
            self.path(stale).unlink(missing_ok=True)


class ReplayCheckpoints:
    """Every process's replay window under ``directory`` (``workdir/replay``), in either layout (see the module)."""

    def __init__(self, directory: pathlib.Path, keep: int):
        self.directory = pathlib.Path(directory).absolute()
        self.keep = keep
        self.single = Checkpointer(self.directory, keep=keep)

    def process_windows(self, process_index: int) -> ProcessWindows:
        return ProcessWindows(self.directory / f"process-{process_index}", self.keep)

    def process_directories(self) -> list[ProcessWindows]:
        names = os.listdir(self.directory) if self.directory.is_dir() else []
        return [ProcessWindows(self.directory / name, self.keep) for name in sorted(names) if PROCESS_DIRECTORY.match(name)]

    def steps(self) -> list[int]:
        """The steps with a replay window in either layout (a multi-process step's other writers are checked when
        it is restored)."""
        return sorted(set(self.single.steps()) | set(self.process_windows(0).steps()))

    def save(self, step: int, window: FrameWindow, numpy_rng: np.random.Generator) -> None:
        """Saves this process's window of ``step``; on several processes, with the process's random state."""
        if jax.process_count() == 1:
            arrays = {"num_frames": np.asarray(len(window)), **window.arrays}
            self.single.save(step, {"window": arrays}, {"iteration": step})
            return
        metadata = {"iteration": step, "process_index": jax.process_index(), "process_count": jax.process_count(),
                    "numpy_rng": numpy_rng.bit_generator.state}
        self.process_windows(jax.process_index()).save(step, window.arrays, metadata)

    def discard_after(self, step: int) -> None:
        """Deletes the windows newer than ``step``, in both layouts."""
        for stale in [s for s in self.single.steps() if s > step]:
            logger.warning("discarding checkpoint %s (newer than the resumed step %d)", self.directory / str(stale), step)
            self.single.manager.delete(stale)
        for windows in self.process_directories():
            windows.discard_after(step)

    def restore(self, step: int) -> RestoredReplay | None:
        """This process's share of ``step``'s windows, or None (reported) when they cannot all be read."""
        process_index, process_count = jax.process_index(), jax.process_count()
        if step in self.single.steps():
            restored = self.single.restore_newest([step], {"window": None})
            if restored is None:
                return None
            arrays = {name: np.asarray(value) for name, value in restored.items["window"].items() if name != "num_frames"}
            windows, states = [arrays], [None]
        else:
            try:
                windows, states = self._read_process_windows(step, process_index, process_count)
            except Exception as error:  # noqa: BLE001 - any failure to read means: use the previous step
                logger.warning("replay windows of step %d in %s cannot be read (%s: %s); trying the previous step",
                               step, self.directory, type(error).__name__, error)
                return None
        return RestoredReplay(FrameWindow(window_share(windows, process_index, process_count)),
                              numpy_rng_share(states, step, process_index, process_count))

    def _read_process_windows(self, step: int, process_index: int, process_count: int
                              ) -> tuple[list[dict[str, np.ndarray]], list[dict | None]]:
        """The windows and random states of ``step``'s writers, in process order, as far as this process needs them:
        its own when as many processes wrote the step as run now, all of them otherwise (the rest are left empty,
        after checking that every writer's archive is there)."""
        writers = int(self.process_windows(0).metadata(step)["process_count"])
        missing = [index for index in range(writers) if not self.process_windows(index).path(step).exists()]
        if missing:
            raise FileNotFoundError(f"step {step} was written by {writers} processes; the windows of processes "
                                    f"{missing} are missing")
        wanted = [process_index] if writers == process_count else list(range(writers))
        loaded = {index: self.process_windows(index).load(step) for index in wanted}
        windows = [loaded[index][0] if index in loaded else {} for index in range(writers)]
        states = [loaded[index][1]["numpy_rng"] if index in loaded else None for index in range(writers)]
        return windows, states
