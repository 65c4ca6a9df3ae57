"""The replay window: sizes, uniform sampling of old frames, minibatches larger than the window, and checkpoints
(the window and the random state come back identical; how far back a run can fall)."""

import logging
import shutil

import jax
import ml_collections
import numpy as np
import pytest

from zerolab.checkpoint import Checkpointer, UnreadableCheckpointError
from zerolab.devices import make_mesh
from zerolab.replay import FrameWindow, frames_to_arrays, update_window
from zerolab.runs import RunCheckpoints, RunState, TrainState
from zerolab.selfplay import Frames
from zerolab.train import train_on_window


def make_frames(count: int, offset: int) -> Frames:
    """``count`` frames whose value target (and observation) is their id ``offset, offset + 1, ...``."""
    values = np.arange(offset, offset + count, dtype=np.float32)
    return Frames(
        observation=np.repeat(values[:, None, None, None], 2, axis=1),
        legal_action_mask=np.ones((count, 3), bool),
        policy_target=np.full((count, 3), 1 / 3, np.float32),
        value_target=values,
        value_mask=np.ones(count, bool),
    )


def window_of(count: int, offset: int = 0) -> FrameWindow:
    return update_window(FrameWindow.empty(), make_frames(count, offset), count, np.random.default_rng(0))


def ids(window: FrameWindow) -> list[int]:
    return window.arrays["value_target"].astype(int).tolist()


# --- update_window --------------------------------------------------------------------------------------------------


def test_more_new_frames_than_the_window_holds_keeps_a_sample_of_the_new_ones():
    old = window_of(4, offset=1000)
    sampled = update_window(old, make_frames(12, 0), 5, np.random.default_rng(1), mode="sample")
    assert len(sampled) == 5 and len(set(ids(sampled))) == 5 and set(ids(sampled)) <= set(range(12))
    assert ids(sampled) == sorted(ids(sampled))  # kept in the order they were played
    np.testing.assert_array_equal(sampled.arrays["observation"][:, 0, 0, 0], sampled.arrays["value_target"])
    fifo = update_window(old, make_frames(12, 0), 5, np.random.default_rng(1), mode="fifo")
    assert ids(fifo) == [7, 8, 9, 10, 11]


def test_old_frames_are_sampled_uniformly():
    # 20 old frames, 5 new, room for 10 old: each old frame is kept with probability 1/2 whatever its position.
    rng = np.random.default_rng(0)
    old = window_of(20, offset=0)
    trials = 2000
    kept = np.zeros(20)
    for _ in range(trials):
        window = update_window(old, make_frames(5, 100), 15, rng, mode="sample")
        values = ids(window)
        assert values[-5:] == [100, 101, 102, 103, 104]  # the new frames, all of them, last
        kept[np.asarray(values[:-5])] += 1
    assert kept.sum() == 10 * trials
    # Binomial(2000, 1/2) per frame: standard deviation 22; 5 of them is far beyond chance, far below a bias
    # towards recent or early frames (which would keep some frames always and others never).
    np.testing.assert_array_less(np.abs(kept - trials / 2), 5 * np.sqrt(trials / 4))


# --- minibatches ----------------------------------------------------------------------------------------------------


def batches_drawn(window: FrameWindow, batch_size: int, epochs: float, seed: int = 0) -> list[list[int]]:
    """The frame ids of every minibatch ``train_on_window`` trains on (a step that records its batch)."""
    seen = []

    def recording_step(state, batch):
        seen.append(np.asarray(batch.value_target).astype(int).tolist())
        return state, {"loss": 0.0}

    config = ml_collections.ConfigDict({"train": {"batch_size": batch_size, "epochs_per_iteration": epochs}})
    _, metrics, samples = train_on_window(recording_step, None, window, config, make_mesh(jax.devices()[:1]),
                                          np.random.default_rng(seed))
    assert samples == len(seen) * batch_size and metrics == {"loss": 0.0}
    return seen


