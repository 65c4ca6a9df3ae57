"""How a training run fits its machines, device and host: the chunk a device plays its self-play games in under a
memory budget (:func:`fit_selfplay`, the run's own rule: :mod:`zerolab.selfplay.chunks`; :class:`DeviceFit`), the
mesh a plan compiles for (:func:`plan_mesh`: one local device, or a pod shape of emulated CPU devices), and the host
bytes of a replay frame (:func:`frame_bytes`, from the replay window's own encoding of random legal positions) and of
what self-play sends to the host an iteration (:func:`selfplay_host_bytes`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from zerolab.devices import format_bytes, make_mesh
from zerolab.games import Game
from zerolab.selfplay.chunks import ChunkChoice, SelfPlayDoesNotFit, choose_chunk_games
from zerolab.selfplay.frames import PackedFrames, frame_codec
from zerolab.training.program_cost import ProgramCost, compile_cost, tree_bytes
from zerolab.training.replay import POLICY_ARRAYS, STORAGE_DTYPES, FrameCodec, FrameWindow


#: The device memory budget of a plan when neither ``--device-memory-gib`` nor ``selfplay.device_memory_gib`` sets
#: one: an 80 GB accelerator (an H100).
DEFAULT_PLAN_DEVICE_GIB = 80.0


@dataclasses.dataclass
class DeviceFit:
    """How a run's programs fit one device of a pod under a memory budget.

    Attributes:
      num_devices: devices of the mesh the programs were compiled for.
      games_per_device: self-play games each device plays.
      budget_bytes: the device memory budget.
      chunk: the chunk a device plays its games in (:mod:`zerolab.selfplay.chunks`); None where even one game a
        device does not fit.
      smallest: the smallest self-play program compiled (chunks of one game), where it was compiled.
    """

    num_devices: int
    games_per_device: int
    budget_bytes: int
    chunk: ChunkChoice | None
    smallest: ProgramCost | None = None

    def does_not_fit(self, programs: list[ProgramCost]) -> list[str]:
        """Why the run does not fit a device: self-play (even its chunks of one game) or one of the other
        ``programs`` (the training step) over the budget, in words; empty where it fits."""
        budget = f"the {format_bytes(self.budget_bytes)} budget"
        reasons = []
        if self.chunk is None:
            reasons.append(f"{self.smallest.name} (1 game a device at a time) takes "
                           f"{format_bytes(self.smallest.device_bytes)} a device against {budget}")
        reasons.extend(f"{program.name} takes {format_bytes(program.device_bytes)} a device against {budget}"
                       for program in programs if program.device_bytes > self.budget_bytes)
        return reasons

    def describe(self, selfplay: ProgramCost, training: ProgramCost) -> str:
        """One line: the devices, a device's games, the budget, the chunk chosen (or why it does not fit) and the
        memory a device of self-play and of the training step."""
        head = (f"devices: {self.num_devices}, {self.games_per_device} self-play games a device, budget "
                f"{format_bytes(self.budget_bytes)} a device: ")
        reasons = self.does_not_fit([training])
        if reasons:
            return head + "does not fit: " + "; ".join(reasons)
        chunk = self.chunk
        if chunk.num_chunks == 1:
            played = f"self-play in one chunk, {format_bytes(chunk.device_bytes)} a device"
        else:
            played = (f"self-play in {chunk.num_chunks} chunks of {chunk.chunk_games} games, "
                      f"{format_bytes(chunk.device_bytes)} a device "
                      f"(in one chunk: {format_bytes(selfplay.device_bytes)})")
        return head + f"{played}; training step {format_bytes(training.device_bytes)} a device"


def fit_selfplay(selfplay_fn: Any, variables: Any, key: Any, whole: ProgramCost, budget_bytes: int,
                 num_devices: int) -> tuple[DeviceFit, list[ProgramCost]]:
    """The chunk a device would play its self-play games in under ``budget_bytes`` — the run's own rule
    (:func:`zerolab.selfplay.chunks.choose_chunk_games`) over the programs ``selfplay_fn.lower(variables, key,
    chunk_games)`` compiled here — and the programs compiled beyond ``whole`` (one chunk a device, compiled already),
    named ``self-play, chunks of N``."""
    games = selfplay_fn.games_per_device
    costs = {games: whole}

    def memory_of(chunk_games: int) -> int:
        if chunk_games not in costs:
            costs[chunk_games] = compile_cost(f"self-play, chunks of {chunk_games}",
                                              selfplay_fn.lower(variables, key, chunk_games))
        return costs[chunk_games].device_bytes

    try:
        chunk = choose_chunk_games(games, memory_of, budget_bytes)
    except SelfPlayDoesNotFit:
        chunk = None
    fit = DeviceFit(num_devices, games, budget_bytes, chunk, smallest=costs.get(1))
    return fit, [cost for size, cost in sorted(costs.items(), reverse=True) if size != games]


def plan_mesh(num_devices: int | None) -> Any:
    """The mesh a plan compiles for: one device of the local backend (``None``), or ``num_devices`` CPU devices (a pod
    shape; the CPU backend must have been started with that many:
    ``XLA_FLAGS=--xla_force_host_platform_device_count``)."""
    if num_devices is None:
        return make_mesh(jax.devices()[:1])
    devices = jax.devices("cpu")
    if len(devices) < num_devices:
        raise ValueError(f"a plan on {num_devices} devices needs {num_devices} CPU devices, this process has "
                         f"{len(devices)}: start it with XLA_FLAGS=--xla_force_host_platform_device_count="
                         f"{num_devices} (python -m experiments plan --devices {num_devices} does)")
    return make_mesh(devices[:num_devices])


def random_positions(game: Game, num_games: int = 32, plies: int = 48, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(observation [N, ...] float16, legal_action_mask [N, A])`` of ``num_games`` random legal games (pgx)."""

    @jax.jit
    def play(key):
        def ply(states, key):
            noise = jax.random.gumbel(key, states.legal_action_mask.shape)
            action = jnp.where(states.legal_action_mask, noise, -jnp.inf).argmax(-1)
            stepped = jax.vmap(game.step)(states, action)
            fresh = jax.vmap(game.init)(jax.random.split(key, num_games))
            over = stepped.terminated | stepped.truncated
            stepped = jax.tree.map(lambda new, old: jnp.where(over.reshape((-1,) + (1,) * (old.ndim - 1)), new, old),
                                   fresh, stepped)
            return stepped, (states.observation, states.legal_action_mask)

        states = jax.vmap(game.init)(jax.random.split(key, num_games))
        return jax.lax.scan(ply, states, jax.random.split(key, plies))[1]

    observation, legal = play(jax.random.key(seed))
    observation = np.asarray(observation).reshape((-1,) + tuple(observation.shape[2:])).astype(np.float16)
    return observation, np.asarray(legal).reshape(-1, legal.shape[-1])


