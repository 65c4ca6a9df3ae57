"""Replay checkpoints: each process's frame window, saved incrementally under ``workdir/replay/process-<i>/``.

A window is saved as **chunks** of frames and one **index** per step:

* ``frames-<c>.npz``: frames stored with the window's :class:`~zerolab.training.replay.FrameCodec` (the arrays of
  :class:`~zerolab.training.replay.FrameWindow`), written once, at step c, and never changed;
* ``window-<s>.npz``: step s's window as the chunk and row of each of its frames, in window order, with a JSON
  ``metadata`` entry: the step, the process's index, the number of processes, its numpy random state, the codec and
  the size of every chunk the window reads;
* ``pending-<s>.npz``: the frames of the games still running in the process's lanes at step s, waiting for their
  game's end (:class:`~zerolab.training.pending.PendingFrames`: stored arrays, each frame's lane and the move played
  from it; the iteration that began each lane's game and the codec in its metadata), written before the index.

Saving step s writes one chunk, ``frames-<s>.npz``, holding the frames the window has not saved before (the
iteration's new frames) and, to bound the disk, the surviving frames of every older chunk of which less than half
is still in the window; then the index.  A sampled window of a million frames that takes 131 k new frames an
iteration (the AlphaGateau paper's) so writes about the new frames each iteration instead of the whole window, and
the chunks on disk hold at most about twice the frames of the windows they serve.  Chunks no kept index reads are
deleted.  Every file is written to a temporary name and renamed into place, the chunk before the index, so a
process killed mid-save leaves the previous steps intact (and at most an unread chunk, deleted at the next save).

A step is complete when every process that wrote it wrote its index.  A step written by Q processes and restored
by P: with Q == P each process gets back its own window and random state; otherwise (a single process resuming a
multi-process run, or another number of processes) see :func:`window_share` and :func:`numpy_rng_share`.

Earlier layouts are still read (and converted to the compact window when resumed): a single-process run's
``replay/<s>/`` (orbax, dense arrays) and a multi-process run's ``replay/process-<i>/<s>.npz`` (dense arrays).
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

from zerolab.training.checkpoint import Checkpointer
from zerolab.training.file_system import writing
from zerolab.training.pending import PendingFrames
from zerolab.training.replay import (
    GAME_ITERATION,
    SOURCE_FIELDS,
    FrameCodec,
    FrameWindow,
    concatenate_stored,
    policy_width,
    with_policy_width,
)

logger = logging.getLogger(__name__)

PROCESS_DIRECTORY = re.compile(r"^process-(\d+)$")
INDEX = re.compile(r"^window-(\d+)\.npz$")
PENDING = re.compile(r"^pending-(\d+)\.npz$")
CHUNK = re.compile(r"^frames-(\d+)\.npz$")
LEGACY_ARCHIVE = re.compile(r"^(\d+)\.npz$")
METADATA_KEY = "metadata"


def window_share(windows: list[dict[str, np.ndarray]], process_index: int, process_count: int) -> dict[str, np.ndarray]:
    """Process ``process_index``'s frames (dense fields) out of the windows ``windows`` that the Q writers of a step
    saved.

    With Q == ``process_count``, its own.  Otherwise the Q windows are concatenated in process order and the process
    keeps frames ``process_index``, ``process_index + process_count``, ...: a single process keeps every frame of
    every writer (a run written by 2 processes resumes in one process with both windows, one after the other).
    """
    if len(windows) == process_count:
        return windows[process_index]
    windows = [window for window in windows if window]
    if not windows:
        return {}
    concatenated = {name: np.concatenate([window[name] for window in windows]) for name in windows[0]}
    return {name: array[process_index::process_count] for name, array in concatenated.items()}


def numpy_rng_share(states: list[dict | None], step: int, process_index: int, process_count: int
                    ) -> np.random.Generator | None:
    """The numpy generator process ``process_index`` continues with, from the random states of a step's writers.

    Process i continues writer i's state (with Q == P, its own; a single process continues writer 0's, as the
    train-state checkpoint records it).  None for a writer of the earliest single-process layout, whose state is the
    one in the train-state checkpoint.  A process with no writer of its own (more processes than writers) starts
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


