"""Record files and the training data loader: ArrayRecord files read through grain.

A dataset directory (written by :func:`distill.data.build.build`) holds, for each split (``train``, ``test``):

- ``positions.array_record``: one record per board — ``{"fen", "value", "moves", "action_values", "games"}``
  (state-value and behavioural-cloning training, and evaluation);
- ``action_values.array_record``: one record per legal move of every board — ``{"fen", "move",
  "action_value"}`` (action-value training, the paper's main dataset).

Records are compact JSON.  ArrayRecord gives random access by index, so grain's :class:`IndexSampler` can
shuffle globally (a fresh permutation every epoch, from the seed) and shard by index: host ``i`` of ``n`` reads
every record whose position in the shuffled order falls in its shard, so hosts never see the same record.  The
loader's position is a small JSON state (``iterator.get_state()``) that the trainer checkpoints with the model;
``iterator.set_state`` continues from exactly the next batch.
"""

from __future__ import annotations

import json
import pathlib
import threading
from collections.abc import Iterable
from typing import Any

import grain.python as grain
import numpy as np
from absl import flags
from array_record.python import array_record_module

from distill.predictors import Predictor

SPLITS = ("train", "test")
RECORD_KINDS = ("positions", "action_values")
WRITER_OPTIONS = "group_size:1,uncompressed"  # one record per group, not compressed: cheapest random access


def record_path(dataset_directory: str | pathlib.Path, split: str, kind: str) -> pathlib.Path:
    if split not in SPLITS or kind not in RECORD_KINDS:
        raise ValueError(f"split must be one of {SPLITS} and kind one of {RECORD_KINDS}, got {split!r}, {kind!r}")
    return pathlib.Path(dataset_directory) / split / f"{kind}.array_record"


def encode(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode("utf-8")


def decode(data: bytes) -> dict[str, Any]:
    return json.loads(data)


def write_records(path: str | pathlib.Path, records: Iterable[dict[str, Any]]) -> int:
    """Write ``records`` to the ArrayRecord file ``path``; returns how many."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = array_record_module.ArrayRecordWriter(str(path), WRITER_OPTIONS)
    count = 0
    try:
        for record in records:
            writer.write(encode(record))
            count += 1
    finally:
        writer.close()
    return count


class ArrayRecordFile:
    """One ArrayRecord file as a grain random-access data source: ``len`` and ``source[index] -> bytes``.

    grain's own ``ArrayRecordDataSource`` fetches a record with ``reader.read([index])``, array_record's parallel
    read-by-indices path, which dispatches to a thread pool on every call; this source reads one record with a
    range read, ``reader.read(index, index + 1)``, two orders of magnitude cheaper per record (measured in
    distill/README.md, "Data path").  Each thread (and each grain worker process, after unpickling) opens its own
    reader.
    """

    def __init__(self, path: str | pathlib.Path):
        self.path = str(path)
        self._local = threading.local()
        self._length = self._reader().num_records()

    def _reader(self):
        reader = getattr(self._local, "reader", None)
        if reader is None:
            reader = self._local.reader = array_record_module.ArrayRecordReader(self.path,
                                                                                "readahead_buffer_size:0")
        return reader

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: int) -> bytes:
        index = int(index)
        if not 0 <= index < self._length:
            raise IndexError(f"record {index} of {self.path}, which has {self._length}")
        return self._reader().read(index, index + 1)[0]

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "length": self._length}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path, self._length, self._local = state["path"], state["length"], threading.local()

    def __repr__(self) -> str:
        return f"ArrayRecordFile({self.path!r}, records={self._length})"


def data_source(path: str | pathlib.Path) -> ArrayRecordFile:
    path = pathlib.Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no record file {path}; build the dataset first (python -m distill.data build)")
    return ArrayRecordFile(path)


def read_all(path: str | pathlib.Path) -> list[dict[str, Any]]:
    """Every record of a file, in order (for the small test split)."""
    source = data_source(path)
    return [decode(source[index]) for index in range(len(source))]


class ToExamples(grain.MapTransform):
    """A batch of encoded records → ``{"tokens": int32 [B, 78], "targets": int32 [B]}`` for ``predictor``."""

    def __init__(self, predictor: Predictor):
        self.predictor = predictor

    def map(self, batch: np.ndarray) -> dict[str, np.ndarray]:
        examples = [self.predictor.training_example(decode(data)) for data in batch]
        return {"tokens": np.stack([tokens for tokens, _ in examples]),
                "targets": np.array([target for _, target in examples], dtype=np.int32)}


def make_loader(dataset_directory: str | pathlib.Path, predictor: Predictor, batch_size: int, seed: int,
                split: str = "train", shard_options: grain.ShardOptions | None = None, shuffle: bool = True,
                num_epochs: int | None = None, worker_count: int = 0, read_threads: int = 0) -> grain.DataLoader:
    """A grain loader of ``batch_size`` examples per host for ``predictor`` from one split.

    Args:
      shard_options: which part of the data this host reads; default one shard per JAX process
        (``grain.ShardByJaxProcess``).  The batch is this host's part of the global batch.
      num_epochs: None repeats forever (training); 1 reads each record once (evaluation).
      worker_count: grain worker processes (0 decodes in this process).
      read_threads: grain's record-reading threads; 0 reads in the calling thread, which was the fastest here
        (grain's prefetch threads poll their queue and cost more than the ~40 µs a record takes to read).
    """
    if worker_count > 0 and not flags.FLAGS.is_parsed():
        # grain's worker processes read absl flags, which only absl's own entry points parse; use their defaults
        flags.FLAGS.mark_as_parsed()
    source = data_source(record_path(dataset_directory, split, predictor.record_kind))
    sampler = grain.IndexSampler(
        num_records=len(source), shard_options=shard_options or grain.ShardByJaxProcess(drop_remainder=True),
        shuffle=shuffle, num_epochs=num_epochs, seed=seed)
    return grain.DataLoader(data_source=source, sampler=sampler,
                            operations=[grain.Batch(batch_size, drop_remainder=True), ToExamples(predictor)],
                            worker_count=worker_count,
                            read_options=grain.ReadOptions(num_threads=read_threads,
                                                           prefetch_buffer_size=0 if read_threads == 0 else 256))


__all__ = ["RECORD_KINDS", "ArrayRecordFile", "SPLITS", "ToExamples", "data_source", "decode", "encode",
           "make_loader", "read_all", "record_path", "write_records"]
