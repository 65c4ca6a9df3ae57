"""Resumable chunked jobs: work split into numbered chunks, each committed atomically, spread over processes.

A job (generating games, annotating positions) is ``num_chunks`` independent chunks.  The parent process hands
chunks to a pool of worker processes (each owns its engine) and commits every finished chunk in two atomic steps:

1. the chunk's output is written to ``<name>.tmp``, flushed to disk and renamed to ``chunk-000042.<suffix>``;
2. the progress index ``progress.json`` (the completed chunk ids and the job's fingerprint) is rewritten the
   same way.

A run killed at any moment therefore leaves each chunk either complete or absent.  On restart the completed set
is the index plus any chunk file renamed after the last index write (a kill between the two steps); every other
chunk is done again, so no record is lost or written twice.  A directory made with different settings
(another fingerprint) is refused rather than mixed.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import multiprocessing.util
import os
import pathlib
import re
import signal
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from zerolab import progress_bar

logger = logging.getLogger(__name__)

PROGRESS_FILE = "progress.json"


class FingerprintMismatchError(ValueError):
    """A job directory was started with other settings or inputs; the message lists the differences."""


def write_atomically(path: pathlib.Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader (or a restart) sees either the old file or the new one."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as stream:
        stream.write(text)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(temporary, path)


class ChunkStore:
    """The chunk files and progress index of one job in ``directory``.

    Attributes:
      directory: where ``chunk-NNNNNN.<suffix>`` and ``progress.json`` live.
      num_chunks: how many chunks the job has.
      fingerprint: JSON-able settings and inputs that must match for a directory to be resumed.
    """

    def __init__(self, directory: str | pathlib.Path, num_chunks: int, fingerprint: Mapping[str, Any], suffix: str):
        self.directory = pathlib.Path(directory)
        self.num_chunks = int(num_chunks)
        self.fingerprint = json.loads(json.dumps(dict(fingerprint)))
        self.suffix = suffix
        self.directory.mkdir(parents=True, exist_ok=True)
        self._completed = self._load()

    @property
    def progress_path(self) -> pathlib.Path:
        return self.directory / PROGRESS_FILE

    def chunk_path(self, chunk: int) -> pathlib.Path:
        return self.directory / f"chunk-{chunk:06d}.{self.suffix}"

    def _load(self) -> set[int]:
        completed: set[int] = set()
        listed: set[int] | None = None
        if self.progress_path.exists():
            index = json.loads(self.progress_path.read_text())
            saved = index.get("fingerprint")
            if saved != self.fingerprint or index.get("num_chunks") != self.num_chunks:
                raise FingerprintMismatchError(
                    f"{self.directory} holds a job with other settings or inputs "
                    f"({_describe_differences(saved or {}, self.fingerprint)}); "
                    "use a new directory, or the same settings to resume")
            completed = set(index.get("completed_chunks", []))
            listed = set(completed)
        pattern = re.compile(rf"chunk-(\d{{6}})\.{re.escape(self.suffix)}$")
        on_disk = {int(m.group(1)) for p in self.directory.iterdir() if (m := pattern.match(p.name))}
        committed_late = on_disk - completed
        if committed_late:
            logger.info("%s: %d chunk(s) written after the last progress index; counted as done",
                        self.directory, len(committed_late))
        missing = completed - on_disk
        if missing:
            raise FileNotFoundError(f"{self.progress_path} lists chunks whose files are gone: {sorted(missing)[:10]}")
        completed |= {c for c in committed_late if c < self.num_chunks}
        if completed != listed:  # a resumed, finished job leaves its index unwritten
            self._write_index(completed)
        return completed

    def _write_index(self, completed: set[int]) -> None:
        index = {"fingerprint": self.fingerprint, "num_chunks": self.num_chunks,
                 "completed_chunks": sorted(completed)}
        write_atomically(self.progress_path, json.dumps(index, indent=1))

    def completed(self) -> set[int]:
        return set(self._completed)

    def pending(self) -> list[int]:
        return [c for c in range(self.num_chunks) if c not in self._completed]

    @property
    def done(self) -> bool:
        return len(self._completed) == self.num_chunks

    def commit(self, chunk: int, text: str) -> None:
        """Write chunk ``chunk``'s output, then record it in the progress index (each step atomic)."""
        if not 0 <= chunk < self.num_chunks:
            raise IndexError(f"chunk {chunk} is outside [0, {self.num_chunks})")
        write_atomically(self.chunk_path(chunk), text)
        self._completed.add(chunk)
        self._write_index(self._completed)

    def read(self, chunk: int) -> str:
        return self.chunk_path(chunk).read_text(encoding="utf-8")