@dataclasses.dataclass(frozen=True)
class LostFrames:
    """Frames of a saved window that could not be read back: how many, and the unreadable chunks (path and error)."""

    count: int = 0
    chunks: tuple[str, ...] = ()

    def plus(self, count: int, chunk: str) -> LostFrames:
        return LostFrames(self.count + count, self.chunks + (chunk,))


@dataclasses.dataclass
class RestoredReplay:
    """A step's replay for this process: its window, its numpy generator (None: the train-state checkpoint's) and
    the frames of the saved window that are not in it (unreadable chunks, when restored keeping the readable part)."""

    window: FrameWindow
    numpy_rng: np.random.Generator | None
    lost: LostFrames = LostFrames()
    pending: PendingFrames | None = None


def _write_npz(path: pathlib.Path, arrays: dict[str, np.ndarray], metadata: dict) -> None:
    """``arrays`` and ``metadata`` (JSON) as an uncompressed archive at ``path``, written to a temporary file first."""
    temporary = path.with_name(f"{path.name}.tmp")
    with writing(temporary), open(temporary, "wb") as stream:
        np.savez(stream, **arrays, **{METADATA_KEY: np.asarray(json.dumps(metadata))})
    os.replace(temporary, path)


def _read_metadata(path: pathlib.Path) -> dict:
    with np.load(path, allow_pickle=False) as archive:
        return json.loads(str(archive[METADATA_KEY]))


def _read_npz(path: pathlib.Path) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays and metadata of an archive; an unreadable one raises ``ValueError`` naming it."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files if name != METADATA_KEY}
            metadata = json.loads(str(archive[METADATA_KEY]))
    except FileNotFoundError:
        raise
    except Exception as error:  # noqa: BLE001 - a truncated or corrupt archive, whatever numpy or zipfile says
        raise ValueError(f"replay archive {path} cannot be read ({type(error).__name__}: {error})") from error
    return arrays, metadata


def _dense_window(arrays: dict[str, np.ndarray]) -> FrameWindow:
    """A window of an earlier layout's dense arrays, converted to the compact encoding (frames not saved yet)."""
    arrays = {name: np.asarray(value) for name, value in arrays.items() if name != "num_frames"}
    if "value_target" not in arrays or len(arrays["value_target"]) == 0:
        return FrameWindow.empty()
    return FrameWindow.from_fields(arrays)