def test_a_batch_larger_than_the_window_repeats_every_frame_evenly():
    window = window_of(6, offset=10)
    (batch,) = batches_drawn(window, batch_size=16, epochs=1.0)
    assert len(batch) == 16
    counts = {frame: batch.count(frame) for frame in range(10, 16)}
    assert set(batch) == set(counts) and set(counts.values()) <= {2, 3}, counts  # 16 = 6 + 6 + 4


def test_an_epoch_of_minibatches_sees_every_frame():
    window = window_of(50, offset=0)
    batches = batches_drawn(window, batch_size=8, epochs=1.0)
    assert len(batches) == 7 and all(len(batch) == 8 for batch in batches)  # ceil(50 / 8) updates
    drawn = [frame for batch in batches for frame in batch]
    assert set(drawn) == set(range(50))  # without replacement within an epoch
    assert max(drawn.count(frame) for frame in range(50)) <= 2


# --- checkpoints ----------------------------------------------------------------------------------------------------


def tiny_train_state(value: float) -> TrainState:
    return TrainState(step=np.asarray(value, np.int32), params={"w": np.full((2, 3), value, np.float32)},
                      batch_stats={"mean": np.zeros(3, np.float32)}, opt_state={"count": np.zeros((), np.int32)})


def save_steps(workdir, steps, keep=3, keep_period=10) -> tuple[RunCheckpoints, dict[int, RunState]]:
    checkpoints = RunCheckpoints(workdir, keep=keep, keep_period=keep_period)
    config = ml_collections.ConfigDict({"seed": 0})
    saved = {}
    rng = np.random.default_rng(7)
    window = FrameWindow.empty()
    for step in steps:
        window = update_window(window, make_frames(4, 10 * step), 10, rng)
        run = RunState(step, 4 * step, tiny_train_state(step), window, rng, {"iteration": step, "loss": 1.0 / (step + 1)})
        checkpoints.save(run, config)
        saved[step] = RunState(step, 4 * step, run.train_state, window,
                               np.random.default_rng(), run.last_record)
        saved[step].numpy_rng.bit_generator.state = rng.bit_generator.state
    return checkpoints, saved


def test_window_and_random_state_are_identical_after_a_restore(tmp_path):
    _, saved = save_steps(tmp_path, [0, 1, 2, 3])
    restored = RunCheckpoints(tmp_path, keep=3, keep_period=10).restore(tiny_train_state(0))
    expected = saved[3]
    assert (restored.iteration, restored.frames_seen, restored.last_record) == (3, 12, expected.last_record)
    assert sorted(restored.window.arrays) == sorted(expected.window.arrays)
    for name, array in expected.window.arrays.items():
        assert restored.window.arrays[name].dtype == array.dtype, name
        np.testing.assert_array_equal(restored.window.arrays[name], array, err_msg=name)
    np.testing.assert_array_equal(restored.train_state.params["w"], expected.train_state.params["w"])
    # The run goes on drawing the same random numbers as the uninterrupted one.
    np.testing.assert_array_equal(restored.numpy_rng.random(5), expected.numpy_rng.random(5))


def corrupt(workdir, step):
    for path in (workdir / "checkpoints" / str(step) / "train_state").rglob("*"):
        if path.is_file():
            path.write_bytes(b"corrupt")


def test_a_run_falls_back_through_the_kept_steps_then_stops_with_a_clear_message(tmp_path, caplog):
    checkpoints, _ = save_steps(tmp_path, range(7), keep=3, keep_period=5)
    # Train states: the 3 newest and every 5th (kept for rating); replay windows: the same 3 newest.
    assert Checkpointer(tmp_path / "checkpoints").steps() == [0, 4, 5, 6]
    assert checkpoints.complete_steps() == [4, 5, 6]
    template = tiny_train_state(0)
    corrupt(tmp_path, 6)
    corrupt(tmp_path, 5)
    with caplog.at_level(logging.WARNING):
        assert checkpoints.restore(template).iteration == 4  # two steps back
    assert f"checkpoint {tmp_path / 'checkpoints' / '6'} cannot be read" in caplog.text
    corrupt(tmp_path, 4)
    # Steps 0 and 5 have train states but no window: not resume points.  Never a silent fresh start.
    with pytest.raises(UnreadableCheckpointError, match=r"train states \[0, 4, 5, 6\].*replay windows \[4, 5, 6\]"):
        checkpoints.restore(template)


