"""Replay: the AlphaGateau paper's frame window, kept on the host and saved in checkpoints.

Each iteration the window becomes the new frames plus a uniform sample (without replacement) of the previous
window, up to ``window_size`` frames (``mode='sample'``); ``mode='fifo'`` keeps the most recent frames instead.
Frames are stored compactly (observations and policies as float16, masks as bool); a method's extra per-frame fields
(:attr:`Frames.extras`) are kept as they come, as arrays named ``extra_<name>``, so the window stays one flat dict of
arrays that every checkpoint layout writes as it is.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from zerolab.selfplay import Frames

REPLAY_MODES = ("sample", "fifo")
EXTRA_PREFIX = "extra_"  # window arrays named extra_<name> hold Frames.extras[name]
STORAGE_DTYPES = {
    "observation": np.float16,
    "legal_action_mask": np.bool_,
    "policy_target": np.float16,
    "value_target": np.float32,
    "value_mask": np.bool_,
}


@dataclasses.dataclass
class FrameWindow:
    """A window of training frames: a dict of numpy arrays with a common leading axis N."""

    arrays: dict[str, np.ndarray]

    @classmethod
    def empty(cls) -> FrameWindow:
        return cls({})

    def __len__(self) -> int:
        return 0 if not self.arrays else len(self.arrays["value_target"])

    def as_frames(self, indices: np.ndarray | None = None) -> Frames:
        arrays = self.arrays if indices is None else self.select(indices).arrays
        fields = {name: array for name, array in arrays.items() if not name.startswith(EXTRA_PREFIX)}
        extras = {name[len(EXTRA_PREFIX):]: array for name, array in arrays.items() if name.startswith(EXTRA_PREFIX)}
        return Frames(**fields, extras=extras)

    def select(self, indices: np.ndarray) -> FrameWindow:
        """The frames at ``indices`` (every field, extras included)."""
        return FrameWindow({name: array[indices] for name, array in self.arrays.items()})


def frames_to_arrays(frames: Frames) -> dict[str, np.ndarray]:
    """Flattened [N, ...] numpy arrays of frames in storage dtypes; extras as ``extra_<name>``."""
    flat = frames.flatten() if np.ndim(frames.value_target) == 2 else frames
    arrays = {name: np.asarray(getattr(flat, name)).astype(dtype) for name, dtype in STORAGE_DTYPES.items()}
    arrays.update({EXTRA_PREFIX + name: np.asarray(value) for name, value in flat.extras.items()})
    return arrays


def update_window(
    window: FrameWindow, new_frames: Frames, window_size: int, rng: np.random.Generator, mode: str = "sample"
) -> FrameWindow:
    """The next window: ``new_frames`` plus old frames chosen by ``mode``, at most ``window_size`` in all."""
    if mode not in REPLAY_MODES:
        raise ValueError(f"replay mode must be one of {REPLAY_MODES}, got {mode!r}")
    new = frames_to_arrays(new_frames)
    num_new = len(new["value_target"])
    if num_new >= window_size:
        keep = rng.choice(num_new, window_size, replace=False) if mode == "sample" else np.arange(num_new - window_size, num_new)
        return FrameWindow(new).select(np.sort(keep))
    room = window_size - num_new
    if len(window) <= room:
        old_indices = np.arange(len(window))
    elif mode == "sample":
        old_indices = np.sort(rng.choice(len(window), room, replace=False))
    else:
        old_indices = np.arange(len(window) - room, len(window))
    if not window.arrays:
        return FrameWindow(new)
    if set(window.arrays) != set(new):
        raise ValueError(f"new frames have the fields {sorted(new)}, the window {sorted(window.arrays)}: a run keeps "
                         f"one method's frame fields")
    return FrameWindow({k: np.concatenate([window.arrays[k][old_indices], new[k]]) for k in new})
