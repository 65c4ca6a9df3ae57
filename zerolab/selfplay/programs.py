"""Self-play's programs over a mesh: :func:`make_selfplay_fn` compiles one device's self-play
(:func:`zerolab.selfplay.scan.make_play_fn`) for all devices of a mesh, with its compile cache (one executable per
signature of the arguments) and, under a device memory budget, in chunks of games (:mod:`zerolab.selfplay.chunks`).

On a mesh the games are split over the devices with ``shard_map``: each device plays its own games with its own
random key, and no data crosses devices during self-play.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from zerolab.devices import (
    DATA_AXIS, GIB, argument_signature, check_divisible, device_memory_budget, program_memory, replicate,
)
from zerolab.games import Game
from zerolab.search.config import SearchConfig, SearchRules
from zerolab.selfplay.chunks import choose_chunk_games, lanes_in_chunks, play_in_chunks
from zerolab.selfplay.hooks import search_move_rule
from zerolab.selfplay.scan import make_play_fn
from zerolab.selfplay.types import PlayFn, SelfPlayConfig

logger = logging.getLogger(__name__)


def make_selfplay_fn(
    game: Game,
    network: nn.Module,
    search_config: SearchConfig,
    config: SelfPlayConfig,
    mesh: Mesh,
    rules: SearchRules | None = None,
    play_fn: PlayFn | None = None,
    frozen_variables: Any = None,
):
    """A jitted ``(variables, key) -> (PackedFrames [T, B, ...], PlyRecord [T, B])`` over all devices of ``mesh``.

    The program is compiled ahead of its first call (logged with its duration).  Under a device memory budget
    (``config.device_memory_gib``, or the device's own memory where the backend reports it) each device plays its
    games in the largest chunks whose compiled program fits (:func:`zerolab.selfplay.chunks.choose_chunk_games`;
    logged), with the same output shapes; without one (the CPU, the key unset) in one chunk.

    ``selfplay.compile(variables, key)`` compiles ahead of a call and returns the seconds it took (0.0 when done
    before).  ``selfplay.lower(variables, key, chunk_games=None)`` lowers the program with chunks of ``chunk_games`` games a
    device (default: all of a device's games, one chunk) without running it; ``experiments plan`` reads its cost and
    memory from there, and ``selfplay.games_per_device`` the sizes a chunk may take.

    ``play_fn`` is one device's self-play (default: :func:`zerolab.selfplay.scan.make_play_fn` with the search move
    rule, ``rules``, the standard lane rule and value targets).  ``variables`` must be replicated on the mesh;
    ``frozen_variables`` are replicated here once and passed to every call.  Outputs are sharded along the game axis B.
    """
    check_divisible("selfplay.num_games", config.num_games, mesh)
    games_per_device = config.num_games // mesh.devices.size
    if play_fn is None:
        play_fn = make_play_fn(game, search_move_rule(game, network, search_config, rules), config)
    sharded = chunked_selfplay_programs(play_fn, games_per_device, mesh)
    local_device = next(device for device in mesh.devices.flat if device.process_index == jax.process_index())
    budget_bytes = device_memory_budget(config.device_memory_gib, local_device)
    frozen_on_devices = replicate(frozen_variables, mesh) if frozen_variables is not None else None
    compiled = {}  # one executable per signature (shapes, dtypes, shardings) of the arguments

    def lower(variables, key, chunk_games: int | None = None):
        """The program lowered for ``variables`` and ``key`` (concrete or ``jax.ShapeDtypeStruct``s), with chunks of
        ``chunk_games`` games a device (default: one chunk)."""
        return sharded(chunk_games or games_per_device).lower(variables, frozen_on_devices, key)

    def compile_within_budget(variables, key):
        """The executable for these arguments: one chunk a device, or under a budget the largest chunk that fits."""
        if budget_bytes is None:
            return lower(variables, key).compile()
        executables = {}

        def memory_of(chunk_games: int) -> int:
            executables[chunk_games] = lower(variables, key, chunk_games).compile()
            return program_memory(executables[chunk_games]).device_bytes

        choice = choose_chunk_games(games_per_device, memory_of, budget_bytes)
        logger.info("self-play: %d games a device in %d chunk(s) of %d, %.2f GiB a device (budget %.2f GiB)",
                    games_per_device, choice.num_chunks, choice.chunk_games, choice.device_bytes / GIB,
                    budget_bytes / GIB)
        return executables[choice.chunk_games]

    def compile(variables, key) -> float:
        """Compiles the program for arguments like these ahead of a call and returns the seconds it took (0.0 when
        it was compiled already), so that a caller can time its calls without their compilation."""
        signature = argument_signature((variables, key))
        if signature in compiled:
            return 0.0
        started = time.perf_counter()
        logger.info("self-play: compiling %d games × %d plies on %d devices", config.num_games,
                    config.plies_per_iteration, mesh.devices.size)
        compiled[signature] = compile_within_budget(variables, key)
        seconds = time.perf_counter() - started
        logger.info("self-play: compiled in %.1f s", seconds)
        return seconds

    def selfplay(variables, key):
        compile(variables, key)  # ahead of the call, so that the log says when compilation ends
        return compiled[argument_signature((variables, key))](variables, frozen_on_devices, key)

    lane_programs = chunked_lane_programs(play_fn, games_per_device, mesh)
    lane_chunks: dict[str, int] = {}  # the chunk size of the carried calls, chosen once (the lanes' layout)
    compiled_lanes = {}  # one executable of the carried call per signature of its arguments

    def lanes_template(variables, key):
        """The lanes ``init_lanes`` makes for arguments like these, as ``jax.ShapeDtypeStruct``s sharded as the
        carried call takes them (a restore's template)."""
        return abstract_lanes(lane_programs("init", lanes_chunk_games(variables, key)), variables, frozen_on_devices,
                              key, mesh)

    def lanes_chunk_games(variables, key) -> int:
        """Games a chunk in the carried calls: one chunk a device, or under a budget the largest that fits (compiled
        to choose; the executables are kept)."""
        if "games" not in lane_chunks:
            if budget_bytes is None:
                lane_chunks["games"] = games_per_device
            else:
                executables = {}

                def memory_of(chunk_games: int) -> int:
                    lanes = abstract_lanes(lane_programs("init", chunk_games), variables, frozen_on_devices, key, mesh)
                    executables[chunk_games] = lane_programs("play", chunk_games).lower(
                        variables, frozen_on_devices, key, lanes).compile()
                    return program_memory(executables[chunk_games]).device_bytes

                choice = choose_chunk_games(games_per_device, memory_of, budget_bytes)
                logger.info("self-play (carried lanes): %d games a device in %d chunk(s) of %d, %.2f GiB a device "
                            "(budget %.2f GiB)", games_per_device, choice.num_chunks, choice.chunk_games,
                            choice.device_bytes / GIB, budget_bytes / GIB)
                lane_chunks["games"] = choice.chunk_games
                lanes = abstract_lanes(lane_programs("init", choice.chunk_games), variables, frozen_on_devices, key,
                                       mesh)
                compiled_lanes[argument_signature((variables, key, lanes))] = executables[choice.chunk_games]
        return lane_chunks["games"]

    def init_lanes(variables, key):
        """The lanes of a run's first call with ``key`` (sharded over the mesh's devices, the games' axis)."""
        return lane_programs("init", lanes_chunk_games(variables, key))(variables, frozen_on_devices, key)

    def compile_lanes(variables, key, lanes) -> float:
        """Compiles the carried call for arguments like these ahead of a call; the seconds it took (0.0 when done
        before)."""
        chunk_games = lanes_chunk_games(variables, key)
        signature = argument_signature((variables, key, lanes))
        if signature in compiled_lanes:
            return 0.0
        started = time.perf_counter()
        logger.info("self-play: compiling %d games × %d plies on %d devices (carried lanes)", config.num_games,
                    config.plies_per_iteration, mesh.devices.size)
        compiled_lanes[signature] = lane_programs("play", chunk_games).lower(
            variables, frozen_on_devices, key, lanes).compile()
        seconds = time.perf_counter() - started
        logger.info("self-play: compiled in %.1f s", seconds)
        return seconds

    def play_lanes(variables, key, lanes):
        """One call continuing ``lanes``: ``(frames [T, B, ...], records [T, B], lanes)``, sharded along B."""
        compile_lanes(variables, key, lanes)
        return compiled_lanes[argument_signature((variables, key, lanes))](variables, frozen_on_devices, key, lanes)

    selfplay.lower = lower
    selfplay.compile = compile
    selfplay.games_per_device = games_per_device
    selfplay.init_lanes = init_lanes
    selfplay.play_lanes = play_lanes
    selfplay.compile_lanes = compile_lanes
    selfplay.lanes_template = lanes_template
    return selfplay


def abstract_lanes(init_program: Callable, variables, frozen, key, mesh: Mesh):
    """The lanes ``init_program`` makes, as ``jax.ShapeDtypeStruct``s sharded along their leading axis over
    ``mesh`` (as the carried call takes and returns them)."""
    sharding = NamedSharding(mesh, PartitionSpec(DATA_AXIS))
    return jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding),
                        jax.eval_shape(init_program, variables, frozen, key))


