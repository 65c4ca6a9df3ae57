"""Replay: the AlphaGateau paper's frame window, kept on the host in a compact, lossless encoding.

Each iteration the window becomes the new frames plus a uniform sample (without replacement) of the previous
window, up to ``window_size`` frames (``mode='sample'``); ``mode='fifo'`` keeps the most recent frames instead.

**What a frame is to training** is unchanged: :meth:`FrameWindow.as_frames` gives observations and policy targets as
float16, legal-action masks and value masks as bool and value targets as float32 (:data:`STORAGE_DTYPES`), bit for
bit what a dense float16 window held.  **How it is stored** (:class:`FrameCodec`) is what makes an 8×8 window of a
million frames fit a host (dense: 29.3 KB a frame, 29 GB; see zerolab/README.md for the measured figures):

* observation channels (the last axis) are classified over every frame the window has seen: a channel constant over
  the board in each frame (side to move, castling rights, move counters) is stored as one float16 per frame; a
  channel whose values are all 0 or 1 (pieces, repetitions, stones) as bits (``np.packbits``); any other channel as
  float16 values.  A classification only ever widens (constant or binary → dense); when new frames widen it, the
  stored frames are re-encoded, block by block.
* legal-action masks as bits;
* policy targets sparse: the float16 values of each frame's non-zero entries (compared bit for bit, so ``-0.0``
  stays) with their action indices, padded with index ``-1`` to the widest frame of the window (Gumbel MuZero's
  target is non-zero on every legal move; a visit-count target on at most ``num_simulations`` moves).

A method's extra per-frame fields (:attr:`Frames.extras`) are kept as they come, as arrays named ``extra_<name>``.
Each frame also carries where it is saved on disk (``source_chunk``, ``source_row``; ``-1``: not saved yet), so that
a checkpoint writes only the frames it has not written before (:mod:`zerolab.training.replay_checkpoints`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping

import numpy as np

from zerolab.selfplay.scan import Frames

REPLAY_MODES = ("sample", "fifo")
EXTRA_PREFIX = "extra_"  # window arrays named extra_<name> hold Frames.extras[name]
#: The dtypes a frame's fields have for training (and had in the dense window of earlier runs).
STORAGE_DTYPES = {
    "observation": np.float16,
    "legal_action_mask": np.bool_,
    "policy_target": np.float16,
    "value_target": np.float32,
    "value_mask": np.bool_,
}
#: The arrays that say where each frame of a window is saved: chunk number (-1: not saved) and row in that chunk.
SOURCE_FIELDS = ("source_chunk", "source_row")
FLOAT16_ZERO, FLOAT16_ONE = 0x0000, 0x3C00  # bit patterns of float16 0.0 and 1.0
RECODE_BLOCK = 16_384  # frames decoded at a time when a window is re-encoded


@dataclasses.dataclass(frozen=True)
class FrameCodec:
    """How a window's frames are stored: the shapes and, per observation channel, what every stored frame had.

    Attributes:
      observation_shape: one frame's observation shape ``(..., C)``; the last axis holds the channels, the others
        the board's positions (an observation of rank 1 has one position).
      num_actions: A, the length of legal-action masks and policy targets.
      constant: per channel, constant over the board in every frame seen (stored as one float16 per frame).
      binary: per channel, every value seen is 0.0 or 1.0 (stored as bits where not constant).
    """

    observation_shape: tuple[int, ...]
    num_actions: int
    constant: tuple[bool, ...]
    binary: tuple[bool, ...]

    @classmethod
    def of(cls, observation: np.ndarray, num_actions: int) -> FrameCodec:
        """The codec that fits the float16 observations ``[N, ...]`` (flags from these frames alone)."""
        bits = _channel_bits(observation)
        constant = (bits == bits[:, :1]).all(axis=(0, 1))
        binary = ((bits == FLOAT16_ZERO) | (bits == FLOAT16_ONE)).all(axis=(0, 1))
        return cls(tuple(observation.shape[1:]), int(num_actions), tuple(bool(c) for c in constant),
                   tuple(bool(b) for b in binary))

    def merge(self, other: FrameCodec) -> FrameCodec:
        """The codec that fits the frames of both (a channel stays constant or binary only where it is in both)."""
        if (self.observation_shape, self.num_actions) != (other.observation_shape, other.num_actions):
            raise ValueError(f"frames of observation shape {other.observation_shape} and {other.num_actions} actions "
                             f"cannot join a window of shape {self.observation_shape} and {self.num_actions} actions")
        return FrameCodec(self.observation_shape, self.num_actions,
                          tuple(a and b for a, b in zip(self.constant, other.constant)),
                          tuple(a and b for a, b in zip(self.binary, other.binary)))

    def fits(self, observation: np.ndarray) -> bool:
        """Whether float16 observations ``[N, ...]`` can be stored with this codec without loss."""
        fitted = FrameCodec.of(observation, self.num_actions)
        return fitted.observation_shape == self.observation_shape and self.merge(fitted) == self

    @property
    def scalar_channels(self) -> np.ndarray:
        return np.flatnonzero(self.constant)

    @property
    def bit_channels(self) -> np.ndarray:
        return np.flatnonzero(np.logical_and(self.binary, np.logical_not(self.constant)))

    @property
    def dense_channels(self) -> np.ndarray:
        return np.flatnonzero(np.logical_not(np.logical_or(self.binary, self.constant)))

    @functools.cached_property
    def _channel_order(self) -> np.ndarray:
        """Where each channel is among the channels grouped by kind (scalars, bits, dense)."""
        return np.argsort(np.concatenate([self.scalar_channels, self.bit_channels, self.dense_channels]))

    @property
    def num_positions(self) -> int:
        return math.prod(self.observation_shape[:-1])

    @property
    def index_dtype(self) -> np.dtype:
        return np.dtype(np.int16 if self.num_actions <= np.iinfo(np.int16).max else np.int32)

    def encode(self, fields: Mapping[str, np.ndarray], check: bool = True) -> dict[str, np.ndarray]:
        """Stored arrays of dense storage-dtype fields (:data:`STORAGE_DTYPES` names; extras pass through).

        ``check=False`` skips checking that the observations fit (for callers whose codec was fitted to them)."""
        observation = np.asarray(fields["observation"], np.float16)
        if check and not self.fits(observation):
            raise ValueError("these observations do not fit the window's codec (a channel stored as one value per "
                             "frame varies over the board, or one stored as bits holds other values than 0 and 1)")
        observation = _positions_channels(observation)
        count = len(observation)
        bit_planes = observation[:, :, self.bit_channels]
        indices, values = encode_policy(np.asarray(fields["policy_target"], np.float16), self.index_dtype)
        encoded = {
            "observation_scalars": np.ascontiguousarray(observation[:, 0, self.scalar_channels]),
            "observation_bits": np.packbits(bit_planes.reshape(count, -1) == 1, axis=1),
            "observation_dense": np.ascontiguousarray(observation[:, :, self.dense_channels]),
            "legal_action_bits": np.packbits(np.asarray(fields["legal_action_mask"], bool), axis=1),
            "policy_indices": indices,
            "policy_values": values,
        }
        for name in ("value_target", "value_mask"):
            encoded[name] = np.asarray(fields[name]).astype(STORAGE_DTYPES[name])
        encoded.update({name: value for name, value in fields.items() if name.startswith(EXTRA_PREFIX)})
        return encoded

    def decode(self, arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The dense storage-dtype fields (and extras) of stored arrays: the inverse of :meth:`encode`."""
        count = len(arrays["value_target"])
        positions = self.num_positions
        scalars, bit_channels = self.scalar_channels, self.bit_channels
        unpacked = np.unpackbits(arrays["observation_bits"], axis=1, count=positions * len(bit_channels))
        # Built as float16 bit patterns (uint16: numpy's float16 arithmetic is slow), channels grouped by kind, then
        # put in channel order with one gather.
        grouped = np.concatenate([
            np.broadcast_to(arrays["observation_scalars"].view(np.uint16)[:, None, :], (count, positions, len(scalars))),
            unpacked.reshape(count, positions, len(bit_channels)) * np.uint16(FLOAT16_ONE),
            arrays["observation_dense"].view(np.uint16)], axis=-1)
        observation = np.take(grouped, self._channel_order, axis=-1).view(np.float16)
        legal = np.unpackbits(arrays["legal_action_bits"], axis=1, count=self.num_actions).view(bool)
        fields = {
            "observation": observation.reshape((count,) + self.observation_shape),
            "legal_action_mask": legal,
            "policy_target": decode_policy(arrays["policy_indices"], arrays["policy_values"], self.num_actions),
            "value_target": arrays["value_target"],
            "value_mask": arrays["value_mask"],
        }
        fields.update({name: value for name, value in arrays.items() if name.startswith(EXTRA_PREFIX)})
        return fields

    def recode(self, arrays: Mapping[str, np.ndarray], target: FrameCodec) -> dict[str, np.ndarray]:
        """``arrays`` (stored with this codec) stored with ``target`` instead, decoded a block at a time."""
        if target == self:
            return dict(arrays)
        count = len(arrays["value_target"])
        blocks = [target.encode(self.decode(_rows(arrays, slice(start, start + RECODE_BLOCK))), check=False)
                  for start in range(0, count, RECODE_BLOCK)] or [target.encode(self.decode(arrays), check=False)]
        recoded = concatenate_stored(blocks)
        recoded.update({name: arrays[name] for name in SOURCE_FIELDS if name in arrays})
        return recoded

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> FrameCodec:
        values = json.loads(text)
        return cls(tuple(values["observation_shape"]), int(values["num_actions"]), tuple(values["constant"]),
                   tuple(values["binary"]))


