"""Devices: one data-parallel mesh axis over every device of every process.

The same config runs unchanged on 1 device and on N: batches are split along the mesh axis ``data`` and must divide
evenly by the number of devices (a clear error says so otherwise).  With ``jax.distributed`` initialised, the mesh
spans all hosts; each process feeds and reads back only its own (addressable) part of a batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

DATA_AXIS = "data"


def make_mesh(devices: list[jax.Device] | None = None) -> Mesh:
    """A 1-D mesh over ``devices`` (default: all devices of all processes)."""
    devices = jax.devices() if devices is None else devices
    return Mesh(np.asarray(devices), (DATA_AXIS,))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())


def batch_sharded(mesh: Mesh, axis: int = 0) -> NamedSharding:
    """Sharding that splits array axis ``axis`` over the devices."""
    return NamedSharding(mesh, PartitionSpec(*([None] * axis), DATA_AXIS))


StepFn = Callable[[Any, Any], tuple[Any, Any]]
"""``(state, batch) -> (new state, metrics)``: one training update on a global batch."""


def jit_step(step_fn: StepFn, mesh: Mesh, *, batch_axis: int = 0, donate_state: bool = True) -> StepFn:
    """``step_fn`` jitted with the state replicated and the batch sharded over ``mesh`` (array axis ``batch_axis``).

    The new state and the metrics come back replicated; the input state is donated (its buffers are reused for the
    new one, so the caller must not read it again) unless ``donate_state=False``.
    """
    return jax.jit(
        step_fn,
        in_shardings=(replicated(mesh), batch_sharded(mesh, batch_axis)),
        out_shardings=(replicated(mesh), replicated(mesh)),
        donate_argnums=(0,) if donate_state else (),
    )


def check_divisible(name: str, size: int, mesh: Mesh) -> None:
    devices = mesh.devices.size
    if size % devices:
        raise ValueError(f"{name}={size} must be divisible by the number of devices ({devices})")


def replicate(tree: Any, mesh: Mesh) -> Any:
    """Places a pytree of host or device arrays on every device of the mesh."""
    return jax.device_put(tree, replicated(mesh))


def shard_host_batch(tree: Any, mesh: Mesh, axis: int = 0) -> Any:
    """Turns this process's part of a batch (numpy, split on ``axis``) into global arrays sharded over the mesh."""
    sharding = batch_sharded(mesh, axis)
    if jax.process_count() == 1:
        return jax.device_put(tree, sharding)
    return jax.tree.map(lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), tree)


def local_numpy(tree: Any, axis: int = 0) -> Any:
    """This process's part of sharded global arrays as numpy (the whole array on a single host)."""
    if jax.process_count() == 1:
        return jax.tree.map(np.asarray, tree)

    def gather_local(x):
        shards = sorted(x.addressable_shards, key=lambda shard: shard.index[axis].start or 0)
        return np.concatenate([np.asarray(shard.data) for shard in shards], axis=axis)

    return jax.tree.map(gather_local, tree)
