"""Devices: one data-parallel mesh axis over every device of every process.

The same config runs unchanged on 1 device and on N: batches are split along the mesh axis ``data`` and must divide
evenly by the number of devices (a clear error says so otherwise).  With ``jax.distributed`` initialised
(:func:`start_processes`, before any other JAX use), the mesh spans all hosts; each process feeds and reads back only
its own (addressable) part of a batch, :func:`local_batch_size` says how large that part is, and
:func:`process_numpy_rng` gives each process its own host random stream.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

DATA_AXIS = "data"
DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"
GIB = 1024**3
COORDINATOR_ADDRESS = re.compile(r"^(?P<host>\[[0-9a-fA-F:.]+\]|[^:\s]+):(?P<port>[0-9]{1,5})$")


def start_processes(coordinator_address: str | None = None, num_processes: int | None = None,
                    process_id: int | None = None) -> None:
    """Joins this process to a multi-process run: ``jax.distributed.initialize`` with the given values.

    Must come before any other JAX use (JAX refuses otherwise).  Every process gets the same ``coordinator_address``
    (``HOST:PORT`` of process 0, which serves it) and ``num_processes``, and its own ``process_id`` in
    ``[0, num_processes)``.  A value left as None is detected by JAX from the cluster environment (Slurm, Open MPI,
    Cloud TPU, Kubernetes) or from ``JAX_COORDINATOR_ADDRESS``.
    """
    if coordinator_address is not None:
        address = COORDINATOR_ADDRESS.match(coordinator_address)
        if not address or not 0 < int(address.group("port")) < 65536:
            raise ValueError(f"coordinator address {coordinator_address!r} must be HOST:PORT with a port in "
                             f"[1, 65535] (e.g. 10.0.0.1:1234)")
    if num_processes is not None and num_processes < 1:
        raise ValueError(f"number of processes must be at least 1, got {num_processes}")
    if process_id is not None and (process_id < 0 or (num_processes is not None and process_id >= num_processes)):
        raise ValueError(f"process id {process_id} must be in [0, {num_processes if num_processes else 'N'})")
    jax.distributed.initialize(coordinator_address=coordinator_address, num_processes=num_processes,
                               process_id=process_id)


def with_device_count(xla_flags: str, count: int) -> str:
    """``xla_flags`` with the CPU backend's device count set to ``count`` (an earlier count replaced)."""
    kept = re.sub(rf"{DEVICE_COUNT_FLAG}=\S*", "", xla_flags).split()
    return " ".join(kept + [f"{DEVICE_COUNT_FLAG}={count}"])


def request_host_devices(count: int) -> int:
    """Asks JAX's CPU backend for ``count`` devices and returns how many it has.

    The backend reads its device count from ``XLA_FLAGS`` once, when it starts, so this works before anything has
    asked JAX for a device (importing JAX is fine) and returns ``count``; after that the backend keeps the count it
    started with, which is returned.  Host devices share the machine's cores: on a CPU, N of them (one a core) run N
    programs side by side, each single-threaded, which is how self-play's many small tree operations keep every core
    busy (zerolab/README.md, "Search efficiency").
    """
    if count < 1:
        raise ValueError(f"host device count must be at least 1, got {count}")
    previous = os.environ.get("XLA_FLAGS")
    os.environ["XLA_FLAGS"] = with_device_count(previous or "", count)
    have = len(jax.devices("cpu"))
    if have != count:  # the backend had started: the flag would only reach child processes, so it is taken back
        if previous is None:
            del os.environ["XLA_FLAGS"]
        else:
            os.environ["XLA_FLAGS"] = previous
    return have


def is_main_process() -> bool:
    """Whether this process writes the run's shared files (metrics, logs of record, game records): process 0."""
    return jax.process_index() == 0


def process_numpy_rng(seed: int, process_index: int | None = None) -> np.random.Generator:
    """The host random generator of process ``process_index`` (default: this one) for a run seeded ``seed``.

    Process 0 gets ``default_rng(seed)``, so a single-process run draws exactly what it always drew; process ``i > 0``
    gets ``default_rng([seed, i])``: a stream of its own, the same on every rerun.
    """
    process_index = jax.process_index() if process_index is None else process_index
    return np.random.default_rng(int(seed) if process_index == 0 else [int(seed), int(process_index)])


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


