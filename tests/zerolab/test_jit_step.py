"""``zerolab.devices.jit_step``: a step jitted with the state replicated and the batch sharded over the mesh."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec

from zerolab.devices import DATA_AXIS, argument_signature, jit_step, make_mesh, shard_host_batch


def sum_step(state, batch):
    new_state = {"total": state["total"] + batch["x"].sum(axis=0), "count": state["count"] + batch["x"].shape[0]}
    return new_state, {"mean": batch["x"].mean()}


def test_jit_step_replicates_the_state_and_shards_the_batch():
    mesh = make_mesh()
    step = jit_step(sum_step, mesh)
    state = {"total": jnp.zeros(3), "count": jnp.zeros((), jnp.int32)}
    x = np.arange(2 * 4 * mesh.devices.size * 3, dtype=np.float32).reshape(-1, 3)
    compiled = step.lower(state, {"x": shard_host_batch(x, mesh)}).compile()
    state_in, batch_in = compiled.input_shardings[0]
    assert all(sharding.spec == PartitionSpec() for sharding in jax.tree.leaves(state_in))
    assert batch_in["x"].spec == PartitionSpec(DATA_AXIS)
    new_state, metrics = step(state, {"x": shard_host_batch(x, mesh)})
    np.testing.assert_allclose(new_state["total"], x.sum(axis=0))
    assert int(new_state["count"]) == len(x) and float(metrics["mean"]) == float(x.mean())
    assert new_state["total"].sharding.spec == PartitionSpec() and metrics["mean"].sharding.spec == PartitionSpec()
    # the batch may be split along another axis
    transposed = jit_step(lambda s, b: sum_step(s, {"x": b["x"].T}), mesh, batch_axis=1, donate_state=False)
    kept = {"total": jnp.zeros(3), "count": jnp.zeros((), jnp.int32)}
    again, _ = transposed(kept, {"x": shard_host_batch(x.T.copy(), mesh, axis=1)})
    np.testing.assert_allclose(again["total"], x.sum(axis=0))
    assert not kept["total"].is_deleted()  # not donated


def test_a_step_compiled_ahead_runs_that_executable_and_says_how_long_compiling_took(monkeypatch):
    mesh = make_mesh()
    step = jit_step(sum_step, mesh)
    state = {"total": jnp.zeros(3), "count": jnp.zeros((), jnp.int32)}
    batch = {"x": shard_host_batch(np.ones((2 * mesh.devices.size, 3), np.float32), mesh)}
    seconds = step.compile(state, batch)
    assert seconds > 0 and step.compile(state, batch) == 0.0  # once a signature
    monkeypatch.setattr(step, "jitted", None)  # a call of the compiled signature needs nothing but its executable
    new_state, _ = step(state, batch)
    assert int(new_state["count"]) == 2 * mesh.devices.size
    with pytest.raises(TypeError):  # another signature goes through jax.jit (here gone)
        step(new_state, {"x": shard_host_batch(np.ones((4 * mesh.devices.size, 3), np.float32), mesh)})


def test_arguments_of_another_dtype_are_another_signature_and_compile_their_own_program():
    """float32 and float16 batches of one shape: two signatures, and compiling the second is a compile, not 0.0."""
    mesh = make_mesh()
    step = jit_step(sum_step, mesh, donate_state=False)
    state = {"total": jnp.zeros(3), "count": jnp.zeros((), jnp.int32)}
    rows = np.ones((2 * mesh.devices.size, 3))
    single, half = ({"x": shard_host_batch(rows.astype(dtype), mesh)} for dtype in (np.float32, np.float16))
    assert argument_signature((state, single)) != argument_signature((state, half))
    assert argument_signature((state, single)) == argument_signature((state, {"x": single["x"] + 1}))
    assert step.compile(state, single) > 0 and step.compile(state, half) > 0
    assert len(step.compiled_signatures) == 2
