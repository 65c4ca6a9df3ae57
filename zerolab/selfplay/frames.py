"""Frames: what self-play records for training, and the one statement of how a frame is stored.

A frame is a position searched in self-play with what the network learns there (:class:`Frames`: observation,
legal-action mask, policy target, value target and mask, a method's extras).  Training reads frames dense, observations
and policy targets as float16 (:data:`STORAGE_DTYPES`).  They are *stored* compact, by a :class:`FrameCodec`, in the
replay window on the host and already inside self-play's scan on the device, so that a device holds only the stored
bytes of its ``T × B`` frames (an 8×8 chess frame: 2,371 bytes in the scan, where its float16 observation and policy
alone take 24,576; measured by ``scripts/frame_transfer_bytes.py``):

* observation channels (the last axis) by kind: a channel constant over the board in each frame (side to move,
  castling rights, move counters) as one float16 per frame; a channel whose values are all 0 or 1 (pieces,
  repetitions, stones) as bits; any other channel as float16 values.  Self-play uses the kinds the game declares
  (:attr:`zerolab.games.Game.observation_planes`, :func:`frame_codec`); the replay window may narrow them from the
  frames it has seen (:class:`FrameCodec` ``.of``, ``.merge``).
* legal-action masks as bits;
* policy targets sparse: each frame's non-zero float16 entries (bitwise, so ``-0.0`` stays) with their action indices,
  padded with index ``-1``.  Inside self-play the width is static, the game's most legal moves
  (:func:`frame_policy_width`): a search puts weight on legal moves only.

:class:`PackedFrames` is self-play's output: the stored arrays ``[T, B, ...]``, the value targets, the extras, and a
per-frame flag of frames the codec could not hold exactly (a plane declared binary holding another value, a policy
wider than its width), which the window refuses to store (:meth:`PackedFrames.check_exact`) rather than train on
altered frames.  :meth:`PackedFrames.to_frames` decodes them on the host.
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

from zerolab.devices import local_numpy

#: The floating type of a frame's observations and policy targets as training reads them (and as the dense window of
#: earlier runs stored them).
FRAME_FLOAT_DTYPE = jnp.float16
EXTRA_PREFIX = "extra_"  # window arrays named extra_<name> hold Frames.extras[name]
#: The dtypes a frame's fields have for training (and had in the dense window of earlier runs).
STORAGE_DTYPES = {
    "observation": np.dtype(FRAME_FLOAT_DTYPE),
    "legal_action_mask": np.bool_,
    "policy_target": np.dtype(FRAME_FLOAT_DTYPE),
    "value_target": np.float32,
    "value_mask": np.bool_,
}
FLOAT16_ZERO, FLOAT16_ONE = 0x0000, 0x3C00  # bit patterns of float16 0.0 and 1.0
RECODE_BLOCK = 16_384  # frames decoded at a time when a window is re-encoded


@flax.struct.dataclass
class Frames:
    """Training frames, ``[T, B, ...]`` from self-play or ``[N, ...]`` once flattened.

    Attributes:
      observation: [T, B, *observation_shape] from the side to move (float16: :data:`FRAME_FLOAT_DTYPE`).
      legal_action_mask: [T, B, A].
      policy_target: [T, B, A] the search's improved policy (float16).
      value_target: [T, B] final outcome from the side to move (−1, 0, 1).
      value_mask: [T, B] true where the game ended inside the scan, so ``value_target`` is known.
      extras: ``{name: [T, B, ...]}`` a method's further per-frame fields (e.g. the game's komi); the replay window
        and checkpoints carry them like the fields above.
    """

    observation: jax.Array
    legal_action_mask: jax.Array
    policy_target: jax.Array
    value_target: jax.Array
    value_mask: jax.Array
    extras: dict = flax.struct.field(default_factory=dict)

    def flatten(self) -> Frames:
        return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), self)


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
    def from_surveys(cls, observation_shape, num_actions: int, surveys: list) -> FrameCodec:
        """The codec that fits the frames of every survey (host copies of
        :func:`zerolab.training.replay.survey_frames`' results: ``constant`` and ``binary`` per channel)."""
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
        recoded.update({name: value for name, value in arrays.items() if name not in recoded})  # e.g. disk sources
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


def frame_codec(game) -> FrameCodec:
    """The codec self-play stores ``game``'s frames with: the observation channels' kinds the game declares
    (:attr:`zerolab.games.Game.observation_planes`)."""
    planes = game.observation_planes
    return FrameCodec.from_kinds(game.observation_shape, game.num_actions, planes.constant, planes.binary)


def frame_policy_width(game) -> int:
    """The static width of a frame's sparse policy inside self-play: the game's most legal moves (at most A)."""
    return min(int(game.num_actions), int(game.max_legal_actions))


def pack_frames(codec: FrameCodec, policy_width: int, observation: jax.Array, legal_action_mask: jax.Array,
                policy_target: jax.Array) -> tuple[dict[str, jax.Array], jax.Array]:
    """``(stored, inexact)`` of frames ``[N, ...]`` on their device (jittable): the stored arrays of
    :meth:`FrameCodec.encode_on_device` without the value fields, and ``inexact [N]``, true where a frame does not
    decode to the same float16 observation and policy: a channel the codec keeps as one value or as bits that is
    not constant over the board or not 0/1 in that frame, or more non-zero policy entries than ``policy_width``."""
    count = observation.shape[0]
    channels = codec.observation_shape[-1]
    bits = _device_bits(observation).reshape(count, codec.num_positions, channels)
    constant = (bits == bits[:, :1]).all(axis=1)  # [N, C]
    binary = ((bits == FLOAT16_ZERO) | (bits == FLOAT16_ONE)).all(axis=1)
    declared_constant, declared_binary = np.asarray(codec.constant), np.asarray(codec.binary)
    planes_lost = ((declared_constant & ~constant) | (declared_binary & ~declared_constant & ~binary)).any(axis=1)
    policy_lost = (_device_bits(policy_target) != 0).sum(axis=1) > policy_width
    stored = codec.encode_on_device({"observation": observation, "legal_action_mask": legal_action_mask,
                                     "policy_target": policy_target,
                                     "value_target": jnp.zeros(count), "value_mask": jnp.zeros(count, bool)},
                                    policy_width)
    del stored["value_target"], stored["value_mask"]
    return stored, planes_lost | policy_lost


@flax.struct.dataclass
class PackedFrames:
    """Self-play's frames ``[T, B, ...]`` stored as the replay window stores them (:func:`pack_frames` a ply).

    Attributes:
      arrays: the codec's stored arrays ``[T, B, ...]`` (``observation_scalars``, ``observation_bits``,
        ``observation_dense``, ``legal_action_bits``, ``policy_indices``, ``policy_values``; policy arrays
        :func:`frame_policy_width` wide).
      value_target: [T, B] final outcome from the side to move (−1, 0, 1).
      value_mask: [T, B] true where the game ended inside the scan, so ``value_target`` is known.
      inexact: [T, B] true where the frame could not be stored exactly (:func:`pack_frames`).
      extras: ``{name: [T, B, ...]}`` a method's further per-frame fields, as they came.
      codec: the codec of ``arrays`` (static).
    """

    arrays: dict
    value_target: jax.Array
    value_mask: jax.Array
    inexact: jax.Array
    extras: dict = flax.struct.field(default_factory=dict)
    codec: FrameCodec | None = flax.struct.field(pytree_node=False, default=None)

    @property
    def shape(self) -> tuple[int, int]:
        """``(T, B)``: plies and games."""
        return tuple(self.value_target.shape[:2])

    def check_exact(self) -> None:
        """Raises ``ValueError`` when a frame of this process could not be stored exactly (its position, and what
        was declared)."""
        inexact = local_numpy(self.inexact, axis=1)  # this process's games (each process checks its own)
        if inexact.any():
            ply, game = (int(index) for index in np.argwhere(inexact)[0])
            raise ValueError(
                f"{int(inexact.sum())} self-play frames (the first at ply {ply}, game {game} of this process) cannot be "
                f"stored exactly: "
                f"an observation channel the game declares constant over the board or binary "
                f"(Game.observation_planes) is not, or a policy target has more non-zero entries than the game's "
                f"max_legal_actions ({self.arrays['policy_indices'].shape[-1]})")

    def stored_fields(self) -> dict:
        """The stored arrays with the value fields and extras (``extra_<name>``), ``[T, B, ...]``."""
        fields = dict(self.arrays, value_target=self.value_target.astype(STORAGE_DTYPES["value_target"]),
                      value_mask=self.value_mask.astype(STORAGE_DTYPES["value_mask"]))
        fields.update({EXTRA_PREFIX + name: value for name, value in self.extras.items()})
        return fields

    def to_frames(self) -> Frames:
        """The dense frames ``[T, B, ...]`` on the host (storage dtypes: :data:`STORAGE_DTYPES`)."""
        plies, games = self.shape
        flat = {name: np.asarray(value).reshape((plies * games,) + np.shape(value)[2:])
                for name, value in jax.device_get(self.stored_fields()).items()}
        fields = self.codec.decode(flat)
        extras = {name[len(EXTRA_PREFIX):]: fields.pop(name) for name in list(fields) if name.startswith(EXTRA_PREFIX)}
        unflat = lambda value: value.reshape((plies, games) + value.shape[1:])
        return Frames(**{name: unflat(value) for name, value in fields.items()},
                      extras={name: unflat(value) for name, value in extras.items()})
