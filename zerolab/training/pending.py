"""Pending frames: the frames of games still running in self-play's lanes, kept on the host until their game ends.

Self-play's lanes are carried from call to call (:func:`zerolab.selfplay.scan.make_play_fn`'s ``play_lanes``), so a
game may span calls: it ends only when it is terminal or reaches ``selfplay.max_game_plies``.  A call's frames whose
game ended inside the call have their value targets from the call's own reverse scan; the others wait here,
:class:`PendingFrames`, one process's frames in lane order and, in each lane, ply order.  When a later call ends a
lane's game, :func:`settle` gives the game's waiting frames their value targets by the same reverse scan, seeded with
the value the call gave its first ply (:func:`zerolab.selfplay.hooks.backward_game_values` with ``carry_in``), and
they enter the replay window with the call's frames whose game ended.  No frame enters the window without a value
target (:func:`settle` counts any that would, ``frames_entered_without_value``: 0).

Each frame records the iteration that began its game (``game_iteration``, as KataGo records the networks a game
spans): a game begun under an older network is kept and finished under the newer ones.

The pending frames and the iteration that began each lane's game are saved with each step's replay window
(:mod:`zerolab.training.replay_checkpoints`, ``pending-<s>.npz``) and the lanes themselves with the train state
(:class:`zerolab.training.run_checkpoints.RunCheckpoints`), so that a run killed and resumed plays on bit for bit.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from zerolab.selfplay.hooks import backward_game_values
from zerolab.training.replay import GAME_ITERATION, FrameWindow, concatenate_stored


@dataclasses.dataclass
class PendingFrames:
    """One process's frames of the games running in its lanes, waiting for their game's end.

    Attributes:
      window: the frames, stored as the replay window stores them (value targets not known yet), in lane order
        and, in each lane, ply order; an empty window (no arrays) when none wait.
      lane: [P] int32 the lane of each frame (this process's lanes, numbered from 0).
      lane_game_iteration: [B] int32 the iteration that began each lane's game (whose call played its first ply).
      action: [P] int32 the move played from each frame's position, or -1 where it was not recorded (frames saved
        before actions were kept); what the game's record (PGN) is replayed from once the game ends.
    """

    window: FrameWindow
    lane: np.ndarray
    lane_game_iteration: np.ndarray
    action: np.ndarray | None = None

    def __post_init__(self):
        if self.action is None:
            self.action = np.full(len(self.lane), -1, np.int32)
        if len(self.action) != len(self.lane):
            raise ValueError(f"PendingFrames: {len(self.action)} actions for {len(self.lane)} frames")

    @classmethod
    def fresh(cls, num_lanes: int, iteration: int) -> PendingFrames:
        """No frame waiting; every lane's game began in ``iteration`` (the lanes' first games)."""
        return cls(FrameWindow.empty(), np.zeros(0, np.int32), np.full(num_lanes, iteration, np.int32))

    def __len__(self) -> int:
        return len(self.window)

    def earlier_actions(self) -> dict[int, np.ndarray]:
        """``{lane: actions}``: the moves each lane's running game played in earlier calls, in ply order (lanes whose
        waiting frames all recorded their move), for the records of games that end in the next call
        (:func:`zerolab.selfplay.records.complete_games`)."""
        actions = {}
        for lane in np.unique(self.lane):
            played = np.asarray(self.action)[self.lane == lane]
            if (played >= 0).all():
                actions[int(lane)] = played
        return actions


def join_windows(first: FrameWindow, second: FrameWindow) -> FrameWindow:
    """The frames of ``first`` then ``second`` in one window (the codec that fits both)."""
    if not first.arrays:
        return second
    if not second.arrays:
        return first
    codec = first.codec.merge(second.codec)
    return FrameWindow(concatenate_stored([first.recoded(codec).arrays, second.recoded(codec).arrays]), codec)


def seeded_values(pending: PendingFrames, first_value: np.ndarray, first_known: np.ndarray, max_game_plies: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``(value [P], known [P])`` of the pending frames, given the value the next call's reverse scan gave its first
    ply in each lane (``first_value [B]``, ``first_known [B]``): the core's :func:`backward_game_values` over the
    lanes' pending frames (``[max_game_plies, B]``, each lane's frames ending at the last row), seeded with them."""
    count, lanes = len(pending), len(pending.lane_game_iteration)
    # each frame's distance from its lane's end: 1 for the last frame of the lane
    after = np.zeros(count, np.int64)
    for lane in np.unique(pending.lane):
        at = np.flatnonzero(pending.lane == lane)
        after[at] = np.arange(len(at), 0, -1)
    rows = max_game_plies - after
    shape = (max_game_plies, lanes)
    value, known = backward_game_values(np.zeros(shape, np.float32), np.zeros(shape, bool),
                                        carry_in=(np.asarray(first_value, np.float32), np.asarray(first_known, bool)))
    value, known = jax.device_get((value, known))
    return np.asarray(value)[rows, pending.lane], np.asarray(known)[rows, pending.lane]


