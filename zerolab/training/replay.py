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

**Where frames are encoded**: on the devices that played them.  :meth:`FrameWindow.from_device_frames` runs two small
jitted programs on each device's part of self-play's output ``[T, B, ...]`` — a survey (:class:`FrameSurvey`: which
channels are constant or binary, the most non-zero policy entries of a frame), then the codec's encoding with a static
policy width (:meth:`FrameCodec.encode_on_device`) — so that the host receives the stored arrays, not float32
observations and dense policies, and appends them without encoding them again.  The stored policy is as wide as the
widest frame, a width known only once the frames exist, so a device encodes at a static width: the survey's count
(over the policy's own non-zero entries, not the legal mask, which pgx sets in full at a terminal state) rounded up to
:data:`POLICY_WIDTH_STEP`, so that no frame overflows it and a run compiles the encoder for a handful of widths; the
host cuts the padding.  The host's :meth:`FrameCodec.encode` stays for frames that are on the host already (and for
re-encoding a window whose codec widens); both give the same arrays.

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

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from zerolab.devices import local_parts
from zerolab.selfplay.scan import FRAME_FLOAT_DTYPE, Frames

REPLAY_MODES = ("sample", "fifo")
EXTRA_PREFIX = "extra_"  # window arrays named extra_<name> hold Frames.extras[name]
#: The dtypes a frame's fields have for training (and had in the dense window of earlier runs).
STORAGE_DTYPES = {
    "observation": np.dtype(FRAME_FLOAT_DTYPE),  # what self-play keeps on the device already
    "legal_action_mask": np.bool_,
    "policy_target": np.dtype(FRAME_FLOAT_DTYPE),
    "value_target": np.float32,
    "value_mask": np.bool_,
}
#: The arrays that say where each frame of a window is saved: chunk number (-1: not saved) and row in that chunk.
SOURCE_FIELDS = ("source_chunk", "source_row")
FLOAT16_ZERO, FLOAT16_ONE = 0x0000, 0x3C00  # bit patterns of float16 0.0 and 1.0
RECODE_BLOCK = 16_384  # frames decoded at a time when a window is re-encoded
#: Frames encoded on a device have a static policy width: the survey's widest frame rounded up to a multiple of this,
#: so that a run compiles the encoder for a handful of widths (and its codecs), not for every iteration's width.
POLICY_WIDTH_STEP = 32


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
        constant, binary = channel_kinds(_channel_bits(observation))
        return cls.from_kinds(observation.shape[1:], num_actions, constant, binary)

    @classmethod
    def from_kinds(cls, observation_shape, num_actions: int, constant, binary) -> FrameCodec:
        """The codec of channels whose kinds are ``constant [C]`` and ``binary [C]`` (:func:`channel_kinds`)."""
        return cls(tuple(int(size) for size in observation_shape), int(num_actions),
                   tuple(bool(c) for c in np.asarray(constant)), tuple(bool(b) for b in np.asarray(binary)))

    @classmethod
    def from_surveys(cls, observation_shape, num_actions: int, surveys: list[FrameSurvey]) -> FrameCodec:
        """The codec that fits the frames of every survey (host copies of :func:`survey_frames`' results)."""
        constant = np.logical_and.reduce([np.asarray(survey.constant) for survey in surveys])
        binary = np.logical_and.reduce([np.asarray(survey.binary) for survey in surveys])
        return cls.from_kinds(observation_shape, num_actions, constant, binary)

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
        """Stored arrays of dense storage-dtype fields ``[N, ...]`` (:data:`STORAGE_DTYPES` names; extras pass
        through), on the host; the policy arrays are as wide as the widest frame.

        ``check=False`` skips checking that the observations fit (for callers whose codec was fitted to them)."""
        observation = np.asarray(fields["observation"], np.float16)
        if check and not self.fits(observation):
            raise ValueError("these observations do not fit the window's codec (a channel stored as one value per "
                             "frame varies over the board, or one stored as bits holds other values than 0 and 1)")
        policy = encode_policy(np.asarray(fields["policy_target"], np.float16), self.index_dtype)
        stored = self._stored_arrays(fields, policy, np)
        return {name: value if name.startswith(EXTRA_PREFIX) else np.ascontiguousarray(value)
                for name, value in stored.items()}

    def encode_on_device(self, fields: Mapping[str, jax.Array], policy_width: int) -> dict[str, jax.Array]:
        """:meth:`encode` in JAX, for frames ``[N, ...]`` where they are (jittable; ``policy_width`` is static).

        Every array is :meth:`encode`'s bit for bit, except that the policy arrays are ``policy_width`` wide
        (:func:`encode_policy_on_device`: at least the most non-zero entries of a frame, which
        :func:`survey_frames` counts; the extra columns hold index -1 and value 0).  The observations must fit the
        codec (it is made from their survey), and fields come in any dtype: they are cast to the storage dtypes here.
        """
        policy = encode_policy_on_device(fields["policy_target"], policy_width, self.index_dtype)
        return self._stored_arrays(fields, policy, jnp)

    def _stored_arrays(self, fields: Mapping, policy: tuple, array_module) -> dict:
        """The stored arrays of fields ``[N, ...]`` and their sparse policy ``(indices, values)``, computed with
        ``array_module`` (numpy on the host, ``jax.numpy`` on a device): the one statement of the layout."""
        observation = array_module.asarray(fields["observation"], array_module.float16)
        count, positions = observation.shape[0], self.num_positions
        observation = observation.reshape(count, positions, self.observation_shape[-1])
        bit_planes = observation[:, :, self.bit_channels].reshape(count, positions * len(self.bit_channels))
        stored = {
            "observation_scalars": observation[:, 0, self.scalar_channels],
            "observation_bits": array_module.packbits(bit_planes == 1, axis=1),
            "observation_dense": observation[:, :, self.dense_channels],
            "legal_action_bits": array_module.packbits(array_module.asarray(fields["legal_action_mask"], bool), axis=1),
            "policy_indices": policy[0],
            "policy_values": policy[1],
        }
        for name in ("value_target", "value_mask"):
            stored[name] = array_module.asarray(fields[name]).astype(STORAGE_DTYPES[name])
        stored.update({name: value for name, value in fields.items() if name.startswith(EXTRA_PREFIX)})
        return stored

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


