"""Run metrics: ``metrics.jsonl`` is the source of truth (one JSON object per iteration); TensorBoard is a view."""

from __future__ import annotations

import json
import math
import os
import pathlib
from collections.abc import Mapping
from typing import Any

from zerolab.training.file_system import writing


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item") and getattr(value, "size", 2) == 1:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class MetricsLog:
    """Appends iteration records to ``workdir/metrics.jsonl`` and mirrors scalars to TensorBoard (``workdir/tb``).

    ``reconcile(last_iteration, last_record)`` makes the file hold each completed iteration exactly once after a
    restart: records past the restored checkpoint are dropped, a torn last line is removed, and the record of the
    restored iteration (kept in the checkpoint) is appended if the crash came before it was written.  TensorBoard
    agrees: a record is written there before the file, and the resumed run's event file starts by purging the steps
    past the restored iteration (tensorboardX's ``purge_step``, a SessionLog START that readers apply to the earlier
    files) — and the restored iteration too where the file lacked it, which it then writes again — so every step is
    shown once, even after a kill between the two writes.
    """

    def __init__(self, workdir: str | pathlib.Path, tensorboard: bool = True):
        self.path = pathlib.Path(workdir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tensorboard_dir = pathlib.Path(workdir) / "tb"
        self._writer = None
        self._tensorboard = tensorboard
        self._purge_step: int | None = None  # the first step this process writes again (set by reconcile)

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        records = []
        for line in self.path.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line torn by a crash mid-write
        return records

    def _rewrite(self, records: list[dict[str, Any]]) -> None:
        temporary = self.path.with_suffix(".jsonl.tmp")
        with writing(temporary):
            temporary.write_text("".join(json.dumps(r) + "\n" for r in records))
        os.replace(temporary, self.path)

    def reconcile(self, last_iteration: int, last_record: Mapping[str, Any] | None) -> None:
        kept = [r for r in self.records() if r.get("iteration", -1) <= last_iteration]
        seen = set()
        unique = []
        for record in kept:
            if record.get("iteration") not in seen:
                seen.add(record.get("iteration"))
                unique.append(record)
        restored = last_record is not None and last_iteration not in seen  # the crash came before it was written
        if restored:
            unique.append(_jsonable(dict(last_record)))
        self._rewrite(unique)
        self._purge_step = last_iteration if restored else last_iteration + 1
        if restored:
            self._write_tensorboard(unique[-1])

    def append(self, record: Mapping[str, Any]) -> None:
        """TensorBoard first, then the file: a crash between the two leaves the file without the record, so the
        restart's :meth:`reconcile` writes it to both (a record in the file is always in TensorBoard too)."""
        record = _jsonable(dict(record))
        self._write_tensorboard(record)
        with writing(self.path), open(self.path, "a") as stream:
            stream.write(json.dumps(record) + "\n")
            stream.flush()
            os.fsync(stream.fileno())

    def _write_tensorboard(self, record: Mapping[str, Any]) -> None:
        if not self._tensorboard:
            return
        if self._writer is None:
            from tensorboardX import SummaryWriter

            self._writer = SummaryWriter(str(self._tensorboard_dir), purge_step=self._purge_step)
        step = int(record.get("iteration", 0))
        for key, value in record.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "iteration":
                self._writer.add_scalar(key, value, step)
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