@dataclasses.dataclass
class FrameBytes:
    """Host bytes of one replay frame, dense (the storage dtypes) and compact (the window's encoding)."""

    dense: float
    compact: float
    policy_width: int  # non-zero policy entries stored per frame
    positions: int  # random positions the estimate was made from
    codec: FrameCodec  # the window's codec of those positions


def frame_bytes(game: Game, simulations: int, search_kind: str, extras_bytes: int) -> FrameBytes:
    """Bytes of a frame of ``game``, from the replay window's own encoding (with the codec self-play stores the
    game's frames with: :func:`zerolab.selfplay.frames.frame_codec`) of random positions whose policy targets cover
    every legal move (Gumbel MuZero's) or, with ``search_kind='muzero'``, at most ``simulations`` of them (visit
    counts); ``extras_bytes``: a method's per-frame fields, added to both."""
    observation, legal = random_positions(game)
    policy = legal.astype(np.float32)
    if search_kind == "muzero":
        policy *= np.cumsum(legal, axis=1) <= simulations
    policy /= np.maximum(policy.sum(axis=1, keepdims=True), 1.0)
    count = len(observation)
    fields = {"observation": observation, "legal_action_mask": legal, "policy_target": policy,
              "value_target": np.zeros(count, np.float32), "value_mask": np.ones(count, bool)}
    window = FrameWindow.from_fields({name: np.asarray(value).astype(STORAGE_DTYPES[name])
                                      for name, value in fields.items()}, frame_codec(game))
    dense = sum(array.nbytes for array in window.fields().values()) / count
    width = int(window.arrays["policy_indices"].shape[1])
    return FrameBytes(dense + extras_bytes, window.bytes_per_frame() + extras_bytes, width, count, window.codec)


def selfplay_host_bytes(frames: PackedFrames, records: Any, frame: FrameBytes) -> int:
    """Bytes self-play sends to the host an iteration: its frames ``[T, B, ...]`` (abstract), stored in the scan,
    with the policy arrays cut to ``frame``'s policy width (:meth:`FrameWindow.from_packed_frames`), extras as they
    are, and its records."""
    def cut(name: str, value: Any) -> Any:
        if name not in POLICY_ARRAYS:
            return value
        return jax.ShapeDtypeStruct(value.shape[:-1] + (min(frame.policy_width, value.shape[-1]),), value.dtype)

    fields = jax.eval_shape(lambda packed: packed.stored_fields(), frames)
    return tree_bytes({name: cut(name, value) for name, value in fields.items()}) + tree_bytes(records)


__all__ = ["DEFAULT_PLAN_DEVICE_GIB", "DeviceFit", "FrameBytes", "fit_selfplay", "frame_bytes", "plan_mesh",
           "random_positions", "selfplay_host_bytes"]