def channel_kinds(bits):
    """``(constant [C], binary [C])`` of float16 bit patterns ``[N, P, C]`` (numpy or JAX): per channel, whether it
    is the same at every position of each frame, and whether every value is 0.0 or 1.0 — the codec's only rule for
    choosing how a channel is stored."""
    constant = (bits == bits[:, :1]).all(axis=(0, 1))
    binary = ((bits == FLOAT16_ZERO) | (bits == FLOAT16_ONE)).all(axis=(0, 1))
    return constant, binary


def _bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array, np.float16).view(np.uint16)


def _device_bits(array: jax.Array) -> jax.Array:
    """The float16 bit patterns (uint16) of ``array`` cast to float16, in JAX."""
    return jnp.asarray(array, jnp.float16).view(jnp.uint16)


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


def encode_policy_on_device(policy: jax.Array, width: int, index_dtype=np.int16) -> tuple[jax.Array, jax.Array]:
    """``(indices [N, width], values [N, width])`` of policies ``[N, A]`` (any float dtype, cast to float16) in JAX,
    with a static ``width``: :func:`encode_policy`'s layout — each row's non-zero float16 entries (bitwise) in action
    order, then index -1 and value 0 — padded to ``width`` columns instead of the widest row's count.

    ``width`` must be at least the non-zero entries of every row (:func:`survey_frames` counts them; a row with more
    would lose its last ones).  The count is the policy's own, not the legal mask's: pgx marks every action legal in
    a terminal state, while a search puts weight on legal moves only.  Each entry's column is its rank among its
    row's non-zero entries (a cumulative sum); one scatter writes them."""
    policy = jnp.asarray(policy, jnp.float16)
    count, num_actions = policy.shape
    nonzero = _device_bits(policy) != 0
    column = jnp.where(nonzero, jnp.cumsum(nonzero, axis=1, dtype=jnp.int32) - 1, width)  # `width`: dropped
    rows = jnp.arange(count)[:, None]
    actions = jnp.broadcast_to(jnp.arange(num_actions, dtype=index_dtype), policy.shape)
    indices = jnp.full((count, width), -1, index_dtype).at[rows, column].set(actions, mode="drop")
    values = jnp.zeros((count, width), jnp.float16).at[rows, column].set(policy, mode="drop")
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
    def from_device_frames(cls, frames: Frames, codec: FrameCodec | None = None) -> FrameWindow:
        """A window of new frames ``[T, B, ...]`` encoded on the devices that hold them: the arrays and codec of
        ``from_fields(frames_to_arrays(frames), codec)``, bit for bit, with only the stored arrays crossing to the
        host.

        ``frames`` is self-play's output (device arrays split along the games' axis B; numpy frames are encoded on
        the default device).  On each of this process's devices: :func:`survey_frames`, then — with the codec that
        fits every device's frames and ``codec``, and a static policy width (:func:`device_policy_width`) —
        :func:`encode_device_frames`.  The host joins the devices' ``[T, B_d, ...]`` arrays along B, flattens them
        to ``[N, ...]`` and cuts the policy arrays to the widest frame's width (dropping padding only).  No
        collective: on several processes each encodes its own games with its own window's codec."""
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
    def unsaved(cls, arrays: dict[str, np.ndarray], codec: FrameCodec) -> FrameWindow:
        """A window of stored arrays not saved on disk yet (disk sources -1)."""
        count = len(arrays["value_target"])
        arrays["source_chunk"] = np.full(count, -1, np.int32)
        arrays["source_row"] = np.full(count, -1, np.int32)
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