def _positions_channels(observation: np.ndarray) -> np.ndarray:
    """``[N, ..., C]`` as ``[N, P, C]``."""
    return observation.reshape(len(observation), -1, observation.shape[-1])


def _bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array, np.float16).view(np.uint16)


def _channel_bits(observation: np.ndarray) -> np.ndarray:
    return _bits(_positions_channels(np.asarray(observation, np.float16)))


def _rows(arrays: Mapping[str, np.ndarray], rows) -> dict[str, np.ndarray]:
    return {name: array[rows] for name, array in arrays.items()}


def encode_policy(policy: np.ndarray, index_dtype=np.int16) -> tuple[np.ndarray, np.ndarray]:
    """``(indices [N, K], values [N, K])`` of float16 policies ``[N, A]``: each row's non-zero entries (bitwise, so
    ``-0.0`` is kept) in action order, padded with index -1 and value 0 to K, the most any row has."""
    bits = _bits(policy)
    rows, columns = np.nonzero(bits)
    counts = np.bincount(rows, minlength=len(policy))
    width = int(counts.max()) if len(policy) else 0
    slots = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    indices = np.full((len(policy), width), -1, index_dtype)
    values = np.zeros((len(policy), width), np.float16)
    indices[rows, slots] = columns
    values[rows, slots] = policy[rows, columns]
    return indices, values