def chunked_lane_programs(play_fn: PlayFn, games_per_device: int, mesh: Mesh) -> Callable[[str, int], Any]:
    """``program(kind, chunk_games)``: the jitted carried-lane calls over ``mesh`` in chunks of ``chunk_games``
    (:func:`zerolab.selfplay.chunks.lanes_in_chunks`), each device with key ``fold_in(key, device index)`` as
    :func:`chunked_selfplay_programs`: ``"init"``: ``(variables, frozen, key) -> lanes``; ``"play"``:
    ``(variables, frozen, key, lanes) -> (frames, records, lanes)``.  Lanes are sharded along their leading axis (the
    games; a lane rule's shared state along its chunks, one a chunk of each device)."""
    if not hasattr(play_fn, "play_lanes"):
        raise TypeError("this self-play function cannot carry lanes from call to call (it has no play_lanes: make "
                        "it with zerolab.selfplay.make_play_fn)")
    programs = {}

    def program(kind: str, chunk_games: int):
        if games_per_device % chunk_games:
            raise ValueError(f"chunks of {chunk_games} games do not split a device's {games_per_device} games")
        if (kind, chunk_games) not in programs:
            init_chunks, play_chunks = lanes_in_chunks(play_fn, games_per_device // chunk_games)
            lanes_spec = PartitionSpec(DATA_AXIS)

            def per_device_init(variables, frozen, key):
                key = jax.random.fold_in(key, jax.lax.axis_index(DATA_AXIS))
                return init_chunks(variables, key, games_per_device, frozen)

            def per_device_play(variables, frozen, key, lanes):
                key = jax.random.fold_in(key, jax.lax.axis_index(DATA_AXIS))
                return play_chunks(variables, key, games_per_device, frozen, None, lanes)

            replicated = (PartitionSpec(), PartitionSpec(), PartitionSpec())
            if kind == "init":
                mapped = jax.shard_map(per_device_init, mesh=mesh, in_specs=replicated, out_specs=lanes_spec,
                                       check_vma=False)
            else:
                mapped = jax.shard_map(per_device_play, mesh=mesh, in_specs=replicated + (lanes_spec,),
                                       out_specs=(PartitionSpec(None, DATA_AXIS), PartitionSpec(None, DATA_AXIS),
                                                  lanes_spec), check_vma=False)
            programs[kind, chunk_games] = jax.jit(mapped)
        return programs[kind, chunk_games]

    return program


def chunked_selfplay_programs(play_fn: PlayFn, games_per_device: int, mesh: Mesh) -> Callable[[int], Any]:
    """``program(chunk_games)``: the jitted ``(variables, frozen, key) -> (frames, records)`` over ``mesh``, each
    device playing its ``games_per_device`` games with key ``fold_in(key, device index)`` in chunks of
    ``chunk_games`` (:func:`zerolab.selfplay.chunks.play_in_chunks`), one jitted function a chunk size."""
    programs = {}

    def program(chunk_games: int):
        if games_per_device % chunk_games:
            raise ValueError(f"chunks of {chunk_games} games do not split a device's {games_per_device} games")
        if chunk_games not in programs:
            play_chunks = play_in_chunks(play_fn, games_per_device // chunk_games)

            def per_device(variables, frozen, key):
                key = jax.random.fold_in(key, jax.lax.axis_index(DATA_AXIS))
                return play_chunks(variables, key, games_per_device, frozen)

            programs[chunk_games] = jax.jit(jax.shard_map(
                per_device,
                mesh=mesh,
                in_specs=(PartitionSpec(), PartitionSpec(), PartitionSpec()),
                out_specs=PartitionSpec(None, DATA_AXIS),
                check_vma=False,
            ))
        return programs[chunk_games]

    return program