class ProcessReplay:
    """The replay windows one process wrote under ``directory`` (``replay/process-<i>``), newest ``keep`` kept."""

    def __init__(self, directory: pathlib.Path, keep: int):
        self.directory = pathlib.Path(directory)
        self.keep = keep
        self._chunk_sizes: dict[int, int] = {}

    def index_path(self, step: int) -> pathlib.Path:
        return self.directory / f"window-{step}.npz"

    def chunk_path(self, chunk: int) -> pathlib.Path:
        return self.directory / f"frames-{chunk}.npz"

    def pending_path(self, step: int) -> pathlib.Path:
        return self.directory / f"pending-{step}.npz"

    def save_pending(self, step: int, pending: PendingFrames) -> None:
        """Writes step ``step``'s pending frames (before its index, which completes the step)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        arrays = {name: array for name, array in pending.window.arrays.items() if name not in SOURCE_FIELDS}
        if arrays:
            arrays = with_policy_width(arrays, policy_width(arrays))
        arrays["lane"] = np.asarray(pending.lane, np.int32)
        arrays["action"] = np.asarray(pending.action, np.int32)
        codec = pending.window.codec
        _write_npz(self.pending_path(step), arrays, {
            "step": step, "frames": len(pending), "codec": codec.to_json() if codec is not None else None,
            "lane_game_iteration": [int(i) for i in pending.lane_game_iteration]})

    def load_pending(self, step: int) -> PendingFrames | None:
        """Step ``step``'s pending frames, or None where the step saved none (runs made before games were carried
        from call to call)."""
        if not self.pending_path(step).exists():
            return None
        arrays, metadata = _read_npz(self.pending_path(step))
        lane = arrays.pop("lane")
        action = arrays.pop("action", None)  # None: saved before the waiting frames kept their moves
        lane_game_iteration = np.asarray(metadata["lane_game_iteration"], np.int32)
        if metadata["codec"] is None:
            return PendingFrames(FrameWindow.empty(), lane, lane_game_iteration, action)
        window = FrameWindow.unsaved(arrays, FrameCodec.from_json(metadata["codec"]))
        return PendingFrames(window, lane, lane_game_iteration, action)

    def legacy_path(self, step: int) -> pathlib.Path:
        return self.directory / f"{step}.npz"

    def _numbers(self, pattern: re.Pattern) -> list[int]:
        if not self.directory.is_dir():
            return []
        return sorted(int(match.group(1)) for name in os.listdir(self.directory) if (match := pattern.match(name)))

    def steps(self) -> list[int]:
        """Steps with an index (this layout) or a dense archive (the earlier multi-process layout)."""
        return sorted(set(self._numbers(INDEX)) | set(self._numbers(LEGACY_ARCHIVE)))

    def has_step(self, step: int) -> bool:
        return self.index_path(step).exists() or self.legacy_path(step).exists()

    def metadata(self, step: int) -> dict:
        path = self.index_path(step) if self.index_path(step).exists() else self.legacy_path(step)
        return _read_metadata(path)

    def chunk_size(self, chunk: int) -> int:
        if chunk not in self._chunk_sizes:
            self._chunk_sizes[chunk] = int(_read_metadata(self.chunk_path(chunk))["rows"])
        return self._chunk_sizes[chunk]

    def save(self, step: int, window: FrameWindow, metadata: dict, pending: PendingFrames | None = None
             ) -> pathlib.Path:
        """Writes step ``step``'s window: its unsaved frames (and those of mostly dropped chunks) as chunk ``step``,
        its pending frames (where given), then its index.  Updates the window's ``source_chunk``/``source_row`` to
        where its frames now are."""
        self.directory.mkdir(parents=True, exist_ok=True)
        chunks: dict[int, int] = {}
        if len(window):
            chunk, row = window.arrays["source_chunk"], window.arrays["source_row"]
            saved = (chunk >= 0) & (chunk < step)  # a chunk numbered `step` or later is being written again
            saved_chunks, live = np.unique(chunk[saved], return_counts=True)
            sparse = [int(c) for c, count in zip(saved_chunks, live) if 2 * count < self.chunk_size(int(c))]
            rewrite = np.flatnonzero(~saved | np.isin(chunk, sparse))
            if len(rewrite):
                part = {name: array[rewrite] for name, array in window.arrays.items() if name not in SOURCE_FIELDS}
                part = with_policy_width(part, policy_width(part))
                _write_npz(self.chunk_path(step), part, {"step": step, "rows": len(rewrite),
                                                          "codec": window.codec.to_json()})
                self._chunk_sizes[step] = len(rewrite)
                chunk[rewrite] = step
                row[rewrite] = np.arange(len(rewrite), dtype=row.dtype)
            chunks = {int(c): self.chunk_size(int(c)) for c in np.unique(chunk)}
            sources = {"source_chunk": chunk, "source_row": row}
        else:
            sources = {name: np.zeros(0, np.int32) for name in SOURCE_FIELDS}
        metadata = {**metadata, "frames": len(window), "chunks": {str(c): n for c, n in chunks.items()},
                    "codec": window.codec.to_json() if window.codec is not None else None}
        if pending is not None:
            self.save_pending(step, pending)
        else:
            self.pending_path(step).unlink(missing_ok=True)
        _write_npz(self.index_path(step), sources, metadata)
        self.prune()
        return self.index_path(step)

    def load(self, step: int, keep_readable: bool = False) -> tuple[FrameWindow, dict, LostFrames]:
        """Step ``step``'s window, exactly as it was saved (sources included), its metadata, and the frames lost.

        A chunk that cannot be read raises ``ValueError`` naming it; with ``keep_readable`` its frames are left out
        instead (the window keeps its other frames, in order) and counted in the returned :class:`LostFrames`.
        """
        if not self.index_path(step).exists():
            arrays, metadata = _read_npz(self.legacy_path(step))
            return _dense_window(arrays), metadata, LostFrames()
        sources, metadata = _read_npz(self.index_path(step))
        if metadata["codec"] is None:
            return FrameWindow.empty(), metadata, LostFrames()
        codec = FrameCodec.from_json(metadata["codec"])
        chunk, row = sources["source_chunk"], sources["source_row"]
        parts, positions, lost = [], [], LostFrames()
        for number in np.unique(chunk):
            at = np.flatnonzero(chunk == number)
            try:
                arrays, chunk_metadata = _read_npz(self.chunk_path(int(number)))
                arrays = {name: array[row[at]] for name, array in arrays.items()}
            except (ValueError, IndexError, OSError) as error:
                if not keep_readable:
                    raise
                lost = lost.plus(len(at), f"{self.chunk_path(int(number))} ({type(error).__name__}: {error})")
                continue
            if GAME_ITERATION not in arrays:  # a chunk of a run made before games were carried between calls
                arrays[GAME_ITERATION] = np.full(len(at), -1, np.int32)
            parts.append(FrameCodec.from_json(chunk_metadata["codec"]).recode(arrays, codec))
            positions.append(at)
        if not parts:
            return FrameWindow.empty(), metadata, lost
        stored = concatenate_stored(parts)
        kept = np.concatenate(positions)
        order = np.argsort(kept, kind="stable")
        arrays = {name: array[order] for name, array in stored.items()}
        arrays = with_policy_width(arrays, policy_width(arrays))
        kept = kept[order]
        arrays.update({"source_chunk": chunk[kept], "source_row": row[kept]})
        return FrameWindow(arrays, codec), metadata, lost

    def prune(self) -> None:
        """Keeps the newest ``keep`` steps (either layout) and the chunks their indices read."""
        for old in self.steps()[:-self.keep]:
            self.index_path(old).unlink(missing_ok=True)
            self.legacy_path(old).unlink(missing_ok=True)
            self.pending_path(old).unlink(missing_ok=True)
        self.collect_garbage()

    def collect_garbage(self) -> None:
        """Deletes the chunks (and temporary files) that no readable index reads."""
        referenced: set[int] = set()
        for step in self._numbers(INDEX):
            try:
                referenced |= {int(chunk) for chunk in _read_metadata(self.index_path(step))["chunks"]}
            except Exception as error:  # noqa: BLE001 - an unreadable index reads nothing
                logger.warning("replay index %s cannot be read (%s: %s)", self.index_path(step),
                               type(error).__name__, error)
        for chunk in self._numbers(CHUNK):
            if chunk not in referenced:
                self.chunk_path(chunk).unlink(missing_ok=True)
                self._chunk_sizes.pop(chunk, None)
        indexed = set(self._numbers(INDEX))
        for step in self._numbers(PENDING):
            if step not in indexed:  # written by a save that did not finish its index
                self.pending_path(step).unlink(missing_ok=True)
        for name in os.listdir(self.directory):
            if name.endswith(".npz.tmp"):
                (self.directory / name).unlink(missing_ok=True)

    def discard_after(self, step: int) -> None:
        for stale in [s for s in self.steps() if s > step]:
            logger.warning("discarding replay window %s (newer than the resumed step %d)",
                           self.directory / f"window-{stale}", step)
            self.index_path(stale).unlink(missing_ok=True)
            self.legacy_path(stale).unlink(missing_ok=True)
            self.pending_path(stale).unlink(missing_ok=True)
        if self.directory.is_dir():
            self.collect_garbage()


class ReplayCheckpoints:
    """Every process's replay window under ``directory`` (``workdir/replay``); see the module for the layouts."""

    def __init__(self, directory: pathlib.Path, keep: int):
        self.directory = pathlib.Path(directory).absolute()
        self.keep = keep
        self.single = Checkpointer(self.directory, keep=keep)  # the earliest single-process layout, read only

    def process_replay(self, process_index: int) -> ProcessReplay:
        return ProcessReplay(self.directory / f"process-{process_index}", self.keep)

    def steps(self) -> list[int]:
        """The steps with a replay window in any layout (a multi-process step's other writers are checked when it is
        restored)."""
        return sorted(set(self.single.steps()) | set(self.process_replay(0).steps()))

    def save(self, step: int, window: FrameWindow, numpy_rng: np.random.Generator,
             pending: PendingFrames | None = None) -> None:
        """Saves this process's window of ``step`` with the process's random state and pending frames (None: none
        saved, no lanes carried); earlier-layout steps beyond the newest ``keep`` are deleted."""
        metadata = {"iteration": step, "process_index": jax.process_index(), "process_count": jax.process_count(),
                    "numpy_rng": numpy_rng.bit_generator.state}
        self.process_replay(jax.process_index()).save(step, window, metadata, pending)
        newest = set(self.steps()[-self.keep:])
        for old in [s for s in self.single.steps() if s not in newest]:
            self.single.manager.delete(old)

    def discard_after(self, step: int) -> None:
        """Deletes the windows newer than ``step``, in every layout."""
        for stale in [s for s in self.single.steps() if s > step]:
            logger.warning("discarding checkpoint %s (newer than the resumed step %d)", self.directory / str(stale), step)
            self.single.manager.delete(stale)
        names = os.listdir(self.directory) if self.directory.is_dir() else []
        for name in sorted(names):
            if PROCESS_DIRECTORY.match(name):
                ProcessReplay(self.directory / name, self.keep).discard_after(step)

    def restore_newest(self) -> tuple[int, RestoredReplay] | None:
        """The newest readable step and its replay (for tools and tests that read a run's window), or None."""
        for step in reversed(self.steps()):
            restored = self.restore(step)
            if restored is not None:
                return step, restored
        return None

    def restore(self, step: int, keep_readable: bool = False) -> RestoredReplay | None:
        """This process's share of ``step``'s windows, or None (reported) when they cannot all be read.

        With ``keep_readable``, a window whose index reads but some of whose chunks do not comes back with the frames
        of its readable chunks (the others counted in :attr:`RestoredReplay.lost`) rather than as None.
        """
        process_index, process_count = jax.process_index(), jax.process_count()
        if step in self.single.steps():
            restored = self.single.restore_newest([step], {"window": None})
            if restored is None:
                return None
            window = _dense_window(dict(restored.items["window"]))
            if process_count > 1:
                fields = window_share([window.fields()], process_index, process_count)
                window = FrameWindow.from_fields(fields) if fields else FrameWindow.empty()
            return RestoredReplay(window, numpy_rng_share([None], step, process_index, process_count))
        try:
            return self._restore_processes(step, process_index, process_count, keep_readable)
        except Exception as error:  # noqa: BLE001 - any failure to read means: use the previous step
            logger.warning("replay windows of step %d in %s cannot be read (%s: %s); trying the previous step",
                           step, self.directory, type(error).__name__, error)
            return None

    def _restore_processes(self, step: int, process_index: int, process_count: int,
                           keep_readable: bool = False) -> RestoredReplay:
        """``step``'s window for this process: its own when as many processes wrote the step as run now; otherwise
        its share of every writer's frames (after checking that every writer's window is there)."""
        writers = int(self.process_replay(0).metadata(step)["process_count"])
        missing = [index for index in range(writers) if not self.process_replay(index).has_step(step)]
        if missing:
            raise FileNotFoundError(f"step {step} was written by {writers} processes; the windows of processes "
                                    f"{missing} are missing")
        if writers == process_count:
            own = self.process_replay(process_index)
            window, metadata, lost = own.load(step, keep_readable)
            return RestoredReplay(window, numpy_rng_share([metadata["numpy_rng"]], step, 0, 1), lost,
                                  own.load_pending(step))
        loaded = [self.process_replay(index).load(step, keep_readable) for index in range(writers)]
        fields = window_share([window.fields() for window, _, _ in loaded], process_index, process_count)
        window = FrameWindow.from_fields(fields) if fields else FrameWindow.empty()
        states = [metadata["numpy_rng"] for _, metadata, _ in loaded]
        lost = LostFrames(sum(item.count for _, _, item in loaded), sum((item.chunks for _, _, item in loaded), ()))
        return RestoredReplay(window, numpy_rng_share(states, step, process_index, process_count), lost)


def read_window(run_directory: str | pathlib.Path, step: int | None = None) -> tuple[int, FrameWindow]:
    """``(step, window)``: this process's replay window of a run directory's step ``step`` (default: the newest
    readable one), in any layout; for tools and tests that look at what a run trained on."""
    replay = ReplayCheckpoints(pathlib.Path(run_directory) / "replay", keep=1)
    if step is None:
        newest = replay.restore_newest()
        if newest is None:
            raise FileNotFoundError(f"no readable replay window in {replay.directory}")
        return newest[0], newest[1].window
    restored = replay.restore(step)
    if restored is None:
        raise FileNotFoundError(f"replay window of step {step} in {replay.directory} cannot be read")
    return step, restored.window
