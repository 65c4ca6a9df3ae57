"""The replay window: sizes, uniform sampling of old frames, minibatches larger than the window, and checkpoints
(the window and the random state come back identical; how far back a run can fall)."""

import logging
import shutil

import jax
import ml_collections
import numpy as np
import pytest

from zerolab.training.checkpoint import Checkpointer, UnreadableCheckpointError
from zerolab.devices import make_mesh
from zerolab.training.replay import FrameWindow, frames_to_arrays, update_window
from zerolab.training.run_checkpoints import RunCheckpoints, RunState
from zerolab.training.train_state import TrainConfig, TrainState
from zerolab.selfplay.frames import Frames
from zerolab.training.train import train_on_window


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
    np.testing.assert_array_equal(sampled.fields()["observation"][:, 0, 0, 0], sampled.arrays["value_target"])
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

    train = TrainConfig(batch_size=batch_size, epochs_per_iteration=epochs)
    _, metrics, samples = train_on_window(recording_step, None, window, train, make_mesh(jax.devices()[:1]),
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


def test_metrics_are_read_back_while_training_with_a_bounded_number_of_updates_in_flight():
    """Each update's metrics are read back (waiting for it) once TRAINING_LOOKAHEAD newer ones are dispatched, in
    order: the host never runs more than that ahead of the device, and the mean is over every update."""
    from zerolab.training.train import TRAINING_LOOKAHEAD

    read, in_flight = [], []

    class DeviceValue:  # reading it back (float) is waiting for its update
        def __init__(self, update):
            self.update = update

        def __float__(self):
            read.append(self.update)
            return float(self.update)

    def step(state, batch):
        in_flight.append(state - len(read))
        return state + 1, {"loss": DeviceValue(state)}

    train = TrainConfig(batch_size=8, epochs_per_iteration=1.0)
    state, metrics, samples = train_on_window(step, 0, window_of(50), train, make_mesh(jax.devices()[:1]),
                                              np.random.default_rng(0))
    assert TRAINING_LOOKAHEAD == 2 and (state, samples) == (7, 56)  # ceil(50 / 8) updates
    assert in_flight == [0, 1, 2, 2, 2, 2, 2] and read == list(range(7))
    assert metrics == {"loss": 3.0}  # the mean of 0 .. 6


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
    assert window.fields()["observation"].dtype == np.float16
    np.testing.assert_array_equal(window.fields()["observation"][:, 0, 0, 0], values)  # fields stay aligned


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
    assert sorted(window.fields()) == ["extra_komi", "legal_action_mask", "observation", "policy_target",
                                       "value_mask", "value_target"]
    np.testing.assert_array_equal(window.arrays["extra_komi"], window.arrays["value_target"] + 0.5)
    more = make_frames(3, 100).replace(extras={"komi": np.arange(100, 103, dtype=np.float32) + 0.5})
    window = update_window(window, more, window_size=5, rng=rng)
    batch = window.as_frames(np.arange(len(window)))
    np.testing.assert_array_equal(batch.extras["komi"], batch.value_target + 0.5)
    with pytest.raises(ValueError, match="a run keeps one method's frame fields"):
        update_window(window, make_frames(2, 200), window_size=5, rng=rng)


# --- the compact encoding -------------------------------------------------------------------------------------------


class DenseWindow:
    """The window as it was stored before the compact encoding (dense arrays in storage dtypes): the oracle."""

    def __init__(self, arrays=None):
        self.arrays = arrays or {}

    def __len__(self):
        return 0 if not self.arrays else len(self.arrays["value_target"])

    def as_frames(self, indices):
        fields = {name: array[indices] for name, array in self.arrays.items()}
        extras = {name[6:]: fields.pop(name) for name in list(fields) if name.startswith("extra_")}
        return Frames(**fields, extras=extras)


def dense_update(window: DenseWindow, new_frames: Frames, window_size: int, rng, mode="sample") -> DenseWindow:
    """The dense window's update as it was: new frames plus a sample (or the newest) of the old ones."""
    new = frames_to_arrays(new_frames)
    num_new = len(new["value_target"])
    if num_new >= window_size:
        keep = rng.choice(num_new, window_size, replace=False) if mode == "sample" else np.arange(num_new - window_size, num_new)
        return DenseWindow({name: array[np.sort(keep)] for name, array in new.items()})
    room = window_size - num_new
    if len(window) <= room:
        old = np.arange(len(window))
    elif mode == "sample":
        old = np.sort(rng.choice(len(window), room, replace=False))
    else:
        old = np.arange(len(window) - room, len(window))
    if not window.arrays:
        return DenseWindow(new)
    return DenseWindow({name: np.concatenate([window.arrays[name][old], new[name]]) for name in new})


@pytest.fixture(scope="module")
def played_positions():
    """Observations and legal masks of 16 Gardner games × 24 plies of random legal moves, played by pgx."""
    from zerolab.games import make_game

    game = make_game("gardner_chess")

    @jax.jit
    def play(key):
        def ply(states, key):
            logits = jax.numpy.where(states.legal_action_mask, jax.random.gumbel(key, states.legal_action_mask.shape), -1e9)
            return jax.vmap(game.step)(states, logits.argmax(-1)), (states.observation, states.legal_action_mask)

        states = jax.vmap(game.init)(jax.random.split(key, 16))
        return jax.lax.scan(ply, states, jax.random.split(jax.random.fold_in(key, 1), 24))[1]

    observation, legal = play(jax.random.key(0))
    return np.asarray(observation), np.asarray(legal)


def real_frames(played_positions, rng, first: int, count: int, odd_values: bool = False) -> Frames:
    """Frames of plies ``first .. first+count`` of the played games, with random policies over the legal moves (and,
    with ``odd_values``, a move-count plane holding a non-binary value that varies over the board, a -0.0 policy
    entry and a policy entry on an illegal move)."""
    observation, legal = (array[first:first + count] for array in played_positions)
    observation = observation.astype(np.float32)
    policy = np.where(legal, rng.dirichlet(np.ones(legal.shape[-1]), legal.shape[:2]), 0.0).astype(np.float32)
    policy[..., 0] = np.where(legal[..., 0], policy[..., 0], 0.0)
    if odd_values:
        observation[:, :, 1, 2, -1] = 0.375  # the last plane is constant over the board in pgx's frames
        policy[:, 0, 1] = -0.0
        policy[:, 1, np.flatnonzero(~legal[0, 1])[0]] = 0.25
    shape = observation.shape[:2]
    return Frames(observation, legal, policy, rng.choice([-1.0, 0.0, 1.0], shape).astype(np.float32),
                  rng.random(shape) < 0.7, extras={"ply": np.broadcast_to(np.arange(first, first + count)[:, None], shape)})


def assert_frames_identical(actual: Frames, expected: Frames):
    for name in ("observation", "legal_action_mask", "policy_target", "value_target", "value_mask"):
        a, e = np.asarray(getattr(actual, name)), np.asarray(getattr(expected, name))
        assert a.dtype == e.dtype and a.shape == e.shape, name
        np.testing.assert_array_equal(a.view(np.uint8), e.view(np.uint8), err_msg=name)  # bit for bit
    assert actual.extras.keys() == expected.extras.keys()
    for name in expected.extras:
        np.testing.assert_array_equal(actual.extras[name], expected.extras[name])


def test_the_compact_window_trains_on_the_dense_windows_batches_bit_for_bit(played_positions):
    """Five iterations of real Gardner positions through both windows (the compact one widening its codec when a
    non-binary plane appears): same frames, same minibatches, bit for bit."""
    compact, dense = FrameWindow.empty(), DenseWindow()
    compact_rng, dense_rng, policy_rng = (np.random.default_rng(3) for _ in range(3))
    for iteration in range(5):
        frames = real_frames(played_positions, policy_rng, 4 * iteration, 4, odd_values=iteration == 3)
        compact = update_window(compact, frames, 150, compact_rng)
        dense = dense_update(dense, frames, 150, dense_rng)
        assert_frames_identical(compact.as_frames(np.arange(len(compact))), dense.as_frames(np.arange(len(dense))))
        for compact_batch, dense_batch in zip(recorded_batches(compact, 48), recorded_batches(dense, 48)):
            assert_frames_identical(compact_batch, dense_batch)
    assert len(compact) == 150 and len(compact.codec.dense_channels) == 1  # the widened plane
    assert compact.bytes_per_frame() < 0.1 * sum(array.nbytes for array in dense.arrays.values()) / len(dense)


def recorded_batches(window, batch_size: int) -> list[Frames]:
    seen = []

    def recording_step(state, batch):
        seen.append(jax.tree.map(np.asarray, batch))
        return state, {"loss": 0.0}

    train = TrainConfig(batch_size=batch_size, epochs_per_iteration=1.0)
    train_on_window(recording_step, None, window, train, make_mesh(jax.devices()[:1]), np.random.default_rng(5))
    return seen


def test_observations_that_do_not_fit_a_codec_are_refused():
    frames = frames_to_arrays(make_frames(4, 0))
    codec = FrameWindow.from_fields(frames).codec
    odd = dict(frames, observation=frames["observation"].copy())
    odd["observation"][0, 0] = 7.0  # varies over the board now
    with pytest.raises(ValueError, match="do not fit the window's codec"):
        codec.encode(odd)


def chunk_rows(directory) -> dict[int, int]:
    from zerolab.training.replay_checkpoints import CHUNK, ProcessReplay

    replay = ProcessReplay(directory, keep=3)
    return {number: replay.chunk_size(number) for number in replay._numbers(CHUNK)}


def test_saves_write_the_new_frames_only_and_keep_the_disk_bounded(tmp_path, played_positions):
    """A sampled window of 96 frames taking 16 new ones an iteration: each save writes the new frames plus the
    survivors of chunks less than half alive; every kept step restores exactly; unread chunks are deleted."""
    from zerolab.training.replay_checkpoints import ReplayCheckpoints

    replay = ReplayCheckpoints(tmp_path / "replay", keep=3)
    rng, policy_rng = np.random.default_rng(0), np.random.default_rng(1)
    window, saved, written = FrameWindow.empty(), {}, []
    for step in range(1, 21):
        window = update_window(window, real_frames(played_positions, policy_rng, step % 20, 1), 96, rng)
        before = chunk_rows(tmp_path / "replay" / "process-0")
        replay.save(step, window, rng)
        after = chunk_rows(tmp_path / "replay" / "process-0")
        written.append(after[step])
        assert after[step] >= 16 and set(after) - set(before) == {step}
        assert sum(after.values()) <= 2 * 96 + 3 * 16 + 96  # at most about twice the frames the kept windows read
        saved[step] = FrameWindow({name: array.copy() for name, array in window.arrays.items()}, window.codec)
    assert written[:5] == [16, 16, 16, 16, 16] and max(written) > 16  # new frames only, then some compaction
    assert sum(written) < 0.5 * 20 * 96  # far less than rewriting the window at every step
    assert replay.steps() == [18, 19, 20]
    for step in (18, 19, 20):
        restored = ReplayCheckpoints(tmp_path / "replay", keep=3).restore(step).window
        assert restored.codec == saved[step].codec and sorted(restored.arrays) == sorted(saved[step].arrays)
        for name, array in saved[step].arrays.items():
            np.testing.assert_array_equal(restored.arrays[name], array, err_msg=name)


def test_windows_of_the_earlier_layouts_still_load(tmp_path, played_positions):
    """A dense window written by orbax (single process, before the compact window) and dense archives of two
    processes come back as compact windows with the same frames."""
    import json

    from zerolab.training.replay_checkpoints import ReplayCheckpoints

    frames = frames_to_arrays(real_frames(played_positions, np.random.default_rng(0), 0, 6))
    Checkpointer(tmp_path / "single" / "replay").save(4, {"window": {"num_frames": np.asarray(96), **frames}},
                                                      {"iteration": 4})
    restored = ReplayCheckpoints(tmp_path / "single" / "replay", keep=3).restore(4)
    assert restored.numpy_rng is None  # that layout's random state is the train state's
    assert_frames_identical(restored.window.as_frames(), DenseWindow(frames).as_frames(np.arange(96)))
    for process in range(2):
        directory = tmp_path / "multi" / "replay" / f"process-{process}"
        directory.mkdir(parents=True)
        part = {name: array[48 * process:48 * (process + 1)] for name, array in frames.items()}
        metadata = {"iteration": 4, "process_index": process, "process_count": 2,
                    "numpy_rng": np.random.default_rng(process).bit_generator.state}
        np.savez(directory / "4.npz", **part, metadata=np.asarray(json.dumps(metadata)))
    restored = ReplayCheckpoints(tmp_path / "multi" / "replay", keep=3).restore(4)
    assert_frames_identical(restored.window.as_frames(), DenseWindow(frames).as_frames(np.arange(96)))
    assert restored.numpy_rng.random() == np.random.default_rng(0).random()
    # The run goes on in this layout; the orbax step goes once three newer steps are saved (keep=3).
    single = ReplayCheckpoints(tmp_path / "single" / "replay", keep=3)
    window = single.restore(4).window
    for step, steps in ((5, [4, 5]), (6, [4, 5, 6]), (7, [5, 6, 7])):
        single.save(step, window, np.random.default_rng(step))
        assert single.steps() == steps and single.single.steps() == [4] * (4 in steps)
    assert not (tmp_path / "single" / "replay" / "4").exists()


def test_a_corrupt_chunk_is_named_and_the_run_falls_back_to_a_step_without_it(tmp_path, played_positions, caplog):
    from zerolab.training.replay_checkpoints import ReplayCheckpoints

    replay = ReplayCheckpoints(tmp_path / "replay", keep=3)
    rng, policy_rng = np.random.default_rng(0), np.random.default_rng(1)
    window = FrameWindow.empty()
    for step in (1, 2):
        window = update_window(window, real_frames(played_positions, policy_rng, step, 1), 96, rng)
        replay.save(step, window, rng)
    (tmp_path / "replay" / "process-0" / "frames-2.npz").write_bytes(b"truncated")
    with caplog.at_level(logging.WARNING):
        assert replay.restore(2) is None
        step, restored = replay.restore_newest()
    assert f"replay archive {tmp_path / 'replay' / 'process-0' / 'frames-2.npz'} cannot be read" in caplog.text
    assert step == 1 and len(restored.window) == 16


def save_fifo_steps(workdir, new_frames_per_step: list[int], window_size: int = 10) -> RunCheckpoints:
    """Steps 1, 2, ... of a FIFO window of ``window_size`` frames taking ``new_frames_per_step[i]`` new frames at step
    i + 1 (frame ids count up from 0; ``frames_seen`` is their running total)."""
    checkpoints = RunCheckpoints(workdir, keep=3, keep_period=10)
    rng, window, seen = np.random.default_rng(0), FrameWindow.empty(), 0
    for step, count in enumerate(new_frames_per_step, 1):
        window = update_window(window, make_frames(count, seen), window_size, rng, "fifo")
        seen += count
        checkpoints.save(RunState(step, seen, tiny_train_state(step), window, rng, {"iteration": step}),
                         ml_collections.ConfigDict({"seed": 0}))
    return checkpoints


def test_an_unreadable_chunk_loses_only_its_frames_when_the_readable_part_keeps_more_work(tmp_path, caplog):
    """Step 2's window reads chunk 1 (8 old frames) and chunk 2 (its 2 new ones).  Chunk 1 unreadable: both kept
    steps lose it, and the newest train state resumes with the 2 frames it can read (kept work: 12 frames played,
    8 lost = 4, against step 1's 10 - 10 = 0).  Then two steps that both lost frames and keep equal work: the newer
    one goes on."""
    from zerolab.training.replay_checkpoints import ProcessReplay

    checkpoints = save_fifo_steps(tmp_path, [10, 2])
    chunks = tmp_path / "replay" / "process-0"
    assert sorted(path.name for path in chunks.glob("frames-*.npz")) == ["frames-1.npz", "frames-2.npz"]
    (chunks / "frames-1.npz").write_bytes(b"truncated")
    with pytest.raises(ValueError, match="frames-1.npz cannot be read"):
        ProcessReplay(chunks, keep=3).load(2)
    with caplog.at_level(logging.WARNING):
        restored = checkpoints.restore(tiny_train_state(0))
    assert (restored.iteration, restored.frames_seen, ids(restored.window)) == (2, 12, [10, 11])
    assert restored.window.arrays["source_chunk"].tolist() == [2, 2]  # where the kept frames are on disk
    assert "resuming from step 2 with the readable part of its replay window: 8 frames lost" in caplog.text
    assert str(chunks / "frames-1.npz") in caplog.text

    # Equal work, both steps offered: a window of 30 frames takes 10, 5 and 10 new frames at steps 1-3, and the
    # chunks of steps 2 and 3 cannot be read.  Step 3 keeps 25 - 15 = 10 frames of work, step 2 15 - 5 = 10 (both
    # lost frames, so resume_candidates offers both; step 1, whole, keeps no more than 10 and is not offered): the
    # newer one, step 3, goes on.
    checkpoints = save_fifo_steps(tmp_path / "other", [10, 5, 10], window_size=30)
    for step in (2, 3):
        (tmp_path / "other" / "replay" / "process-0" / f"frames-{step}.npz").write_bytes(b"truncated")
    offered = [point for point, _, _ in checkpoints.resume_candidates(tiny_train_state(0))]
    assert [(point.step, point.kept_frames) for point in offered] == [(3, 10), (2, 10)]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        restored = checkpoints.restore(tiny_train_state(0))
    assert (restored.iteration, restored.frames_seen, ids(restored.window)) == (3, 25, list(range(10)))
    assert "resuming from step 3 with the readable part of its replay window: 15 frames lost" in caplog.text


def test_a_run_resumes_from_an_older_whole_window_when_the_unreadable_chunk_holds_more_than_was_played_since(
        tmp_path, caplog):
    """Step 2 took 6 new frames, and its chunk holds them with the 4 survivors of step 1's (rewritten: less than
    half of chunk 1 was left).  That chunk unreadable, step 2 keeps 16 - 10 = 6 frames of work and step 1, whole,
    10: the run resumes from step 1 with its whole window, and says why not from step 2."""
    checkpoints = save_fifo_steps(tmp_path, [10, 6])
    chunks = tmp_path / "replay" / "process-0"
    assert np.load(chunks / "frames-2.npz")["value_target"].shape == (10,)  # the survivors rewritten with the new
    (chunks / "frames-2.npz").write_bytes(b"truncated")
    with caplog.at_level(logging.WARNING):
        restored = checkpoints.restore(tiny_train_state(0))
    assert (restored.iteration, ids(restored.window)) == (1, list(range(10)))
    assert "frames lost" not in caplog.text
    assert ("not resuming from step 2: its replay window lost 10 frames with the unreadable "
            f"{chunks / 'frames-2.npz'}") in caplog.text and "more than the 6 frames played since step 1" in caplog.text


def test_a_save_killed_mid_write_leaves_the_previous_step_and_the_resume_collects_its_leftovers(tmp_path,
                                                                                                monkeypatch):
    """Killed while writing step 2's chunk, then (another time) its index: no file of step 2 under its final name
    but the complete chunk, step 1 restores; the resume deletes the temporary files and the chunk no index reads."""
    import os

    from zerolab.training.replay_checkpoints import ReplayCheckpoints

    replay = ReplayCheckpoints(tmp_path, keep=3)
    rng = np.random.default_rng(0)
    first = update_window(FrameWindow.empty(), make_frames(4, 0), 10, rng)
    replay.save(1, first, rng)
    saved_rng = rng.bit_generator.state
    window = update_window(first, make_frames(4, 100), 10, rng)
    savez = np.savez
    for writes_before_the_kill, left in ((0, ["frames-2.npz.tmp"]), (1, ["frames-2.npz", "window-2.npz.tmp"])):
        writes = []

        def killed_savez(stream, *args, **arrays):
            if len(writes) == writes_before_the_kill:
                stream.write(b"PK\x03\x04 half an archive")  # the process dies halfway through the archive
                raise KeyboardInterrupt
            writes.append(stream)
            return savez(stream, *args, **arrays)

        monkeypatch.setattr(np, "savez", killed_savez)
        with pytest.raises(KeyboardInterrupt):
            replay.save(2, FrameWindow({name: array.copy() for name, array in window.arrays.items()}, window.codec),
                        rng)
        monkeypatch.setattr(np, "savez", savez)
        assert sorted(os.listdir(tmp_path / "process-0")) == sorted(["frames-1.npz", "window-1.npz", *left])
        assert replay.steps() == [1]
        step, restored = ReplayCheckpoints(tmp_path, keep=3).restore_newest()
        assert step == 1 and ids(restored.window) == ids(first)
        assert restored.numpy_rng.bit_generator.state == saved_rng
        ReplayCheckpoints(tmp_path, keep=3).discard_after(1)  # what a run resuming from step 1 does
        assert sorted(os.listdir(tmp_path / "process-0")) == ["frames-1.npz", "window-1.npz"]
    replay.save(2, window, rng)
    assert ids(ReplayCheckpoints(tmp_path, keep=3).restore(2).window) == ids(window)


def test_an_unreadable_index_is_named_and_the_save_goes_on(tmp_path, caplog):
    """An index that cannot be read (a disk error, say) reads no chunk: the next save warns and completes."""
    from zerolab.training.replay_checkpoints import ReplayCheckpoints

    replay = ReplayCheckpoints(tmp_path, keep=3)
    rng = np.random.default_rng(0)
    window = FrameWindow.empty()
    for step in (1, 2):
        window = update_window(window, make_frames(4, 10 * step), 10, rng)
        replay.save(step, window, rng)
    (tmp_path / "process-0" / "window-1.npz").write_bytes(b"truncated")
    window = update_window(window, make_frames(4, 30), 10, rng)
    with caplog.at_level(logging.WARNING):
        replay.save(3, window, rng)
    assert f"replay index {tmp_path / 'process-0' / 'window-1.npz'} cannot be read" in caplog.text
    assert replay.steps() == [1, 2, 3] and ids(replay.restore(3).window) == ids(window)


# --- frames encoded on the device -----------------------------------------------------------------------------------


def test_frames_encoded_on_the_device_fill_the_window_the_dense_path_fills(played_positions):
    """Five iterations of real Gardner frames [T, B, ...], encoded on the device (survey, then the codec's encoding
    at a static policy width) and appended as they are, against the dense window: the same frames and minibatches bit
    for bit, and the stored arrays and codec of frames encoded on the host.  The frames include a non-binary plane
    that varies over the board (the codec widens), -0.0 and float16-subnormal policy entries, an entry on an illegal
    move, a frame with 40 non-zero entries (wider than one POLICY_WIDTH_STEP) and an extra field."""
    from zerolab.training.replay import POLICY_WIDTH_STEP

    device, host, dense = FrameWindow.empty(), FrameWindow.empty(), DenseWindow()
    device_rng, host_rng, dense_rng, policy_rng = (np.random.default_rng(3) for _ in range(4))
    for iteration in range(5):
        frames = real_frames(played_positions, policy_rng, 4 * iteration, 4, odd_values=iteration == 3)
        if iteration == 2:
            policy = frames.policy_target.copy()
            policy[1, 3] = 0.0
            policy[1, 3, :40] = 1 / 40  # 40 entries, illegal ones among them
            policy[2, 5, np.flatnonzero(frames.legal_action_mask[2, 5])[:3]] = [3e-8, 1e-6, 6e-5]  # float16 subnormals
            frames = frames.replace(policy_target=policy)
        encoded = FrameWindow.from_device_frames(frames, device.codec)
        on_host = FrameWindow.from_fields(frames_to_arrays(frames), host.codec)
        assert encoded.codec == on_host.codec and sorted(encoded.arrays) == sorted(on_host.arrays)
        for name, array in on_host.arrays.items():  # what the host encoder would have stored, bit for bit
            assert encoded.arrays[name].dtype == array.dtype and encoded.arrays[name].shape == array.shape, name
            np.testing.assert_array_equal(encoded.arrays[name], array, err_msg=name)
        device = update_window(device, encoded, 150, device_rng)
        host = update_window(host, frames, 150, host_rng)
        dense = dense_update(dense, frames, 150, dense_rng)
        assert_frames_identical(device.as_frames(np.arange(len(device))), dense.as_frames(np.arange(len(dense))))
        for device_batch, dense_batch in zip(recorded_batches(device, 48), recorded_batches(dense, 48), strict=True):
            assert_frames_identical(device_batch, dense_batch)
        for name, array in host.arrays.items():
            np.testing.assert_array_equal(device.arrays[name], array, err_msg=name)
        if iteration == 2:
            assert encoded.arrays["policy_indices"].shape[1] == 40 > POLICY_WIDTH_STEP
    assert len(device.codec.dense_channels) == 1  # the widened plane


def test_frames_packed_in_the_scan_fill_the_window_the_host_encoding_fills(played_positions):
    """Real Gardner frames stored a ply at a time as self-play's scan stores them (the game's codec, Gardner's
    K = 128 wide policy; -0.0 entries, an entry on an illegal move, an extra field), brought to the window: the
    arrays the host's encoding stores with that codec, and the dense window's frames and minibatches, bit for bit."""
    from zerolab.games import make_game
    from zerolab.selfplay.frames import PackedFrames, frame_codec, frame_policy_width, pack_frames

    game = make_game("gardner_chess")
    codec, width = frame_codec(game), frame_policy_width(game)
    assert width == 128
    pack_ply = jax.jit(lambda observation, legal, policy: pack_frames(codec, width, observation, legal, policy))
    window, host, dense = FrameWindow.empty(), FrameWindow.empty(), DenseWindow()
    window_rng, host_rng, dense_rng, policy_rng = (np.random.default_rng(3) for _ in range(4))
    for iteration in range(3):
        frames = real_frames(played_positions, policy_rng, 4 * iteration, 4)
        policy = frames.policy_target.copy()
        policy[:, 0, 1] = -0.0
        policy[:, 1, np.flatnonzero(~frames.legal_action_mask[0, 1])[0]] = 0.25
        frames = frames.replace(policy_target=policy)
        stored, inexact = jax.lax.map(lambda ply: pack_ply(*ply), (frames.observation, frames.legal_action_mask,
                                                                    frames.policy_target))
        packed = PackedFrames(stored, frames.value_target, frames.value_mask, inexact, frames.extras, codec)
        encoded = FrameWindow.from_device_frames(packed, window.codec)
        on_host = FrameWindow.from_fields(frames_to_arrays(frames), codec)
        assert encoded.codec == on_host.codec == codec and sorted(encoded.arrays) == sorted(on_host.arrays)
        for name, array in on_host.arrays.items():
            assert encoded.arrays[name].dtype == array.dtype and encoded.arrays[name].shape == array.shape, name
            np.testing.assert_array_equal(encoded.arrays[name], array, err_msg=name)
        window = update_window(window, encoded, 40, window_rng)
        host = update_window(host, frames, 40, host_rng)
        dense = dense_update(dense, frames, 40, dense_rng)
        assert_frames_identical(window.as_frames(np.arange(len(window))), dense.as_frames(np.arange(len(dense))))
        for window_batch, dense_batch in zip(recorded_batches(window, 16), recorded_batches(dense, 16), strict=True):
            assert_frames_identical(window_batch, dense_batch)


def test_a_window_appends_device_frames_encoded_with_a_narrower_codec(played_positions):
    """Frames encoded without the window's codec are recoded to the codec that fits both on arrival: the window the
    host's encoding gives."""
    rng = np.random.default_rng(0)
    odd = real_frames(played_positions, rng, 0, 2, odd_values=True)  # the window's codec: one dense plane
    window = update_window(FrameWindow.empty(), odd, 100, np.random.default_rng(1))
    frames = real_frames(played_positions, rng, 2, 2)
    narrow = FrameWindow.from_device_frames(frames)
    assert narrow.codec != window.codec
    appended = update_window(window, narrow, 100, np.random.default_rng(1))
    expected = update_window(window, frames, 100, np.random.default_rng(1))
    assert appended.codec == expected.codec == window.codec.merge(narrow.codec)
    for name, array in expected.arrays.items():
        np.testing.assert_array_equal(appended.arrays[name], array, err_msg=name)
    assert_frames_identical(appended.as_frames(), expected.as_frames())


def test_packed_frames_joining_a_window_with_a_narrower_codec_are_recoded_to_the_codec_that_fits_both():
    """Self-play's frames packed with a codec that keeps plane 1 as bits (it varies over the board in every frame)
    join a window whose codec keeps that plane as one value a frame (every frame it has seen had it constant): the
    window takes the codec that fits both (the merge, which is the frames' codec here), and its frames decode to the
    packed ones bit for bit."""
    from zerolab.selfplay.frames import FrameCodec, PackedFrames, pack_frames

    plies, games, actions, shape = 2, 3, 5, (2, 2, 3)
    frames_codec = FrameCodec.from_kinds(shape, actions, constant=(True, False, False), binary=(True, True, False))
    window_codec = FrameCodec.from_kinds(shape, actions, constant=(True, True, False), binary=(True, True, False))
    rng = np.random.default_rng(0)
    observation = np.zeros((plies * games,) + shape, np.float16)
    observation[..., 0] = rng.integers(0, 2, (plies * games, 1, 1))
    observation[..., 1] = rng.integers(0, 2, (plies * games, 2, 2))
    observation[:, 0, 0, 1], observation[:, 1, 1, 1] = 1, 0  # plane 1 varies over the board in every frame
    observation[..., 2] = rng.normal(size=(plies * games, 2, 2))
    legal = rng.random((plies * games, actions)) < 0.7
    policy = np.where(legal, rng.random((plies * games, actions)), 0).astype(np.float16)
    stored, inexact = jax.device_get(jax.jit(lambda *fields: pack_frames(frames_codec, actions, *fields))(
        observation, legal, policy))
    unflat = lambda array: array.reshape((plies, games) + array.shape[1:])  # noqa: E731
    packed = PackedFrames({name: unflat(array) for name, array in stored.items()}, np.zeros((plies, games), np.float32),
                          np.ones((plies, games), bool), unflat(inexact), {}, frames_codec)
    window = FrameWindow.from_packed_frames(packed, window_codec)
    fields = window.fields()
    np.testing.assert_array_equal(fields["observation"].view(np.uint16), observation.view(np.uint16))
    assert window.codec == window_codec.merge(frames_codec) == frames_codec
    np.testing.assert_array_equal(fields["policy_target"].view(np.uint16), policy.view(np.uint16))
    np.testing.assert_array_equal(fields["legal_action_mask"], legal)
