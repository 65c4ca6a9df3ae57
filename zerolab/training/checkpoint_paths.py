"""Where a run's checkpoints are: a run directory (``RUN/checkpoints/<step>/``) or one checkpoint step directory, read
with :mod:`pathlib` alone — no orbax, no JAX — so that a front end checks a checkpoint before anything heavy is
imported (``python -m zerolab uci`` answers ``uciok`` at once) with the same rule the loaders use."""

from __future__ import annotations

import pathlib


def resolve_checkpoint(path: str | pathlib.Path, step: int | None = None) -> tuple[pathlib.Path, int | None]:
    """``(checkpoints directory, step)`` for a run directory (``step``, or None: the newest) or a checkpoint step
    directory (its own step).

    Raises:
      FileNotFoundError: ``path`` is neither.
    """
    path = pathlib.Path(path)
    if path.name.isdigit() and path.parent.name == "checkpoints":
        return path.parent, int(path.name)
    if (path / "checkpoints").is_dir():
        return path / "checkpoints", step
    raise FileNotFoundError(f"{path} is neither a run directory (with checkpoints/) nor a checkpoint step directory "
                            "(RUN/checkpoints/STEP)")


def step_directories(directory: str | pathlib.Path) -> list[int]:
    """The steps of a checkpoints directory's numbered entries, sorted (which of them can be read is the loader's
    business: :meth:`zerolab.training.checkpoint.Checkpointer.restore_newest`)."""
    directory = pathlib.Path(directory)
    return sorted(int(entry.name) for entry in directory.iterdir() if entry.name.isdigit() and entry.is_dir())
