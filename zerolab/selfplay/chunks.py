"""Self-play that fits the device it is given: a device's games played in chunks, one chunk after another.

A device's self-play program holds all its games at once: their search trees, their states, the frames of every ply.
When that is more than the device's memory budget (``selfplay.device_memory_gib``, or the memory the backend lets
JAX allocate), the device plays its ``G`` games as ``C`` chunks of ``G / C`` games (``C`` divides ``G``, so frames
keep their shape): :func:`play_in_chunks` runs the chunks one after another inside the jitted program and writes each
chunk's frames and records into its own columns of ``[T, G, ...]`` arrays, so the result has exactly the shapes of
one call over all the games.  :func:`choose_chunk_games` picks the largest chunk whose compiled program fits the
budget, from the programs' own memory (XLA's ``memory_analysis``: arguments + outputs + temporaries).

**Random streams.**  Chunk ``c`` of ``C`` plays with ``fold_in(key, c)`` of the device's key; one chunk plays with
the device's key itself, so a device that needs no chunks plays exactly the games it played before chunks existed
(:func:`chunk_keys`).

Each chunk is a self-play call of its own, as another device's games are: a lane rule's per-device state (SAI's
queue of branches) is per chunk, and a records summary's per-call totals are per chunk.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from zerolab.devices import format_bytes


def chunk_keys(key: jax.Array, num_chunks: int) -> jax.Array:
    """``[num_chunks]`` keys, one a chunk: ``fold_in(key, c)`` for chunk ``c``, or ``key`` itself for one chunk."""
    if num_chunks == 1:
        return key[None]
    return jax.vmap(lambda chunk: jax.random.fold_in(key, chunk))(jnp.arange(num_chunks))


def play_in_chunks(play_fn: Callable, num_chunks: int) -> Callable:
    """``play_fn`` (one device's self-play, a :data:`zerolab.selfplay.types.PlayFn`) over ``num_games`` games as
    ``num_chunks`` calls of ``num_games / num_chunks`` games each.

    ``play(variables, key, num_games, frozen, settings) -> (frames [T, num_games, ...], records [T, num_games,
    ...])``: chunk
    ``c`` plays games ``[c·b, (c + 1)·b)`` (``b = num_games / num_chunks``) with key ``chunk_keys(key, C)[c]``;
    one chunk is ``play_fn`` itself.

    The chunks run as a ``lax.fori_loop`` inside the caller's jitted program, writing into ``[T, num_games, ...]``
    buffers carried by the loop (``dynamic_update_slice``, in place): one executable a device whatever the number of
    chunks, one chunk's temporaries alive at a time (its search and its frames before they are copied into their
    columns; XLA reuses them from one iteration to the next), and no second copy of all the outputs to join them.  A
    Python loop of jitted calls would hold every chunk's frames and then their concatenation (twice the outputs), or
    bring each chunk back to the host (a round trip a chunk); a Python loop unrolled inside the jit would compile the
    game's program ``C`` times and let XLA schedule independent chunks side by side, so their temporaries could all
    be alive at once — the memory chunks are meant to save.  A chunk's program is traced once: a jitted function
    whose trace gives the buffers' shapes and is reused by the loop's body (jit's trace cache; XLA inlines the call).
    """
    if num_chunks == 1:
        return play_fn

    def play(variables: Any, key: jax.Array, num_games: int, frozen_variables: Any = None, settings: Any = None
             ) -> tuple[Any, Any]:
        if num_games % num_chunks:
            raise ValueError(f"{num_games} games do not split into {num_chunks} chunks")
        chunk_games = num_games // num_chunks
        keys = chunk_keys(key, num_chunks)

        # Jitted so that it is traced once: for its output shapes here, then called from the loop's body with the
        # same abstract arguments (jit's trace cache; XLA inlines the call).
        @jax.jit
        def play_chunk(variables: Any, chunk_key: jax.Array, frozen_variables: Any, settings: Any) -> tuple[Any, Any]:
            return play_fn(variables, chunk_key, chunk_games, frozen_variables, settings)

        chunk_shapes = jax.eval_shape(play_chunk, variables, keys[0], frozen_variables, settings)
        outputs = jax.tree.map(lambda leaf: jnp.zeros(leaf.shape[:1] + (num_games,) + leaf.shape[2:], leaf.dtype),
                               chunk_shapes)

        def one_chunk(chunk: jax.Array, outputs: Any) -> Any:
            played = play_chunk(variables, keys[chunk], frozen_variables, settings)
            return jax.tree.map(lambda output, leaf: jax.lax.dynamic_update_slice_in_dim(
                output, leaf, chunk * chunk_games, axis=1), outputs, played)

        return jax.lax.fori_loop(0, num_chunks, one_chunk, outputs)

    return play


def stack_shared(lanes: Any) -> Any:
    """``lanes`` (a :class:`~zerolab.selfplay.types.Lanes`) with its shared state given a leading axis of 1: the form
    carried lanes take outside one chunk's play (every leaf with a leading axis, lanes ``[B]`` and shared state
    ``[chunks]``), so that they are split over devices and chunks like the games."""
    return lanes.replace(shared=jax.tree.map(lambda leaf: jnp.asarray(leaf)[None], lanes.shared))


def chunk_lanes(lanes: Any, chunk: jax.Array, chunk_games: int) -> Any:
    """Chunk ``chunk``'s lanes out of a device's carried lanes (lanes ``[G]``, shared state ``[C]``)."""
    own = jax.tree.map(lambda leaf: jax.lax.dynamic_slice_in_dim(leaf, chunk * chunk_games, chunk_games, axis=0),
                       lanes.replace(shared=None))
    return own.replace(shared=jax.tree.map(lambda leaf: jax.lax.dynamic_index_in_dim(leaf, chunk, keepdims=False),
                                           lanes.shared))


def lanes_in_chunks(play_fn: Callable, num_chunks: int) -> tuple[Callable, Callable]:
    """``(init, play)``: ``play_fn``'s carried-lane calls (``play_fn.init_lanes``, ``play_fn.play_lanes``, see
    :func:`zerolab.selfplay.scan.make_play_fn`) over ``num_games`` games as ``num_chunks`` chunks, as
    :func:`play_in_chunks` plays them (chunk ``c``: games ``[c·b, (c + 1)·b)`` with key ``chunk_keys(key, C)[c]``).

    ``init(variables, key, num_games, frozen, settings) -> lanes`` and ``play(variables, key, num_games, frozen,
    settings, lanes) -> (frames, records, lanes)``; the lanes have leaves ``[num_games, ...]`` and a shared state
    ``[C, ...]`` (each chunk's own: :func:`stack_shared`)."""
    init_lanes, play_lanes = play_fn.init_lanes, play_fn.play_lanes
    if num_chunks == 1:
        def init_one(variables, key, num_games, frozen_variables=None, settings=None):
            return stack_shared(init_lanes(variables, key, num_games, frozen_variables, settings))

        def play_one(variables, key, num_games, frozen_variables, settings, lanes):
            unstacked = lanes.replace(shared=jax.tree.map(lambda leaf: leaf[0], lanes.shared))
            frames, records, lanes = play_lanes(variables, key, num_games, frozen_variables, settings, unstacked)
            return frames, records, stack_shared(lanes)

        return init_one, play_one

    def buffers(shapes: Any, num_games: int, games_axis: int) -> Any:
        return jax.tree.map(lambda leaf: jnp.zeros(leaf.shape[:games_axis] + (num_games,) + leaf.shape[games_axis + 1:],
                                                   leaf.dtype), shapes)

    def lane_buffers(shapes: Any, num_games: int) -> Any:
        own = buffers(shapes.replace(shared=None), num_games, 0)
        return own.replace(shared=jax.tree.map(lambda leaf: jnp.zeros((num_chunks,) + leaf.shape, leaf.dtype),
                                               shapes.shared))

    def write_lanes(output: Any, lanes: Any, chunk: jax.Array, chunk_games: int) -> Any:
        own = jax.tree.map(lambda out, leaf: jax.lax.dynamic_update_slice_in_dim(out, leaf, chunk * chunk_games, axis=0),
                           output.replace(shared=None), lanes.replace(shared=None))
        return own.replace(shared=jax.tree.map(
            lambda out, leaf: jax.lax.dynamic_update_index_in_dim(out, leaf, chunk, axis=0), output.shared,
            lanes.shared))

    def init(variables, key, num_games, frozen_variables=None, settings=None):
        chunk_games = num_games // num_chunks
        keys = chunk_keys(key, num_chunks)

        @jax.jit  # traced once: for the shapes, then in the loop's body (as play_in_chunks's chunks)
        def init_chunk(variables, chunk_key, frozen_variables, settings):
            return init_lanes(variables, chunk_key, chunk_games, frozen_variables, settings)

        outputs = lane_buffers(jax.eval_shape(init_chunk, variables, keys[0], frozen_variables, settings), num_games)
        return jax.lax.fori_loop(0, num_chunks, lambda chunk, out: write_lanes(
            out, init_chunk(variables, keys[chunk], frozen_variables, settings), chunk, chunk_games), outputs)

    def play(variables, key, num_games, frozen_variables, settings, lanes):
        chunk_games = num_games // num_chunks
        keys = chunk_keys(key, num_chunks)

        @jax.jit  # traced once: for the shapes, then in the loop's body (as play_in_chunks's chunks)
        def play_own(variables, chunk_key, frozen_variables, settings, own_lanes):
            return play_lanes(variables, chunk_key, chunk_games, frozen_variables, settings, own_lanes)

        def play_chunk(chunk):
            return play_own(variables, keys[chunk], frozen_variables, settings, chunk_lanes(lanes, chunk, chunk_games))

        frame_shapes, record_shapes, lane_shapes = jax.eval_shape(
            play_own, variables, keys[0], frozen_variables, settings, chunk_lanes(lanes, 0, chunk_games))
        outputs = (buffers((frame_shapes, record_shapes), num_games, 1), lane_buffers(lane_shapes, num_games))

        def one_chunk(chunk, outputs):
            (frames, records, new_lanes), (played, carried) = play_chunk(chunk), outputs
            played = jax.tree.map(lambda output, leaf: jax.lax.dynamic_update_slice_in_dim(
                output, leaf, chunk * chunk_games, axis=1), played, (frames, records))
            return played, write_lanes(carried, new_lanes, chunk, chunk_games)

        (frames, records), lanes = jax.lax.fori_loop(0, num_chunks, one_chunk, outputs)
        return frames, records, lanes

    return init, play


def chunk_sizes(num_games: int) -> list[int]:
    """The chunk sizes ``num_games`` splits into without a remainder, smallest first."""
    return [size for size in range(1, num_games + 1) if num_games % size == 0]


class SelfPlayDoesNotFit(ValueError):
    """Even one game a device takes more device memory than the budget."""

    def __init__(self, budget_bytes: int, smallest_bytes: int, num_games: int):
        self.budget_bytes, self.smallest_bytes, self.num_games = budget_bytes, smallest_bytes, num_games
        super().__init__(
            f"self-play does not fit the device memory budget of {format_bytes(budget_bytes)}: its smallest program, "
            f"a device's {num_games} games in chunks of 1 game, takes {format_bytes(smallest_bytes)} a device "
            f"(set selfplay.device_memory_gib, use more devices, or make the search or the network smaller)")


@dataclasses.dataclass(frozen=True)
class ChunkChoice:
    """How a device plays its games under a memory budget.

    Attributes:
      num_games: the device's games.
      chunk_games: games a chunk (divides ``num_games``).
      device_bytes: the chosen program's device memory (compiled).
      budget_bytes: the budget it fits.
      measured: ``{chunk size: device bytes}`` of every program compiled to choose.
    """

    num_games: int
    chunk_games: int
    device_bytes: int
    budget_bytes: int
    measured: dict = dataclasses.field(default_factory=dict)

    @property
    def num_chunks(self) -> int:
        return self.num_games // self.chunk_games


def choose_chunk_games(num_games: int, memory_of: Callable[[int], int], budget_bytes: int) -> ChunkChoice:
    """The largest chunk size (a divisor of ``num_games``) whose program's memory ``memory_of(size)`` (bytes, one
    device's: compiles the program) is at most ``budget_bytes``.

    Compiles, in turn while none fits: all the games as one chunk (a device that fits needs nothing more), the largest
    chunk of several (``num_games / p``, p the smallest prime factor), and chunks of one game (the smallest program:
    :class:`SelfPlayDoesNotFit` when even it is over the budget).  A program of several chunks holds the outputs, one
    chunk's frames before they are written into them and one chunk's search, so its memory is about affine in the
    chunk's games; one chunk (the play itself, whose frames are the outputs) lies below that line, so the line is
    drawn through the two programs of several chunks.  The largest size it predicts to fit is compiled to verify it,
    and smaller sizes are tried in turn while the compiled program is over the budget.
    """
    sizes = chunk_sizes(num_games)
    measured = {}

    def fits(size: int) -> bool:
        if size not in measured:
            measured[size] = memory_of(size)
        return measured[size] <= budget_bytes

    def choice(size: int) -> ChunkChoice:
        return ChunkChoice(num_games, size, measured[size], budget_bytes, dict(measured))

    largest_of_several = sizes[-2] if len(sizes) > 1 else num_games
    for size in (num_games, largest_of_several):
        if fits(size):
            return choice(size)
    if not fits(1):
        raise SelfPlayDoesNotFit(budget_bytes, measured[1], num_games)
    per_game = (measured[largest_of_several] - measured[1]) / (largest_of_several - 1)
    predicted_to_fit = [size for size in sizes[1:-2] if measured[1] + per_game * (size - 1) <= budget_bytes]
    for size in reversed(predicted_to_fit):
        if fits(size):
            return choice(size)
    return choice(1)