def decode_policy(indices: np.ndarray, values: np.ndarray, num_actions: int) -> np.ndarray:
    """Dense float16 policies ``[N, A]`` from :func:`encode_policy`'s output."""
    policy = np.zeros((len(indices), num_actions), np.float16)
    rows, slots = np.nonzero(indices >= 0)
    policy[rows, indices[rows, slots]] = values[rows, slots]
    return policy


def policy_width(arrays: Mapping[str, np.ndarray]) -> int:
    indices = arrays["policy_indices"]
    return int((indices >= 0).sum(axis=1).max()) if len(indices) and indices.shape[1] else 0


def with_policy_width(arrays: Mapping[str, np.ndarray], width: int) -> dict[str, np.ndarray]:
    """``arrays`` with policy arrays cut or padded to ``width`` columns (cut only where every row fits)."""
    arrays = dict(arrays)
    indices, values = arrays["policy_indices"], arrays["policy_values"]
    if indices.shape[1] >= width:
        arrays["policy_indices"], arrays["policy_values"] = indices[:, :width], values[:, :width]
    else:
        pad = ((0, 0), (0, width - indices.shape[1]))
        arrays["policy_indices"] = np.pad(indices, pad, constant_values=-1)
        arrays["policy_values"] = np.pad(values, pad)
    return arrays


def concatenate_stored(parts: list[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Stored arrays of one codec, concatenated (policy arrays padded to the widest part)."""
    width = max(part["policy_indices"].shape[1] for part in parts)
    parts = [with_policy_width(part, width) for part in parts]
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


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
        arrays = codec.encode(fields, check=False)
        count = len(arrays["value_target"])
        arrays["source_chunk"] = np.full(count, -1, np.int32)
        arrays["source_row"] = np.full(count, -1, np.int32)
        return cls(arrays, codec)

    def __len__(self) -> int:
        return 0 if not self.arrays else len(self.arrays["value_target"])

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
    new_fields = frames_to_arrays(new_frames)
    if window.arrays:
        names = {name for name in window.arrays if name.startswith(EXTRA_PREFIX)} | set(STORAGE_DTYPES)
        if names != set(new_fields):
            raise ValueError(f"new frames have the fields {sorted(new_fields)}, the window {sorted(names)}: a run "
                             f"keeps one method's frame fields")
    new = FrameWindow.from_fields(new_fields, window.codec)
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