def _describe_differences(saved: Mapping[str, Any], wanted: Mapping[str, Any]) -> str:
    keys = sorted(set(saved) | set(wanted))
    differences = [f"{k}: {saved.get(k, '<missing>')!r} there, {wanted.get(k, '<missing>')!r} now"
                   for k in keys if saved.get(k) != wanted.get(k)]
    return "; ".join(differences)[:1000] or "chunk count differs"


def run_chunks(
    store: ChunkStore,
    tasks: Mapping[int, Any],
    work: Callable[[Any], tuple[str, list[dict[str, str]]]],
    initializer: Callable[..., Callable[[], None] | None],
    initializer_arguments: tuple,
    num_workers: int,
    description: str,
    unit: str,
    task_size: Callable[[Any], int] = lambda task: 1,
    show_progress: bool = True,
) -> list[dict[str, str]]:
    """Do every pending chunk and commit it; returns the problems the workers reported (each also logged).

    Args:
      store: the job's chunk store.
      tasks: chunk id → the picklable task ``work`` receives (only pending chunks are run).
      work: top-level function ``task -> (chunk text, problems)`` run in a worker; problems are dicts with
        ``location`` and ``message``.
      initializer: top-level function run once in each worker, with ``initializer_arguments``; it returns a
        callable that the worker runs when it exits (closes its engines), or None.
      num_workers: worker processes; 0 runs everything in this process (for debugging).
      description, unit: the progress bar's text; ``task_size`` gives the units of one task.
    """
    pending = [chunk for chunk in store.pending() if chunk in tasks]
    total = sum(task_size(tasks[c]) for c in range(store.num_chunks) if c in tasks)
    already = total - sum(task_size(tasks[c]) for c in pending)
    problems: list[dict[str, str]] = []
    if not pending:
        return problems
    with progress_bar(description, total=total, unit=unit, enabled=show_progress) as bar:
        bar.advance(already)
        for chunk, (text, chunk_problems) in _results(pending, tasks, work, initializer, initializer_arguments,
                                                       num_workers):
            store.commit(chunk, text)
            for problem in chunk_problems:
                logger.warning("%s: %s", problem["location"], problem["message"])
            problems.extend(chunk_problems)
            bar.advance(task_size(tasks[chunk]))
    return problems


def _results(pending, tasks, work, initializer, initializer_arguments, num_workers) -> Iterator[tuple[int, Any]]:
    if num_workers <= 0:
        finalizer = initializer(*initializer_arguments)
        try:
            for chunk in pending:
                yield chunk, work(tasks[chunk])
        finally:
            if finalizer is not None:
                finalizer()
        return
    context = multiprocessing.get_context("spawn")  # no fork: the parent may hold JAX's threads
    pool = context.Pool(min(num_workers, len(pending)), initializer=_ignore_interrupt_then,
                        initargs=(initializer, initializer_arguments))
    try:
        for chunk, result in pool.imap_unordered(_Tagged(work), [(c, tasks[c]) for c in pending]):
            yield chunk, result
        pool.close()
    except BaseException:
        pool.terminate()  # workers die; their engines see end-of-file on stdin and quit
        raise
    finally:
        pool.join()


def _ignore_interrupt_then(initializer: Callable[..., Callable[[], None] | None], arguments: Iterable[Any]) -> None:
    """Workers leave Ctrl-C to the parent, which stops the pool; then the job's own initialiser runs.

    Its finaliser is registered to run when the worker exits, before Python waits for threads: an open
    python-chess engine keeps a thread that would otherwise hold the worker (and the pool's ``join``) forever.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    finalizer = initializer(*arguments)
    if finalizer is not None:
        multiprocessing.util.Finalize(None, finalizer, exitpriority=10)


class _Tagged:
    """``(chunk, task) -> (chunk, work(task))``, picklable for the pool."""

    def __init__(self, work: Callable[[Any], Any]):
        self.work = work

    def __call__(self, item: tuple[int, Any]) -> tuple[int, Any]:
        chunk, task = item
        return chunk, self.work(task)


__all__ = ["ChunkStore", "FingerprintMismatchError", "run_chunks", "write_atomically"]