def argument_signature(arguments: Any) -> tuple:
    """What a jitted function compiles one program for: the arguments' tree structure and each leaf's shape, dtype
    and sharding (equal signatures share one executable)."""
    leaves, structure = jax.tree.flatten(arguments)
    return structure, tuple((np.shape(leaf), str(getattr(leaf, "dtype", type(leaf))), getattr(leaf, "sharding", None))
                            for leaf in leaves)


class AheadOfTimeStep:
    """A jitted step that can be compiled ahead of its first call, so that a caller times its compilation apart
    (:meth:`compile`).  A call runs the executable compiled last; arguments of another signature (the executable
    refuses them with a TypeError before it runs anything) go through ``jax.jit``.  ``lower`` is ``jax.jit``'s
    (plans read costs from it).  No signature is computed on the call path: a training loop calls this every update."""

    def __init__(self, jitted: Any):
        self.jitted = jitted
        self.compiled_signatures: set[tuple] = set()
        self.executable: Any = None

    def compile(self, *arguments) -> float:
        """Compiles the program for arguments like these and returns the seconds it took (0.0 when done before)."""
        signature = argument_signature(arguments)
        if signature in self.compiled_signatures:
            return 0.0
        started = time.perf_counter()
        self.executable = self.jitted.lower(*arguments).compile()
        self.compiled_signatures.add(signature)
        return time.perf_counter() - started

    def lower(self, *arguments):
        return self.jitted.lower(*arguments)

    def __call__(self, *arguments):
        if self.executable is not None:
            try:
                return self.executable(*arguments)
            except TypeError:  # "argument types differ": checked before the executable runs, nothing donated
                pass
        return self.jitted(*arguments)


def jit_step(step_fn: StepFn, mesh: Mesh, *, batch_axis: int = 0, donate_state: bool = True) -> AheadOfTimeStep:
    """``step_fn`` jitted with the state replicated and the batch sharded over ``mesh`` (array axis ``batch_axis``),
    compilable ahead of its first call (:class:`AheadOfTimeStep`).

    The new state and the metrics come back replicated; the input state is donated (its buffers are reused for the
    new one, so the caller must not read it again) unless ``donate_state=False``.
    """
    return AheadOfTimeStep(jax.jit(
        step_fn,
        in_shardings=(replicated(mesh), batch_sharded(mesh, batch_axis)),
        out_shardings=(replicated(mesh), replicated(mesh)),
        donate_argnums=(0,) if donate_state else (),
    ))


@dataclasses.dataclass
class ProgramMemory:
    """A compiled program's device memory as XLA plans it, in bytes, for one device (a sharded program's figures are
    one device's: its arguments', outputs' and temporaries' shards).

    Attributes:
      argument_bytes: the inputs (variables, keys) the call reads.
      output_bytes: what the call returns.
      temp_bytes: XLA's temporaries (a search tree, a scan's stacked outputs before they are returned, ...).
      alias_bytes: inputs donated to outputs (counted in both, held once).
    """

    argument_bytes: int
    output_bytes: int
    temp_bytes: int
    alias_bytes: int

    @property
    def device_bytes(self) -> int:
        """Peak device memory of a call as XLA plans it: arguments + outputs + temporaries − donated aliases."""
        return self.argument_bytes + self.output_bytes + self.temp_bytes - self.alias_bytes


def format_bytes(count: float) -> str:
    """``count`` bytes in words: GiB from a tenth of one, else MiB (``12.40 GiB``, ``3.1 MiB``)."""
    return f"{count / GIB:.2f} GiB" if count >= GIB / 10 else f"{count / 1024**2:.1f} MiB"


def program_memory(compiled: Any) -> ProgramMemory:
    """The device memory of ``compiled`` (a ``jax.stages.Compiled``) from XLA's ``memory_analysis`` (zeros where a
    backend reports none)."""
    memory = compiled.memory_analysis()
    return ProgramMemory(*(int(getattr(memory, f"{name}_size_in_bytes", 0) or 0)
                           for name in ("argument", "output", "temp", "alias")))


def device_memory_budget(gib: float | None, device: jax.Device) -> int | None:
    """Bytes a program may take on ``device``: ``gib`` GiB where given, else the memory the backend lets JAX allocate
    on the device (``memory_stats()['bytes_limit']``: GPUs and TPUs), else None (the CPU backend reports none)."""
    if gib is not None:
        return int(gib * GIB)
    stats = device.memory_stats() or {}
    return int(stats["bytes_limit"]) if "bytes_limit" in stats else None