def test_a_new_run_saves_over_a_step_left_by_a_run_killed_during_its_first_save(tmp_path):
    checkpoints, _ = save_steps(tmp_path, [0])
    shutil.rmtree(tmp_path / "checkpoints" / "0")  # killed after the window of step 0, before its train state
    assert checkpoints.restore(tiny_train_state(0)) is None  # a new run
    save_steps(tmp_path, [0])  # saving step 0 again replaces the leftover window
    assert RunCheckpoints(tmp_path, keep=3, keep_period=10).restore(tiny_train_state(0)).iteration == 0


def test_checkpointer_save_replaces_an_existing_step(tmp_path, caplog):
    checkpointer = Checkpointer(tmp_path)
    checkpointer.save(2, {"x": {"a": np.zeros(3)}}, {"version": 1})
    with caplog.at_level(logging.WARNING):
        checkpointer.save(2, {"x": {"a": np.ones(3)}}, {"version": 2})
    assert "replacing checkpoint" in caplog.text
    restored = checkpointer.restore(2, {"x": None})
    np.testing.assert_array_equal(restored.items["x"]["a"], np.ones(3))
    assert restored.metadata["version"] == 2 and checkpointer.steps() == [2]


def test_frame_window_keeps_new_frames_and_samples_old_ones():
    rng = np.random.default_rng(0)
    window = update_window(FrameWindow.empty(), make_frames(6, 0), window_size=10, rng=rng)
    assert len(window) == 6
    window = update_window(window, make_frames(6, 100), window_size=10, rng=rng)
    values = window.arrays["value_target"]
    assert len(window) == 10
    assert set(range(100, 106)) <= set(values.tolist())  # every new frame is kept
    assert len(set(values.tolist()) & set(range(6))) == 4  # 4 distinct old frames sampled
    assert window.arrays["observation"].dtype == np.float16
    np.testing.assert_array_equal(window.arrays["observation"][:, 0, 0, 0], values)  # fields stay aligned


def test_frame_window_fifo_keeps_the_most_recent():
    rng = np.random.default_rng(0)
    window = update_window(FrameWindow.empty(), make_frames(6, 0), 8, rng, mode="fifo")
    window = update_window(window, make_frames(4, 100), 8, rng, mode="fifo")
    assert window.arrays["value_target"].tolist() == [2, 3, 4, 5, 100, 101, 102, 103]
    with pytest.raises(ValueError, match="replay mode"):
        update_window(window, make_frames(1, 0), 8, rng, mode="lifo")


def test_frames_flatten_to_storage_dtypes():
    arrays = frames_to_arrays(make_frames(5, 0))
    assert arrays["policy_target"].dtype == np.float16 and arrays["legal_action_mask"].dtype == np.bool_


def test_extra_frame_fields_travel_with_their_frames():
    """A method's per-frame fields are stored as extra_<name>, sampled with their frames and given back as extras."""
    rng = np.random.default_rng(0)
    frames = make_frames(6, 0).replace(extras={"komi": np.arange(6, dtype=np.float32) + 0.5})
    window = update_window(FrameWindow.empty(), frames, window_size=4, rng=rng)
    assert sorted(window.arrays) == ["extra_komi", "legal_action_mask", "observation", "policy_target",
                                     "value_mask", "value_target"]
    np.testing.assert_array_equal(window.arrays["extra_komi"], window.arrays["value_target"] + 0.5)
    more = make_frames(3, 100).replace(extras={"komi": np.arange(100, 103, dtype=np.float32) + 0.5})
    window = update_window(window, more, window_size=5, rng=rng)
    batch = window.as_frames(np.arange(len(window)))
    np.testing.assert_array_equal(batch.extras["komi"], batch.value_target + 0.5)
    with pytest.raises(ValueError, match="a run keeps one method's frame fields"):
        update_window(window, make_frames(2, 200), window_size=5, rng=rng)
