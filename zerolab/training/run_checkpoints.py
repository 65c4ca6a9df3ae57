"""A run's checkpoints, written and read back whole: :class:`RunState` (what a run carries from one iteration to
the next), :class:`RunCheckpoints` (train state, replay window, lanes and pending frames of a step, saved together;
the resume from the readable step that keeps the most self-play work, :class:`ResumePoint`).
"""

from __future__ import annotations

import dataclasses
import logging
import pathlib
from collections.abc import Callable, Iterator
from typing import Any

import jax
import ml_collections
import numpy as np

from zerolab import config as config_lib
from zerolab.training.checkpoint import Checkpointer
from zerolab.training.pending import PendingFrames
from zerolab.training.replay import FrameWindow
from zerolab.training.replay_checkpoints import ReplayCheckpoints
from zerolab.training.file_system import writing
from zerolab.training.train_state import TrainState

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ResumePoint:
    """A step a run may resume from: the frames its run had played (``frames_seen``) and the frames of its replay
    window that cannot be read back (``lost_frames``, in unreadable chunks)."""

    step: int
    frames_seen: int
    lost_frames: int

    @property
    def kept_frames(self) -> int:
        """The self-play work this point keeps: the frames played up to it, less those of its window it lost."""
        return self.frames_seen - self.lost_frames


@dataclasses.dataclass
class RunState:
    """Everything a run carries from one iteration to the next (and through a checkpoint).

    ``lanes``: self-play's lanes, the games in progress (:class:`~zerolab.selfplay.types.Lanes`, leaves ``[B, ...]``
    over all devices; None before the first call); ``pending``: this process's frames of those games, waiting for
    their game's end (:class:`~zerolab.training.pending.PendingFrames`; None before the first call)."""

    iteration: int
    frames_seen: int
    train_state: TrainState
    window: FrameWindow
    numpy_rng: np.random.Generator
    last_record: dict | None = None
    lanes: Any = None
    pending: PendingFrames | None = None


