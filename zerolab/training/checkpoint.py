"""Checkpoints: an orbax ``CheckpointManager`` over named items, written synchronously and restored defensively.

A save is atomic (orbax writes a temporary directory and renames it when complete), so a process killed during a
save leaves the previous checkpoints intact.  ``restore_newest`` walks back from the newest step: a checkpoint that
cannot be read is reported by its path and the one before it is used.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import logging
import pathlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orbax.checkpoint as ocp

logger = logging.getLogger(__name__)

VERSIONED_LIBRARIES = ("jax", "jaxlib", "flax", "optax", "mctx", "pgx", "orbax-checkpoint", "chex", "numpy")


def library_versions() -> dict[str, str]:
    versions = {}
    for name in VERSIONED_LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


@dataclasses.dataclass
class Restored:
    """A checkpoint read back: its step, its pytree items and its JSON metadata."""

    step: int
    items: dict[str, Any]
    metadata: dict[str, Any]
    path: pathlib.Path


class UnreadableCheckpointError(RuntimeError):
    """A directory holds checkpoints but none of them can be read (each was reported in the log)."""


class Checkpointer:
    """Saves and restores ``{name: pytree}`` items plus a JSON ``metadata`` dict under ``directory/<step>/``.

    Pytrees hold numpy or jax arrays (scalars as 0-d arrays).  Items restored with a template get its structure,
    shapes and shardings; items restored without one come back as numpy arrays of the saved shapes (used for the
    replay window, whose size changes).
    """

    def __init__(self, directory: str | pathlib.Path, keep: int = 3, keep_period: int | None = None):
        """Keeps the newest ``keep`` steps and, with ``keep_period``, every step divisible by it."""
        self.directory = pathlib.Path(directory).absolute()
        options = ocp.CheckpointManagerOptions(max_to_keep=keep, keep_period=keep_period or None, create=True,
                                               enable_async_checkpointing=False)
        self.manager = ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        self.manager.reload()
        return sorted(self.manager.all_steps())

    def save(self, step: int, items: Mapping[str, Any], metadata: Mapping[str, Any]) -> pathlib.Path:
        """Writes step ``step``; a step of that number already there (left by a run that did not finish it, or
        unreadable) is replaced, with a warning, rather than refused."""
        metadata = {**metadata, "library_versions": library_versions()}
        if step in self.steps():
            logger.warning("replacing checkpoint %s", self.directory / str(step))
            self.manager.delete(step)
        arguments = {name: ocp.args.StandardSave(item) for name, item in items.items()}
        arguments["metadata"] = ocp.args.JsonSave(dict(metadata))
        self.manager.save(step, args=ocp.args.Composite(**arguments), force=True)
        self.manager.wait_until_finished()
        return self.directory / str(step)

    def read_metadata(self, step: int) -> dict[str, Any]:
        restored = self.manager.restore(step, args=ocp.args.Composite(metadata=ocp.args.JsonRestore()))
        return dict(restored["metadata"])

    def restore(self, step: int, templates: Mapping[str, Any | None]) -> Restored:
        arguments = {
            name: ocp.args.StandardRestore(template) if template is not None else ocp.args.StandardRestore()
            for name, template in templates.items()
        }
        arguments["metadata"] = ocp.args.JsonRestore()
        restored = self.manager.restore(step, args=ocp.args.Composite(**arguments))
        items = {name: restored[name] for name in templates}
        return Restored(step, items, dict(restored["metadata"]), self.directory / str(step))

    def restore_newest(
        self,
        steps: Sequence[int] | None = None,
        templates: Mapping[str, Any | None] | Callable[[dict[str, Any]], Mapping[str, Any | None]] = None,
    ) -> Restored | None:
        """The first readable checkpoint of ``steps`` (default: all, newest first), or None when none can be read.

        ``templates`` is a mapping as for :meth:`restore`, or a function of a step's metadata that returns one (for
        checkpoints whose config decides the shapes).  A checkpoint that cannot be read is reported by its path and
        passed; this is the project's one "newest readable checkpoint" rule, used by resumed runs, checkpoint
        agents and the distill trainer.
        """
        for step in (list(reversed(self.steps())) if steps is None else steps):
            try:
                step_templates = templates(self.read_metadata(step)) if callable(templates) else templates
                return self.restore(step, step_templates or {})
            except Exception as error:  # noqa: BLE001 - any failure to read means: use the previous checkpoint
                logger.warning("checkpoint %s cannot be read (%s: %s); trying the previous one",
                               self.directory / str(step), type(error).__name__, error)
        return None

    def discard_after(self, step: int) -> list[int]:
        """Deletes the checkpoints newer than ``step`` (left behind when a run resumes from ``step`` because they
        could not be read), so that the resumed run can save those steps again; returns the deleted steps."""
        stale = [s for s in self.steps() if s > step]
        for stale_step in stale:
            logger.warning("discarding checkpoint %s (newer than the resumed step %d)",
                           self.directory / str(stale_step), step)
            self.manager.delete(stale_step)
        return stale

    def close(self) -> None:
        self.manager.close()