def settle(pending: PendingFrames, new: FrameWindow, game_over: np.ndarray, iteration: int, max_game_plies: int,
           actions: np.ndarray | None = None) -> tuple[FrameWindow, PendingFrames, dict]:
    """``(entered, pending, statistics)`` after a self-play call of this process.

    ``new``: the call's frames ``[T·B]`` (ply-major, as :meth:`FrameWindow.from_device_frames` flattens them), with
    the call's value targets (``value_mask``: the frame's game ended in the call); ``game_over [T, B]`` and
    ``actions [T, B]`` (the moves played; None: not kept with the waiting frames): the call's records.  ``entered``: the frames whose game has ended, with their value targets — the waiting frames of the
    lanes whose game ended in this call (lane order), then the call's frames whose game ended (ply-major); every one
    marked with the iteration that began its game (``game_iteration``).  ``pending``: the frames still waiting.
    ``statistics``: ``frames_entered``, ``frames_entered_from_earlier_calls``, ``frames_pending``,
    ``frames_entered_without_value`` (0 unless something is wrong), ``games_continued`` (lanes whose game goes on
    into the next call).
    """
    plies, lanes = game_over.shape
    game_over = np.asarray(game_over, bool)
    value = np.asarray(new.arrays["value_target"]).reshape(plies, lanes)
    known = np.asarray(new.arrays["value_mask"]).reshape(plies, lanes)
    games_before = np.cumsum(game_over, axis=0) - game_over
    game_iteration = np.where(games_before == 0, pending.lane_game_iteration[None], iteration).astype(np.int32)
    new = FrameWindow({**new.arrays, GAME_ITERATION: game_iteration.reshape(-1)}, new.codec)

    waiting = pending.window
    settled = np.zeros(len(pending), bool)
    if len(pending):
        seeded, settled = seeded_values(pending, value[0], known[0], max_game_plies)
        waiting = FrameWindow({**waiting.arrays, "value_target": seeded.astype(np.float32), "value_mask": settled},
                              waiting.codec)
    known_flat = known.reshape(-1)
    entered = join_windows(waiting.select(np.flatnonzero(settled)) if len(pending) else FrameWindow.empty(),
                           new.select(np.flatnonzero(known_flat)))
    # Still waiting: the lanes' unsettled frames, then the call's frames of unfinished games, in lane then ply order.
    unknown = np.flatnonzero(~known_flat)
    kept = join_windows(waiting.select(np.flatnonzero(~settled)) if len(pending) else FrameWindow.empty(),
                        new.select(unknown) if len(unknown) else FrameWindow.empty())
    kept_lanes = np.concatenate([pending.lane[~settled], (unknown % lanes).astype(np.int32)])
    call_actions = (np.full(plies * lanes, -1, np.int32) if actions is None
                    else np.asarray(actions, np.int32).reshape(-1))
    kept_actions = np.concatenate([np.asarray(pending.action)[~settled], call_actions[unknown]]).astype(np.int32)
    order = np.argsort(kept_lanes, kind="stable")
    if len(kept_lanes):
        kept = kept.select(order)
    else:
        kept = FrameWindow.empty()
    # A game begun inside the call began in this iteration; one begun after its last ply plays its first in the next.
    lane_game_iteration = np.where(game_over[-1], iteration + 1, np.where(game_over.any(axis=0), iteration,
                                                                           pending.lane_game_iteration))
    lane_game_iteration = lane_game_iteration.astype(np.int32)
    statistics = {
        "frames_entered": len(entered),
        "frames_entered_from_earlier_calls": int(settled.sum()),
        "frames_pending": len(kept),
        "frames_entered_without_value": int((~np.asarray(entered.arrays["value_mask"], bool)).sum())
        if entered.arrays else 0,
        "games_continued": int((~game_over[-1]).sum()) if plies else 0,
    }
    return entered, PendingFrames(kept, kept_lanes[order], lane_game_iteration, kept_actions[order]), statistics