class RunCheckpoints:
    """Train-state checkpoints (``workdir/checkpoints``) and replay-window checkpoints (``workdir/replay``).

    A step is complete when both are written; restoring picks the newest step readable in both.  Both keep the
    newest ``keep`` steps, so a run whose newest checkpoints cannot be read falls back at most ``keep - 1`` steps
    (to the oldest of those ``keep``).  A window whose index reads but one of whose chunks does not (a chunk is
    read by every window its frames survive in) still offers its readable frames: :meth:`restore` takes the step
    that keeps the most self-play work (:class:`ResumePoint`), logging the frames lost.  The train states of every ``keep_period``-th step are kept as well, for
    rating, but without their (large) replay window they are not points a run resumes from.  When no complete step
    can be read, :meth:`restore` stops with :class:`~zerolab.training.checkpoint.UnreadableCheckpointError` rather than start
    the run again over its own history.

    On several processes the train state is written collectively (orbax), and each process saves and restores its
    own replay window and numpy random state (:mod:`zerolab.training.replay_checkpoints`, which also says what a single
    process resuming a multi-process run restores: every process's window, concatenated).
    """

    def __init__(self, workdir: pathlib.Path, keep: int, keep_period: int):
        self.states = Checkpointer(workdir / "checkpoints", keep=keep, keep_period=keep_period)
        self.replay = ReplayCheckpoints(workdir / "replay", keep=keep)

    def save(self, run: RunState, config: ml_collections.ConfigDict) -> None:
        """Writes step ``run.iteration``: the replay window and the pending frames (each process its own), then the
        train state with the self-play lanes (an orbax item ``lanes``, where the run has them) and the metadata."""
        metadata = {
            "iteration": run.iteration,
            "frames_seen": run.frames_seen,
            "numpy_rng": run.numpy_rng.bit_generator.state,
            "config": config_lib.to_json(config),
            "metrics": run.last_record,
            "lanes": run.lanes is not None,
        }
        self.replay.save(run.iteration, run.window, run.numpy_rng, run.pending if run.lanes is not None else None)
        items = {"train_state": jax.device_get(run.train_state)}
        if run.lanes is not None:  # sharded over the devices: orbax writes each process's lanes (one process: all)
            items["lanes"] = jax.device_get(run.lanes) if jax.process_count() == 1 else run.lanes
        with writing(self.states.directory / str(run.iteration)):
            self.states.save(run.iteration, items, metadata)

    def discard_after(self, step: int) -> None:
        """Deletes checkpoints newer than ``step`` (left by a run that is resumed from ``step``)."""
        for stale in [s for s in self.states.steps() if s > step]:
            logger.warning("discarding checkpoint %s (newer than the resumed step %d)",
                           self.states.directory / str(stale), step)
            self.states.manager.delete(stale)
        self.replay.discard_after(step)

    def complete_steps(self) -> list[int]:
        return sorted(set(self.states.steps()) & set(self.replay.steps()))

    def restore(self, template: TrainState, lanes_template: Callable[[], Any] | None = None) -> RunState | None:
        """The run state to resume from (:func:`resume_candidates` says which step); None for a new run (no train
        state saved yet).  Raises ``UnreadableCheckpointError`` when train states exist but no step has both a
        readable train state and a readable window index.  ``lanes_template()``: the self-play lanes' structure
        (host arrays) to restore a step's lanes into; None: lanes are not restored."""
        best, passed = None, []
        for candidate, state, replay in self.resume_candidates(template, lanes_template):
            if best is None or candidate.kept_frames > best[0].kept_frames:
                if best is not None:
                    passed.append((best[0], best[2]))
                best = candidate, state, replay
            else:
                passed.append((candidate, replay))
            if not candidate.lost_frames:
                break
        if best is not None:
            candidate, state, replay = best
            if candidate.lost_frames:
                logger.warning(
                    "resuming from step %d with the readable part of its replay window: %d frames lost with the "
                    "unreadable %s; %d of the %d frames played so far are kept (no kept step keeps more)",
                    candidate.step, candidate.lost_frames, ", ".join(replay.lost.chunks), candidate.kept_frames,
                    candidate.frames_seen)
            for newer, newer_replay in (item for item in passed if item[0].step > candidate.step):
                logger.warning(
                    "not resuming from step %d: its replay window lost %d frames with the unreadable %s, more than the "
                    "%d frames played since step %d, whose window is whole", newer.step, newer.lost_frames,
                    ", ".join(newer_replay.lost.chunks), newer.frames_seen - candidate.frames_seen, candidate.step)
            return self._run_state(state, replay)
        state_steps = self.states.steps()
        if state_steps:
            from zerolab.training.checkpoint import UnreadableCheckpointError

            raise UnreadableCheckpointError(
                f"no complete readable checkpoint to resume from: train states {state_steps} in "
                f"{self.states.directory}, replay windows {self.replay.steps()} in {self.replay.directory} (the "
                f"unreadable ones are named above); a run falls back at most checkpoint.keep - 1 steps.  Move the "
                f"work directory aside to start again, or repair the checkpoints"
            )
        return None

    def resume_candidates(self, template: TrainState, lanes_template: Callable[[], Any] | None = None
                          ) -> Iterator[tuple[ResumePoint, Any, Any]]:
        """``(point, train state, replay)`` of the steps a run may resume from, newest first: each step with a
        readable train state and a readable window index, its window restored with its readable chunks.

        Stops at the first step older than one whose window is whole, and at the first step whose frames played
        are no more than a newer candidate keeps (an older step cannot keep more): :meth:`restore` takes the one
        that keeps the most frames (:attr:`ResumePoint.kept_frames`), the newest of equals.
        """
        most_kept = None
        host_template = jax.device_get(template)

        def templates(metadata: dict) -> dict:
            if metadata.get("lanes") and lanes_template is not None:
                return {"train_state": host_template, "lanes": lanes_template()}
            return {"train_state": host_template}

        for step in reversed(self.complete_steps()):
            state = self.states.restore_newest([step], templates)
            if state is None:
                continue
            frames_seen = int(state.metadata["frames_seen"])
            if most_kept is not None and frames_seen <= most_kept:
                return
            replay = self.replay.restore(step, keep_readable=True)
            if replay is None:
                continue
            point = ResumePoint(step, frames_seen, replay.lost.count)
            most_kept = point.kept_frames if most_kept is None else max(most_kept, point.kept_frames)
            yield point, state, replay
            if not point.lost_frames:
                return

    @staticmethod
    def _run_state(state, replay) -> RunState:
        rng = replay.numpy_rng
        if rng is None:  # the single-process layout: the random state is the train-state checkpoint's
            rng = np.random.default_rng()
            rng.bit_generator.state = state.metadata["numpy_rng"]
        lanes, pending = state.items.get("lanes"), replay.pending
        if (lanes is None) != (pending is None):
            # e.g. a run of several processes resumed by another number of them: the lanes cannot be shared out
            logger.warning("step %s saved %s but not %s: self-play starts fresh games (%d pending frames dropped)",
                           state.metadata["iteration"], "lanes" if lanes is not None else "pending frames",
                           "their pending frames" if lanes is not None else "lanes",
                           0 if pending is None else len(pending))
            lanes, pending = None, None
        return RunState(
            iteration=int(state.metadata["iteration"]),
            frames_seen=int(state.metadata["frames_seen"]),
            train_state=state.items["train_state"],
            window=replay.window,
            numpy_rng=rng,
            last_record=state.metadata.get("metrics"),
            lanes=lanes,
            pending=pending,
        )

    def saved_config(self) -> ml_collections.ConfigDict | None:
        for step in reversed(self.states.steps()):
            try:
                return config_lib.from_json(self.states.read_metadata(step)["config"])
            except Exception:  # noqa: BLE001 - unreadable metadata: look at the previous checkpoint
                continue
        return None


__all__ = ["ResumePoint", "RunCheckpoints", "RunState"]