def device_memory_bytes(gib: float | None, device: jax.Device) -> int:
    """Bytes a program may take on ``device``: :func:`device_memory_budget`, or on the CPU (which reports no limit)
    the host's physical memory."""
    budget = device_memory_budget(gib, device)
    if budget is not None:
        return budget
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def process_share(name: str, size: int, num_devices: int, num_local_devices: int, num_processes: int = 1) -> int:
    """This process's part of a global batch of ``size`` split evenly over ``num_devices`` devices, of which
    ``num_local_devices`` belong to this process: ``size / num_devices * num_local_devices``.

    Raises a ``ValueError`` naming ``name`` when ``size`` does not divide by the number of devices (``num_processes``
    processes × their local devices).
    """
    if size % num_devices:
        where = f"{num_processes} processes × {num_devices // num_processes} local devices = " if num_processes > 1 else ""
        raise ValueError(f"{name}={size} must be divisible by the number of devices ({where}{num_devices})")
    return size // num_devices * num_local_devices


def mesh_processes(mesh: Mesh) -> int:
    return len({device.process_index for device in mesh.devices.flat})


def local_batch_size(name: str, size: int, mesh: Mesh) -> int:
    """How many of a global batch's ``size`` rows this process supplies to :func:`shard_host_batch` (all of them on
    a single host; ``size / process_count`` with equal hosts).  Raises naming ``name`` when it does not split."""
    local = sum(device.process_index == jax.process_index() for device in mesh.devices.flat)
    return process_share(name, size, mesh.devices.size, local, mesh_processes(mesh))


def check_divisible(name: str, size: int, mesh: Mesh) -> None:
    """Raises a ``ValueError`` naming ``name`` when ``size`` does not split evenly over the mesh's devices."""
    local_batch_size(name, size, mesh)


def sum_over_processes(value: int) -> int:
    """``value`` summed over all processes (a collective: every process must call it); ``value`` on a single host."""
    if jax.process_count() == 1:
        return int(value)
    from jax.experimental import multihost_utils

    return int(np.sum(multihost_utils.process_allgather(np.asarray(value, np.int32))))


def replicate(tree: Any, mesh: Mesh) -> Any:
    """Places a pytree of host or device arrays on every device of the mesh."""
    return jax.device_put(tree, replicated(mesh))


def shard_host_batch(tree: Any, mesh: Mesh, axis: int = 0) -> Any:
    """Turns this process's part of a batch (numpy, split on ``axis``) into global arrays sharded over the mesh.

    On several hosts each process passes its own :func:`local_batch_size` rows; the global array holds them all, in
    process order.
    """
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


def local_parts(tree: Any, axis: int = 0) -> list[Any]:
    """This process's parts of a pytree of arrays split along ``axis`` over devices: one pytree a device, each leaf its
    shard on that device, in the order of the parts along ``axis`` (a single part for numpy leaves or arrays on one
    device).  Every leaf must be split the same way, as the outputs of one sharded program are; device arrays stay
    on their devices, so a jitted function applied to a part runs where the part is."""
    leaves, structure = jax.tree.flatten(tree)

    def shards(leaf) -> list:
        if not isinstance(leaf, jax.Array):
            return [leaf]
        unique = [shard for shard in leaf.addressable_shards if shard.replica_id == 0]
        return [shard.data for shard in sorted(unique, key=lambda shard: shard.index[axis].start or 0)]

    per_leaf = [shards(leaf) for leaf in leaves]
    counts = {len(parts) for parts in per_leaf}
    if len(counts) > 1:
        raise ValueError(f"the leaves are split into different numbers of parts along axis {axis}: {sorted(counts)}")
    num_parts = counts.pop() if counts else 1
    return [jax.tree.unflatten(structure, [parts[index] for parts in per_leaf]) for index in range(num_parts)]


def use_compilation_cache(directory: str | None, min_compile_seconds: float | None = None) -> str | None:
    """Keeps JAX's compiled programs in ``directory`` (``~`` expanded, created) unless JAX already has a cache
    directory (``JAX_COMPILATION_CACHE_DIR``, or an earlier call); ``min_compile_seconds``: cache only programs that
    took at least this long to compile (None: JAX's default).  A process that reruns or resumes a run reads its
    compiled programs back from disk.  Returns the directory in use (None when there is none)."""
    current = jax.config.jax_compilation_cache_dir
    if current or not directory:
        return current or None
    path = os.path.expanduser(directory)
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", path)
    if min_compile_seconds is not None:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_seconds))
    return path

