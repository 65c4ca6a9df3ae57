"""Replay: the AlphaGateau paper's frame window, kept on the host in a compact, lossless encoding.

Each iteration the window becomes the new frames plus a uniform sample (without replacement) of the previous
window, up to ``window_size`` frames (``mode='sample'``); ``mode='fifo'`` keeps the most recent frames instead.

**What a frame is to training** is unchanged: :meth:`FrameWindow.as_frames` gives observations and policy targets as
float16, legal-action masks and value masks as bool and value targets as float32 (:data:`STORAGE_DTYPES`), bit for
bit what a dense float16 window held.  **How it is stored** is :class:`FrameCodec`'s layout, stated once in
:mod:`zerolab.selfplay.frames` (observation channels as one value a frame, bits or float16 values by kind; legal
masks as bits; sparse policy targets), which makes an 8×8 window of a million frames fit a host (dense: 29.3 KB a
frame, 29 GB; see zerolab/README.md for the measured figures).  A window's codec only ever widens (constant or
binary → dense) as it meets frames that need it (:meth:`FrameCodec.merge`); its stored frames are then re-encoded,
block by block.

**Where frames are encoded**: on the devices that played them.  Self-play stores each ply's frames in its scan with
the game's codec (:class:`zerolab.selfplay.frames.PackedFrames`); :meth:`FrameWindow.from_packed_frames` cuts each
device's policy arrays to the widest frame and brings the stored arrays to the host.  Dense frames ``[T, B, ...]``
on devices (:meth:`FrameWindow.from_device_frames`) are encoded there by two small jitted programs — a survey
(:class:`FrameSurvey`: which channels are constant or binary, the most non-zero policy entries of a frame), then the
codec's encoding with a static policy width (:meth:`FrameCodec.encode_on_device`): the survey's count (over the
policy's own non-zero entries, not the legal mask, which pgx sets in full at a terminal state) rounded up to
:data:`POLICY_WIDTH_STEP`, so that a run compiles the encoder for a handful of widths; the host cuts the padding.
The host's :meth:`FrameCodec.encode` stays for frames that are on the host already (and for re-encoding a window
whose codec widens); all give the same arrays for the same codec.

A method's extra per-frame fields (:attr:`Frames.extras`) are kept as they come, as arrays named ``extra_<name>``.
Each frame also carries where it is saved on disk (``source_chunk``, ``source_row``; ``-1``: not saved yet), so that
a checkpoint writes only the frames it has not written before (:mod:`zerolab.training.replay_checkpoints`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from zerolab.config import check_at_least, check_choice, section_dataclass
from zerolab.devices import local_parts
from zerolab.selfplay.frames import (  # the stored layout, stated once in the self-play layer that first stores frames
    EXTRA_PREFIX,
    STORAGE_DTYPES,
    FrameCodec,
    Frames,
    PackedFrames,
    _device_bits,
    _rows,
    channel_kinds,
    concatenate_stored,
    policy_width,
    with_policy_width,
)

REPLAY_MODES = ("sample", "fifo")
#: The arrays that say where each frame of a window is saved: chunk number (-1: not saved) and row in that chunk.
SOURCE_FIELDS = ("source_chunk", "source_row")
#: The array that records, for each frame, the training iteration that began its game (-1: not known, frames of runs
#: made before games were carried from call to call); saved with the frames, not a training field.
GAME_ITERATION = "game_iteration"
#: Frames encoded on a device have a static policy width: the survey's widest frame rounded up to a multiple of this,
#: so that a run compiles the encoder for a handful of widths (and its codecs), not for every iteration's width.
POLICY_WIDTH_STEP = 32



@flax.struct.dataclass
class FrameSurvey:
    """What a codec needs to know of frames ``[T, B, ...]``, computed on the device that holds them.

    Attributes:
      constant: [C] bool, per observation channel: the same at every position of each frame.
      binary: [C] bool, per observation channel: every value 0.0 or 1.0 (float16 bit patterns).
      policy_width: [] int32, the most non-zero (bitwise float16) policy entries of a frame.
    """

    constant: jax.Array
    binary: jax.Array
    policy_width: jax.Array


@jax.jit
def survey_frames(observation: jax.Array, policy: jax.Array) -> FrameSurvey:
    """The :class:`FrameSurvey` of frames with observations ``[T, B, *observation_shape]`` and policy targets
    ``[T, B, A]`` (any float dtypes: judged as float16, as they are stored)."""
    channels = observation.shape[-1]
    bits = _device_bits(observation).reshape(-1, math.prod(observation.shape[2:-1]), channels)
    constant, binary = channel_kinds(bits)
    nonzero = (_device_bits(policy) != 0).sum(axis=-1, dtype=jnp.int32)
    return FrameSurvey(constant, binary, jnp.max(nonzero, initial=0))


def device_policy_width(width: int, num_actions: int) -> int:
    """The static policy width of frames encoded on a device whose widest frame has ``width`` non-zero entries:
    ``width`` rounded up to :data:`POLICY_WIDTH_STEP`, at most A."""
    return min(int(num_actions), -(-int(width) // POLICY_WIDTH_STEP) * POLICY_WIDTH_STEP)


@functools.partial(jax.jit, static_argnums=(0, 1))
def encode_device_frames(codec: FrameCodec, policy_width: int, fields: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """Stored arrays ``[T, B, ...]`` of frame fields ``[T, B, ...]`` (:data:`STORAGE_DTYPES`' names) on their
    device, one ply at a time (:meth:`FrameCodec.encode_on_device`; the temporaries are those of one ply's B
    frames)."""
    return jax.lax.map(lambda ply: codec.encode_on_device(ply, policy_width), fields)


POLICY_ARRAYS = ("policy_indices", "policy_values")


@jax.jit
def _policy_entries(indices: jax.Array) -> jax.Array:
    """The most policy entries of a frame among stored policy indices ``[..., width]`` (index -1: padding)."""
    return jnp.max((indices >= 0).sum(axis=-1, dtype=jnp.int32), initial=0)


def _join_parts(parts: list[np.ndarray]) -> np.ndarray:
    """Arrays ``[T, B_d, ...]`` of this process's devices as one ``[T·B, ...]`` array (games joined, then plies
    flattened, as :meth:`Frames.flatten` orders frames)."""
    joined = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
    return joined.reshape((joined.shape[0] * joined.shape[1],) + joined.shape[2:])


@dataclasses.dataclass
class FrameWindow:
    """A window of training frames: stored arrays with a common leading axis N and the codec they are stored with
    (None for an empty window)."""

    arrays: dict[str, np.ndarray]
    codec: FrameCodec | None = None

    @classmethod
    def empty(cls) -> FrameWindow:
        return cls({})

    @classmethod
    def from_fields(cls, fields: Mapping[str, np.ndarray], codec: FrameCodec | None = None) -> FrameWindow:
        """A window of dense storage-dtype fields (new frames, or the dense window of an older checkpoint), not
        saved yet; ``codec`` (default: fitted to these frames) is widened where the frames need it."""
        fields = {name: np.asarray(value) for name, value in fields.items() if name not in SOURCE_FIELDS}
        fitted = FrameCodec.of(np.asarray(fields["observation"], np.float16), fields["legal_action_mask"].shape[-1])
        codec = fitted if codec is None else codec.merge(fitted)
        return cls.unsaved(codec.encode(fields, check=False), codec)

    @classmethod
    def from_device_frames(cls, frames: PackedFrames | Frames, codec: FrameCodec | None = None) -> FrameWindow:
        """A window of new frames ``[T, B, ...]`` from the devices that hold them, with only the stored arrays
        crossing to the host; its codec is the frames' merged with ``codec`` (the window's), where given.

        ``frames``: self-play's :class:`PackedFrames` (stored in the scan already: :meth:`from_packed_frames`), or
        dense :class:`Frames` (device arrays split along the games' axis B; numpy frames are encoded on the default
        device), encoded here with the arrays and codec of ``from_fields(frames_to_arrays(frames), codec)``, bit for
        bit.  Dense frames: on each of this process's devices, :func:`survey_frames`, then — with the codec that fits
        every device's frames and ``codec``, and a static policy width (:func:`device_policy_width`) —
        :func:`encode_device_frames`.  The host joins the devices' ``[T, B_d, ...]`` arrays along B, flattens them
        to ``[N, ...]`` and cuts the policy arrays to the widest frame's width (dropping padding only).  No
        collective: on several processes each encodes its own games with its own window's codec."""
        if isinstance(frames, PackedFrames):
            return cls.from_packed_frames(frames, codec)
        fields = frame_fields(frames)
        parts = local_parts(fields, axis=1)
        surveys = jax.device_get([survey_frames(part["observation"], part["policy_target"]) for part in parts])
        observation_shape, num_actions = fields["observation"].shape[2:], fields["legal_action_mask"].shape[-1]
        fitted = FrameCodec.from_surveys(observation_shape, num_actions, surveys)
        codec = fitted if codec is None else codec.merge(fitted)
        width = max(int(survey.policy_width) for survey in surveys)
        static_width = device_policy_width(width, num_actions)
        encoded = jax.device_get([
            {**encode_device_frames(codec, static_width, {name: part[name] for name in STORAGE_DTYPES}),
             **{name: value for name, value in part.items() if name.startswith(EXTRA_PREFIX)}}  # extras as they are
            for part in parts])
        arrays = with_policy_width({name: _join_parts([part[name] for part in encoded]) for name in encoded[0]}, width)
        return cls.unsaved({name: np.ascontiguousarray(array) for name, array in arrays.items()}, codec)

    @classmethod
    def from_packed_frames(cls, frames: PackedFrames, codec: FrameCodec | None = None) -> FrameWindow:
        """A window of self-play's packed frames (:class:`PackedFrames`, stored in the scan with the game's codec):
        refused where a frame was not stored exactly (:meth:`PackedFrames.check_exact`); on each of this process's
        devices the policy arrays are cut to the widest frame's entries before they cross to the host; the host
        joins the devices' games and flattens them as :meth:`from_device_frames` does, and re-encodes them only
        where ``codec`` (the window's) keeps a channel wider than the frames' codec."""
        frames.check_exact()
        fields = frames.stored_fields()
        empty = {name: value for name, value in fields.items() if value.size == 0}  # no float16 planes: not sharded
        parts = local_parts({name: value for name, value in fields.items() if name not in empty}, axis=1)
        width = max(int(count) for count in jax.device_get([_policy_entries(part["policy_indices"]) for part in parts]))
        cut = jax.device_get([{name: value[..., :width] if name in POLICY_ARRAYS else value
                               for name, value in part.items()} for part in parts])
        arrays = {name: np.ascontiguousarray(_join_parts([part[name] for part in cut])) for name in cut[0]}
        count = len(arrays["value_target"])
        arrays.update({name: np.zeros((count,) + value.shape[2:], value.dtype) for name, value in empty.items()})
        window = cls.unsaved(arrays, frames.codec)
        return window if codec is None else window.recoded(codec.merge(frames.codec))

    @classmethod
    def unsaved(cls, arrays: dict[str, np.ndarray], codec: FrameCodec) -> FrameWindow:
        """A window of stored arrays not saved on disk yet (disk sources -1; the iteration that began each frame's
        game -1 where not given)."""
        count = len(arrays["value_target"])
        arrays["source_chunk"] = np.full(count, -1, np.int32)
        arrays["source_row"] = np.full(count, -1, np.int32)
        arrays.setdefault(GAME_ITERATION, np.full(count, -1, np.int32))
        return cls(arrays, codec)

    def __len__(self) -> int:
        return 0 if not self.arrays else len(self.arrays["value_target"])

    @property
    def field_names(self) -> set[str]:
        """The dense fields its frames decode to: :data:`STORAGE_DTYPES`' names and ``extra_<name>`` (none when
        empty)."""
        if not self.arrays:
            return set()
        return set(STORAGE_DTYPES) | {name for name in self.arrays if name.startswith(EXTRA_PREFIX)}

    def fields(self, indices: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Dense storage-dtype fields (and extras) of the frames at ``indices`` (all frames by default)."""
        if self.codec is None:
            return {}
        arrays = self.arrays if indices is None else _rows(self.arrays, indices)
        return self.codec.decode(arrays)

    def as_frames(self, indices: np.ndarray | None = None) -> Frames:
        fields = self.fields(indices)
        extras = {name[len(EXTRA_PREFIX):]: fields.pop(name) for name in list(fields) if name.startswith(EXTRA_PREFIX)}
        return Frames(**fields, extras=extras)

    def select(self, indices: np.ndarray) -> FrameWindow:
        """The frames at ``indices`` (every field, extras and disk sources included)."""
        selected = _rows(self.arrays, indices)
        return FrameWindow(with_policy_width(selected, policy_width(selected)), self.codec)

    def recoded(self, codec: FrameCodec) -> FrameWindow:
        """The same frames stored with ``codec`` (a widening of this window's)."""
        if self.codec is None or self.codec == codec:
            return FrameWindow(self.arrays, codec if self.codec is None else self.codec)
        return FrameWindow(self.codec.recode(self.arrays, codec), codec)

    def bytes_per_frame(self) -> float:
        """Host bytes per frame of the stored arrays (disk sources included)."""
        return sum(array.nbytes for array in self.arrays.values()) / max(len(self), 1)


def frame_fields(frames: Frames) -> dict:
    """The fields of frames by their window names (extras as ``extra_<name>``), as they are: same arrays, shapes and
    dtypes."""
    fields = {name: getattr(frames, name) for name in STORAGE_DTYPES}
    fields.update({EXTRA_PREFIX + name: value for name, value in frames.extras.items()})
    return fields


def frames_to_arrays(frames: Frames) -> dict[str, np.ndarray]:
    """Flattened [N, ...] numpy arrays of frames in storage dtypes; extras as ``extra_<name>``."""
    flat = frames.flatten() if np.ndim(frames.value_target) == 2 else frames
    return {name: np.asarray(value).astype(STORAGE_DTYPES[name]) if name in STORAGE_DTYPES else np.asarray(value)
            for name, value in frame_fields(flat).items()}


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """A run's ``replay`` section: the window's size in frames and how old frames make room for new ones
    (``sample``: a uniform sample of the old window; ``fifo``: the newest)."""

    window_size: int = 100_000
    mode: str = "sample"

    def __post_init__(self):
        check_choice("replay.mode", self.mode, REPLAY_MODES)
        check_at_least("replay.window_size", self.window_size, 1)

    @classmethod
    def from_config(cls, config: Any) -> ReplayConfig:
        """From a ConfigDict (or mapping) section (:func:`zerolab.config.section_dataclass`)."""
        return section_dataclass(cls, config, "replay")


def update_window(
    window: FrameWindow, new_frames: Frames | FrameWindow, window_size: int, rng: np.random.Generator,
    mode: str = "sample",
) -> FrameWindow:
    """The next window: ``new_frames`` plus old frames chosen by ``mode``, at most ``window_size`` in all.

    ``new_frames``: frames ``[T, B, ...]`` or ``[N, ...]`` (encoded here, on the host), or a window of new frames
    encoded already (:meth:`FrameWindow.from_device_frames`, given this window's codec: appended as they are)."""
    if mode not in REPLAY_MODES:
        raise ValueError(f"replay mode must be one of {REPLAY_MODES}, got {mode!r}")
    encoded = new_frames if isinstance(new_frames, FrameWindow) else None
    new_fields = None if encoded is not None else frames_to_arrays(new_frames)
    new_names = encoded.field_names if encoded is not None else set(new_fields)
    if window.arrays and window.field_names != new_names:
        raise ValueError(f"new frames have the fields {sorted(new_names)}, the window {sorted(window.field_names)}: a "
                         f"run keeps one method's frame fields")
    if encoded is None:
        new = FrameWindow.from_fields(new_fields, window.codec)
    else:  # a no-op when they were encoded with this window's codec
        new = encoded.recoded(encoded.codec if window.codec is None else window.codec.merge(encoded.codec))
    num_new = len(new)
    if num_new >= window_size:
        keep = rng.choice(num_new, window_size, replace=False) if mode == "sample" else np.arange(num_new - window_size, num_new)
        return new.select(np.sort(keep))
    room = window_size - num_new
    if len(window) <= room:
        old_indices = np.arange(len(window))
    elif mode == "sample":
        old_indices = np.sort(rng.choice(len(window), room, replace=False))
    else:
        old_indices = np.arange(len(window) - room, len(window))
    if not window.arrays:
        return new
    old = window.select(old_indices).recoded(new.codec)
    return FrameWindow(concatenate_stored([old.arrays, new.arrays]), new.codec)
