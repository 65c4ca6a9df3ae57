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
from jax.sharding import Mesh, PartitionSpec

from zerolab.devices import (
    DATA_AXIS, GIB, argument_signature, check_divisible, device_memory_budget, program_memory, replicate,
)
from zerolab.games import Game
from zerolab.search.config import SearchConfig, SearchRules
from zerolab.selfplay.chunks import choose_chunk_games, play_in_chunks
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

    selfplay.lower = lower
    selfplay.compile = compile
    selfplay.games_per_device = games_per_device
    return selfplay


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
