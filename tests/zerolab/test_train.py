"""Training runs: resuming (after kill -9, past unreadable checkpoints) reproduces the uninterrupted run, incompatible
configs are refused, a training step on 4 devices equals the step on 1, and frames encoded on 4 devices are the
window arrays of the host's encoding.

One run is trained once (``trained_run``); every test works on its own copy of it, so no test changes what another
sees and the order of the tests does not matter.
"""

import json
import logging
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from zerolab.training import train_state, trained_variables
from zerolab.training import train
from zerolab.training.checkpoint import Checkpointer, UnreadableCheckpointError
from zerolab.training.run_directory import ConfigConflictError
from zerolab.training.run_owner import OWNER_FILE, RunDirectoryOwner
from zerolab.training.runs import default_config
from experiments.configs import load_config
from zerolab.games import make_game
from zerolab.games.pgn import replay_moves
from zerolab.training.replay_checkpoints import ReplayCheckpoints, read_window
from tests.fast_compile import subprocess_env

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
TINY_RUN = [  # the quickstart config with the ResNet (the core's own network) at toy size
    "model.name=resnet", "model.channels=8", "model.num_blocks=1", "search.num_simulations=4", "search.max_num_considered_actions=4",
    "selfplay.num_games=4", "selfplay.plies_per_iteration=8", "train.batch_size=16", "progress=False",
    # games of at most 6 plies in calls of 8: a game begun late in a call ends in the next one (spans a kill)
    "selfplay.max_game_plies=6",
]
TRAINED_ITERATIONS = 3
# Record fields measured in seconds (and rates from them): the only ones a resumed run may change.
TIMING_FIELDS = {"selfplay_moves_per_s", "train_samples_per_s", "selfplay_s", "selfplay_compile_s", "train_compile_s",
                 "train_s", "iteration_s", "wall_s"}


def tiny_config(*overrides):
    return load_config("quickstart", "tiny", TINY_RUN + list(overrides))


def train_command(workdir, *overrides):
    return [sys.executable, "-m", "zerolab", "train", "--config", "quickstart", "--workdir", str(workdir),
            *TINY_RUN, *overrides]


def metrics_records(workdir):
    path = pathlib.Path(workdir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def iterations_logged(workdir):
    return [record["iteration"] for record in metrics_records(workdir)]


def without_timings(record):
    return {key: value for key, value in record.items() if key not in TIMING_FIELDS}


def saved_train_state(workdir, step):
    """The train state of checkpoint ``step`` as saved (numpy leaves), read without a template."""
    checkpointer = Checkpointer(pathlib.Path(workdir) / "checkpoints")
    return checkpointer.restore(step, {"train_state": None}).items["train_state"]


def saved_window(workdir, step):
    """Step ``step``'s replay window as stored (compact arrays, disk sources included)."""
    return read_window(workdir, step)[1].arrays


def saved_lanes(workdir, step):
    """The self-play lanes (each game in progress: position, ply, the lane rule's carry) saved with train state
    ``step``, as saved (numpy leaves); None where the step saved none."""
    if not (pathlib.Path(workdir) / "checkpoints" / str(step) / "lanes").exists():
        return None
    return Checkpointer(pathlib.Path(workdir) / "checkpoints").restore(step, {"lanes": None}).items["lanes"]


def saved_pending(workdir, step):
    """The frames of games still running that step ``step`` saved (stored arrays); None where it saved none."""
    path = pathlib.Path(workdir) / "replay" / "process-0" / f"pending-{step}.npz"
    if not path.exists():
        return None
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files if name != "metadata"}


def assert_trees_equal(a, b):
    flat_a, flat_b = jax_leaves_with_paths(a), jax_leaves_with_paths(b)
    assert [path for path, _ in flat_a] == [path for path, _ in flat_b]
    for (path, x), (_, y) in zip(flat_a, flat_b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=str(path))


def jax_leaves_with_paths(tree):
    import jax

    return [(jax.tree_util.keystr(path), leaf) for path, leaf in jax.tree_util.tree_leaves_with_path(tree)]


def corrupt_train_state(workdir, step):
    """Overwrites every file of checkpoint ``step``'s train state (its metadata stays readable)."""
    files = [path for path in (pathlib.Path(workdir) / "checkpoints" / str(step) / "train_state").rglob("*") if path.is_file()]
    assert files
    for path in files:
        path.write_bytes(b"corrupt")


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory):
    """A run of ``TRAINED_ITERATIONS`` uninterrupted iterations, trained in this process once; never modified."""
    workdir = tmp_path_factory.mktemp("trained") / "run"
    train.run(tiny_config(f"iterations={TRAINED_ITERATIONS}"), workdir)
    return workdir


@pytest.fixture
def run_copy(trained_run, tmp_path):
    """This test's own copy of the trained run."""
    return pathlib.Path(shutil.copytree(trained_run, tmp_path / "run"))


def test_trained_run_keeps_complete_steps_as_the_checkpoint_config_says(trained_run):
    # checkpoint.keep=3, keep_period=5: train states of the 3 newest steps and of step 0; windows of the 3 newest.
    assert Checkpointer(trained_run / "checkpoints").steps() == [0, 1, 2, 3]
    assert ReplayCheckpoints(trained_run / "replay", keep=3).steps() == [1, 2, 3]
    # Each step wrote only the frames that entered its window (a chunk); no kept index reads step 0's empty window.
    # 4 lanes, 8-ply calls, 6-ply games (none ends sooner): iteration 1 ends each lane's first game at ply 6 (24
    # frames enter, 8 wait); iteration 2 ends the second at its ply 4 (8 + 16 enter, 16 wait); iteration 3 ends the
    # third at its ply 2 and the fourth at its last (16 + 32 enter, none wait).
    chunks = sorted(path.name for path in (trained_run / "replay" / "process-0").glob("frames-*.npz"))
    assert chunks == ["frames-1.npz", "frames-2.npz", "frames-3.npz"]
    entered = [len(np.load(trained_run / "replay" / "process-0" / f"frames-{step}.npz")["value_target"])
               for step in (1, 2, 3)]
    assert entered == [24, 24, 48]
    records = metrics_records(trained_run)
    assert [r["iteration"] for r in records] == [1, 2, 3] and [r["frames"] for r in records] == [32, 64, 96]
    assert [r["window_size"] for r in records] == [24, 48, 96]
    assert [r["frames_entered"] for r in records] == entered
    assert [r["frames_entered_from_earlier_calls"] for r in records] == [0, 8, 16]
    assert [r["frames_pending"] for r in records] == [8, 16, 0]
    assert [r["frames_entered_without_value"] for r in records] == [0, 0, 0]
    assert [len(saved_pending(trained_run, step)["lane"]) for step in (1, 2, 3)] == [8, 16, 0]
    # compiled ahead of the first call (or by an earlier run of the process): later rates leave no compile out
    for program in ("selfplay", "train"):
        assert records[0][f"{program}_compile_s"] >= 0 and [r[f"{program}_compile_s"] for r in records[1:]] == [0.0, 0.0]
    assert json.loads((trained_run / "config.json").read_text())["game"]["name"] == "gardner_chess"


def test_resumed_run_equals_the_uninterrupted_run(trained_run, run_copy, caplog):
    # As if killed after iteration 2 was saved: iteration 3's checkpoint is gone but its record was written.
    shutil.rmtree(run_copy / "checkpoints" / "3")
    (run_copy / "replay" / "process-0" / "window-3.npz").unlink()
    with caplog.at_level(logging.INFO):
        train.run(tiny_config(f"iterations={TRAINED_ITERATIONS}"), run_copy)
    assert "resuming" in caplog.text and "at iteration 2" in caplog.text
    original, resumed = metrics_records(trained_run), metrics_records(run_copy)
    assert [r["iteration"] for r in resumed] == [1, 2, 3]
    assert resumed[:2] == original[:2]  # the history before the resume point is kept as it was
    assert without_timings(resumed[2]) == without_timings(original[2])  # losses, frames, game statistics
    # the run's clock goes on from the resumed record: wall_s counts every iteration's time, not the new process's
    assert resumed[2]["wall_s"] == pytest.approx(resumed[1]["wall_s"] + resumed[2]["iteration_s"])
    assert resumed[2]["wall_s"] > resumed[1]["wall_s"] > resumed[0]["wall_s"] > 0
    assert_trees_equal(saved_train_state(run_copy, 3), saved_train_state(trained_run, 3))
    assert_trees_equal(saved_window(run_copy, 3), saved_window(trained_run, 3))


def test_a_game_that_spans_a_kill_resumes_bit_for_bit(trained_run, run_copy):
    """Killed after iteration 2 was saved, with games running in the lanes: step 2 holds the lanes (each game's
    position, ply and lane-rule carry) and the frames of those games, which wait for their game's end.  The resumed
    run plays iteration 3 bit for bit as the uninterrupted one: those games end in it, and their frames enter the
    window with the same value targets, marked with the iteration that began their game."""
    lanes, pending = saved_lanes(trained_run, 2), saved_pending(trained_run, 2)
    assert lanes is not None and pending is not None, "step 2 saved no game in progress: a kill loses the games"
    assert np.asarray(lanes["ply"]).max() > 0 and len(pending["value_target"]) > 0, "no game spans the kill"
    shutil.rmtree(run_copy / "checkpoints" / "3")
    for name in ("window-3.npz", "pending-3.npz"):
        (run_copy / "replay" / "process-0" / name).unlink(missing_ok=True)
    train.run(tiny_config(f"iterations={TRAINED_ITERATIONS}"), run_copy)
    original, resumed = metrics_records(trained_run), metrics_records(run_copy)
    assert [without_timings(r) for r in resumed] == [without_timings(r) for r in original]
    assert tensorboard_steps(run_copy) == [1, 2, 3]  # iteration 3's events of the first run are purged
    assert_trees_equal(saved_train_state(run_copy, 3), saved_train_state(trained_run, 3))
    assert_trees_equal(saved_window(run_copy, 3), saved_window(trained_run, 3))
    assert_trees_equal(saved_lanes(run_copy, 3), saved_lanes(trained_run, 3))
    assert_trees_equal(saved_pending(run_copy, 3), saved_pending(trained_run, 3))
    # The games running at the kill (6-ply cap, 8-ply calls) all ended in iteration 3: their frames entered its
    # window, each with a value target, recorded as begun in iteration 2.
    window = saved_window(run_copy, 3)
    entered = window["source_chunk"] == 3
    spanning = entered & (window["game_iteration"] < 3)
    assert spanning.sum() > len(pending["value_target"]) > 0  # its pending frames and its plies of iteration 3
    assert window["value_mask"].all()
    assert set(np.unique(window["game_iteration"][spanning])) <= {1, 2}
    # Their PGN is whole: a game carried into iteration 3 opens with the moves its frames waited with at the kill
    # (read back from pending-2.npz by the resumed run), and the resumed run writes the same games.
    games_text = (run_copy / "games" / "selfplay-3.pgn").read_text()
    assert games_text == (trained_run / "games" / "selfplay-3.pgn").read_text()
    game = make_game("gardner_chess")
    written = [movetext_moves(block) for block in games_text.split("[Event ")[1:]]
    carried = [replay_moves(game, pending["action"][pending["lane"] == lane]) for lane in np.unique(pending["lane"])]
    assert any(len(moves) > len(opening) and moves[:len(opening)] == opening
               for moves in written for opening in carried), (written, carried)


def movetext_moves(pgn_game: str) -> list[str]:
    """The moves of one game's long-algebraic movetext (Gardner PGN): the tokens after the headers that are neither
    move numbers nor the result."""
    movetext = pgn_game.split("\n\n", 1)[1]
    results = ("1-0", "0-1", "1/2-1/2", "*")
    return [token for token in movetext.split() if not token.endswith(".") and token not in results]


def test_unreadable_newest_checkpoint_is_reported_and_the_previous_one_used(trained_run, run_copy, caplog):
    corrupt_train_state(run_copy, 3)
    with caplog.at_level(logging.WARNING):
        train.run(tiny_config(f"iterations={TRAINED_ITERATIONS}"), run_copy)
    assert f"checkpoint {run_copy / 'checkpoints' / '3'} cannot be read" in caplog.text
    assert [without_timings(r) for r in metrics_records(run_copy)] == [without_timings(r) for r in metrics_records(trained_run)]
    assert_trees_equal(saved_train_state(run_copy, 3), saved_train_state(trained_run, 3))  # step 3 redone, readable


def test_two_unreadable_newest_checkpoints_fall_back_to_an_older_complete_step(trained_run, run_copy, caplog):
    corrupt_train_state(run_copy, 3)
    corrupt_train_state(run_copy, 2)
    with caplog.at_level(logging.INFO):
        train.run(tiny_config(f"iterations={TRAINED_ITERATIONS + 1}"), run_copy)
    for step in (3, 2):
        assert f"checkpoint {run_copy / 'checkpoints' / str(step)} cannot be read" in caplog.text
    assert "at iteration 1" in caplog.text
    resumed, original = metrics_records(run_copy), metrics_records(trained_run)
    assert [r["iteration"] for r in resumed] == [1, 2, 3, 4]
    assert resumed[0] == original[0]
    assert [without_timings(r) for r in resumed[1:3]] == [without_timings(r) for r in original[1:3]]
    assert_trees_equal(saved_train_state(run_copy, 3), saved_train_state(trained_run, 3))


def test_no_readable_complete_step_stops_with_a_clear_message_and_keeps_the_history(run_copy):
    for step in (1, 2, 3):  # step 0's train state is readable, but its replay window is no longer kept
        corrupt_train_state(run_copy, step)
    metrics_before = (run_copy / "metrics.jsonl").read_text()
    step_0_before = sorted((path.relative_to(run_copy), path.read_bytes()) for path in (run_copy / "checkpoints" / "0").rglob("*") if path.is_file())
    with pytest.raises(UnreadableCheckpointError, match=r"no complete readable checkpoint.*train states \[0, 1, 2, 3\]"):
        train.run(tiny_config(f"iterations={TRAINED_ITERATIONS + 1}"), run_copy)
    assert (run_copy / "metrics.jsonl").read_text() == metrics_before  # never emptied
    step_0_after = sorted((path.relative_to(run_copy), path.read_bytes()) for path in (run_copy / "checkpoints" / "0").rglob("*") if path.is_file())
    assert step_0_after == step_0_before  # step 0 is not written again


def test_the_command_line_reports_unreadable_checkpoints_without_a_traceback(run_copy, capsys):
    from zerolab.frontends import cli

    for step in (1, 2, 3):
        corrupt_train_state(run_copy, step)
    status = cli.main(["train", "--config", "quickstart", "--workdir", str(run_copy), *TINY_RUN, "iterations=4"])
    error = capsys.readouterr().err
    assert status == 2
    assert "error: no complete readable checkpoint to resume from" in error and "Traceback" not in error
    assert iterations_logged(run_copy) == [1, 2, 3]


def test_resuming_with_another_model_names_the_differing_keys(run_copy):
    config = tiny_config("model.channels=16", "iterations=9")
    for allowed in (False, True):  # the checkpoints' shapes depend on the model: no flag changes it
        with pytest.raises(ConfigConflictError, match="model.channels 8 → 16.*use another --workdir"):
            train.run(config, run_copy, allow_config_change=allowed)
    assert iterations_logged(run_copy) == [1, 2, 3]
    (run_copy / "config.json").unlink()  # a run directory without its record: the checkpoints' config is checked
    with pytest.raises(trained_variables.IncompatibleCheckpointError, match="model.channels: checkpoint 8 vs config 16"):
        train.run(config, run_copy)


def run_files(workdir):
    """Every file of a run directory and its bytes."""
    return {path.relative_to(workdir): path.read_bytes() for path in sorted(workdir.rglob("*")) if path.is_file()}


def test_a_rerun_with_other_settings_is_refused_in_one_line_before_anything_changes(run_copy, capsys):
    """The issue's ``experiments run quickstart --workdir runs/qs iterations=1`` on a longer run, then the same through
    ``zerolab train``: one error line with each differing key, exit status 2, no file changed."""
    import experiments.__main__ as experiments_main
    from zerolab.frontends import cli

    before = run_files(run_copy)
    status = experiments_main.main(["run", "quickstart", "--workdir", str(run_copy), *TINY_RUN, "iterations=1",
                                    "selfplay.num_games=8"])
    error = capsys.readouterr().err
    assert status == 2 and error.count("\n") == 1 and "Traceback" not in error
    assert error.startswith(f"error: {run_copy} holds a run made with other settings (iterations 3 → 1; "
                            f"selfplay.num_games 4 → 8; recorded in {run_copy / 'config.json'})")
    assert "pass --allow-config-change to change them" in error
    status = cli.main(["train", "--config", "quickstart", "--workdir", str(run_copy), *TINY_RUN, "seed=5"])
    error = capsys.readouterr().err
    assert status == 2 and error.startswith(f"error: {run_copy} holds a run made with other settings (seed 0 → 5;")
    assert run_files(run_copy) == before


def test_an_allowed_change_is_recorded_with_the_previous_config_kept(run_copy, caplog):
    first = (run_copy / "config.json").read_text()
    with caplog.at_level(logging.WARNING):
        train.run(tiny_config(f"iterations={TRAINED_ITERATIONS}", "train.learning_rate=0.002"), run_copy,
                  allow_config_change=True)
    assert "train.learning_rate 0.001 → 0.002" in caplog.text
    assert (run_copy / "config.previous-1.json").read_text() == first
    assert json.loads((run_copy / "config.json").read_text())["train"]["learning_rate"] == 0.002
    assert iterations_logged(run_copy) == [1, 2, 3]


def test_a_truncated_chunk_every_kept_window_reads_resumes_from_the_newest_train_state(trained_run, run_copy,
                                                                                        caplog):
    """Chunk 1 (iteration 1's 24 frames) is read by the windows of steps 1, 2 and 3: truncated, no kept window is
    whole.  The run goes on from train state 3 with the 72 frames it can read (72 of the 96 played kept, more than
    step 1 or 2 would keep), says what it lost, and trains iteration 4 on them and the new frames (24 enter)."""
    chunk = run_copy / "replay" / "process-0" / "frames-1.npz"
    chunk.write_bytes(chunk.read_bytes()[:100])
    with caplog.at_level(logging.INFO):
        train.run(tiny_config(f"iterations={TRAINED_ITERATIONS + 1}"), run_copy)
    assert ("resuming from step 3 with the readable part of its replay window: 24 frames lost with the unreadable "
            f"{chunk}") in caplog.text
    assert "72 of the 96 frames played so far are kept (no kept step keeps more)" in caplog.text
    records = metrics_records(run_copy)
    assert [r["iteration"] for r in records] == [1, 2, 3, 4]
    assert records[:3] == metrics_records(trained_run)
    assert (records[3]["frames"], records[3]["window_size"]) == (128, 72 + 24)
    assert_trees_equal(saved_train_state(run_copy, 3), saved_train_state(trained_run, 3))


def test_a_file_where_the_run_directory_or_one_of_its_directories_should_be_is_named(run_copy, tmp_path, capsys):
    from zerolab.frontends import cli

    (tmp_path / "a-file").write_text("x")
    status = cli.main(["train", "--config", "quickstart", "--workdir", str(tmp_path / "a-file"), *TINY_RUN])
    assert status == 2 and capsys.readouterr().err == f"error: --workdir {tmp_path / 'a-file'} is a file, not a directory\n"
    shutil.rmtree(run_copy / "games", ignore_errors=True)
    (run_copy / "games").write_text("x")
    before = run_files(run_copy)
    status = cli.main(["train", "--config", "quickstart", "--workdir", str(run_copy), *TINY_RUN, "iterations=4"])
    error = capsys.readouterr().err
    assert status == 2 and error == f"error: {run_copy / 'games'} is a file where the run keeps a directory; move it aside\n"
    assert run_files(run_copy) == before


def test_a_full_disk_mid_run_is_one_line_naming_the_file_and_the_run_resumes_from_what_was_saved(
        trained_run, run_copy, capsys, monkeypatch):
    """Iteration 4's replay chunk cannot be written (``write`` fails with ENOSPC, as on a full disk, naming no
    file): one error line naming the chunk, exit status 1; steps 1-3 and their records are intact, and a rerun
    with room trains iteration 4."""
    import errno

    from zerolab.frontends import cli

    savez = np.savez

    def full_disk(stream, *args, **arrays):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez", full_disk)
    status = cli.main(["train", "--config", "quickstart", "--workdir", str(run_copy), *TINY_RUN, "iterations=4"])
    error = capsys.readouterr().err
    chunk = run_copy / "replay" / "process-0" / "frames-4.npz.tmp"
    assert status == 1 and error == (f"error: writing {chunk} failed: No space left on device (ENOSPC); the "
                                     f"checkpoints saved before are kept, and a rerun on {run_copy} resumes from the "
                                     f"newest complete one\n")
    assert iterations_logged(run_copy) == [1, 2, 3]
    monkeypatch.setattr(np, "savez", savez)
    train.run(tiny_config("iterations=4"), run_copy)
    assert iterations_logged(run_copy) == [1, 2, 3, 4]
    assert metrics_records(run_copy)[:3] == metrics_records(trained_run)


def tensorboard_steps(workdir, tag="loss"):
    """The steps of ``tag`` as TensorBoard shows them (its reader applies a resumed run's purge of later steps)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(pathlib.Path(workdir) / "tb"))
    accumulator.Reload()
    return [event.step for event in accumulator.Scalars(tag)]


def files_of(directory):
    return {path: path.stat().st_mtime_ns for path in pathlib.Path(directory).rglob("*")}


def start_training(workdir, iterations):
    """The command line training ``workdir`` on, in a child process whose stderr is kept."""
    return subprocess.Popen(train_command(workdir, f"iterations={iterations}"), cwd=REPOSITORY,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for_iteration_after(workdir, last_logged, process):
    """Waits until ``workdir`` logs an iteration after ``last_logged`` (or the child ends)."""
    deadline = time.time() + 900  # waits only as long as the run needs; generous for loaded machines
    while max(iterations_logged(workdir), default=0) <= last_logged and time.time() < deadline \
            and process.poll() is None:
        time.sleep(0.01)


@pytest.mark.slow
def test_a_busy_run_directory_is_refused_and_sigterm_then_kill_minus_nine_resume_with_each_iteration_once(
        trained_run, run_copy):
    """A command on a run directory another process owns is refused (status 2, one line naming the owner) and writes
    nothing.  SIGTERM lets a training run finish and save its iteration, then stop with one line on how to resume
    (status 143); the same command resumes, and is killed with SIGKILL while it trains on (a save it interrupted
    leaves a temporary directory, which the rerun ignores); the rerun trains to the end: each iteration is in
    metrics.jsonl and TensorBoard once, the history before each stop kept as it was."""
    iterations = 12  # enough left after each stop that the next lands mid-run
    before = files_of(run_copy)
    with RunDirectoryOwner(run_copy).claim():  # this test process owns the directory
        second = subprocess.run(train_command(run_copy, f"iterations={iterations}"), cwd=REPOSITORY,
                                capture_output=True, text=True, timeout=300)
    assert second.returncode == 2, second.stderr[-2000:]
    refusal = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    assert len(refusal) == 1 and f"is in use by pid {os.getpid()} on " in refusal[0], second.stderr[-2000:]
    assert files_of(run_copy) == {**before, run_copy / OWNER_FILE: files_of(run_copy)[run_copy / OWNER_FILE]}
    assert OWNER_FILE == "owner.lock"  # the name zerolab/README gives users to look for

    process = start_training(run_copy, iterations)
    wait_for_iteration_after(run_copy, TRAINED_ITERATIONS, process)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    stopped = [line for line in stderr.splitlines() if line.startswith("stopped:")]
    assert len(stopped) == 1 and "run the same command to resume" in stopped[0], stderr[-3000:]
    assert "Traceback" not in stderr
    terminated = iterations_logged(run_copy)
    assert TRAINED_ITERATIONS < terminated[-1] < iterations and f"after iteration {terminated[-1]}," in stopped[0]
    assert terminated == list(range(1, terminated[-1] + 1))
    history = metrics_records(run_copy)

    process = start_training(run_copy, iterations)  # resumes, and is killed while it trains on
    wait_for_iteration_after(run_copy, terminated[-1], process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed = iterations_logged(run_copy)
    assert terminated[-1] < killed[-1] < iterations, killed
    (run_copy / "checkpoints" / f"{iterations - 1}.orbax-checkpoint-tmp-1234").mkdir(parents=True)
    resumed = subprocess.run(train_command(run_copy, f"iterations={iterations}"), cwd=REPOSITORY,
                             capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming" in resumed.stderr
    records = metrics_records(run_copy)
    assert [r["iteration"] for r in records] == list(range(1, iterations + 1))
    # TensorBoard too, though the kill lands just after a record reaches metrics.jsonl (TensorBoard is written first)
    assert tensorboard_steps(run_copy) == list(range(1, iterations + 1))
    assert records[:TRAINED_ITERATIONS] == metrics_records(trained_run)  # history is kept as it was
    assert records[:len(history)] == history
    assert [r["frames"] for r in records] == [32 * i for i in range(1, iterations + 1)]
    for key in ("loss", "policy_loss", "value_loss", "selfplay_moves_per_s", "train_samples_per_s", "wall_s"):
        assert all(isinstance(r[key], float) for r in records), key
    assert list((run_copy / "tb").iterdir()), "TensorBoard events are written"


# A wrong all-reduce (each device's gradient of its own shard, or one shard's gradient scaled) changes the gradient
# by a large fraction of itself; float reassociation over 4 devices changes it by about 1e-7 of its scale.  SGD's
# update is -learning_rate·gradient, so one step's parameter change is compared to 1e-4 of its scale.
SHARDING_CHECK = textwrap.dedent("""
    import jax, numpy as np, optax
    from zerolab.devices import make_mesh, replicate, shard_host_batch
    from zerolab.games import make_game
    from zerolab.networks.network import AlphaZeroResNet
    from zerolab.search.config import SearchConfig
    from zerolab.selfplay.programs import make_selfplay_fn
    from zerolab.selfplay.types import SelfPlayConfig
    from zerolab.training.train import init_train_state, make_train_step

    assert len(jax.devices()) == 4, jax.devices()
    game = make_game("gardner_chess")
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=8, num_blocks=1)
    optimizer = optax.sgd(0.1)
    state = init_train_state(network, game, optimizer, jax.random.key(0))
    mesh4, mesh1 = make_mesh(), make_mesh(jax.devices()[:1])
    selfplay = make_selfplay_fn(game, network, SearchConfig(num_simulations=4, max_num_considered_actions=4),
                                SelfPlayConfig(num_games=8, plies_per_iteration=6), mesh4)
    packed, _ = selfplay(replicate(state.variables, mesh4), jax.random.key(1))
    assert len(packed.arrays["observation_bits"].sharding.device_set) == 4
    # Stored on each of the 4 devices and joined along the games: the window's arrays of the host's encoding.
    from zerolab.training.replay import FrameWindow, frames_to_arrays
    encoded = FrameWindow.from_device_frames(packed)
    frames = jax.device_get(packed).to_frames()
    on_host = FrameWindow.from_fields(frames_to_arrays(frames), packed.codec)
    assert encoded.codec == on_host.codec == packed.codec and sorted(encoded.arrays) == sorted(on_host.arrays)
    for name, array in on_host.arrays.items():
        assert encoded.arrays[name].dtype == array.dtype, name
        np.testing.assert_array_equal(encoded.arrays[name], array, err_msg=name)
    frames = frames.flatten()
    per_device = np.asarray(frames.policy_target).reshape(6, 4, 2, -1)
    assert not np.allclose(per_device[:, 0], per_device[:, 1]), "devices must play different games"
    # No 6-ply game ends, so outcomes are given, half known, for the value head to have a gradient as well.
    outcomes = np.random.default_rng(0).choice([-1.0, 0.0, 1.0], frames.value_target.shape).astype(np.float32)
    frames = frames.replace(value_target=outcomes, value_mask=np.arange(outcomes.size) % 2 == 0)
    initial = jax.device_get(state)
    results = []
    for mesh in (mesh4, mesh1):
        step = make_train_step(network, optimizer, mesh, 1e-4)
        new_state, metrics = step(replicate(initial, mesh), shard_host_batch(frames, mesh))
        results.append((jax.device_get(new_state), {k: float(v) for k, v in metrics.items()}))
    (state4, metrics4), (state1, metrics1) = results
    for key in metrics1:
        np.testing.assert_allclose(metrics4[key], metrics1[key], rtol=2e-5, err_msg=key)
    changes = [jax.tree_util.tree_map(lambda new, old: np.asarray(new) - np.asarray(old), s.params, initial.params)
               for s in (state4, state1)]
    for (path, change4), change1 in zip(jax.tree_util.tree_leaves_with_path(changes[0]), jax.tree_util.tree_leaves(changes[1])):
        scale = np.abs(change1).max()
        assert scale > 0, path
        np.testing.assert_allclose(change4, change1, rtol=1e-3, atol=1e-4 * scale, err_msg=jax.tree_util.keystr(path))
    for a, b in zip(jax.tree_util.tree_leaves(state4.batch_stats), jax.tree_util.tree_leaves(state1.batch_stats)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)  # BatchNorm statistics of the global batch
    # The bench's floor on the mesh: each device walks its share of the games with its own key, all at once.
    from zerolab.frontends import bench
    case = bench.BenchCase(game="gardner_chess", channels=8, num_blocks=1, num_games=8, plies=2, num_simulations=3,
                           reference=False)
    program = bench.SelfPlayProgram(game, network, state.variables, run=lambda: None)
    sharded = jax.device_get(bench.comparison_programs(case, program)["floor"]())
    share = bench.floor_program(game, network, 2, case.plies, case.num_simulations)
    for device in range(4):
        alone = jax.device_get(share(state.variables, jax.random.fold_in(jax.random.key(1), device)))
        rows = slice(device * case.plies, (device + 1) * case.plies)
        np.testing.assert_array_equal(sharded.action[rows], alone.action)
        np.testing.assert_allclose(sharded.value_total[rows], alone.value_total, rtol=1e-5)
        assert sharded.counts.evaluations[rows].tolist() == [case.num_simulations + 1] * case.plies
    print("ok", metrics4["loss"], metrics1["loss"])
""")


@pytest.mark.slow
def test_training_step_on_four_devices_equals_one_device():
    # at XLA's faster settings (tests/fast_compile.py): the 4-device and 1-device steps are compared within the child
    environment = subprocess_env("--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    completed = subprocess.run([sys.executable, "-c", SHARDING_CHECK], cwd=REPOSITORY, env=environment,
                               capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.startswith("ok")


def test_sgd_nesterov_optimiser_key_steps_as_nesterov_momentum_and_bad_names_are_refused():
    """``train.optimizer=sgd_nesterov`` (lc0's training optimiser) takes the Nesterov step: with momentum μ, trace
    t ← g + μ·t and update −lr·(g + μ·t); Adam stays the default, also for configs written before the key."""
    import jax.numpy as jnp

    learning_rate, momentum = 0.1, 0.9
    config = tiny_config("train.optimizer=sgd_nesterov", f"train.learning_rate={learning_rate}",
                         f"train.momentum={momentum}")
    optimizer = train_state.make_optimizer(config.train)
    params = {"w": jnp.array([1.0, -2.0])}
    state = optimizer.init(params)
    trace, expected = np.zeros(2), []
    for gradient in (np.array([0.5, -1.0]), np.array([2.0, 3.0])):
        updates, state = optimizer.update({"w": jnp.asarray(gradient)}, state, params)
        trace = gradient + momentum * trace
        expected.append(-learning_rate * (gradient + momentum * trace))
        np.testing.assert_allclose(np.asarray(updates["w"]), expected[-1], rtol=1e-6)
    # Adam's first step is −lr·sign(g): not the Nesterov step above.
    adam = train_state.make_optimizer(tiny_config(f"train.learning_rate={learning_rate}").train)
    first, _ = adam.update({"w": jnp.array([0.5, -1.0])}, adam.init(params), params)
    np.testing.assert_allclose(np.asarray(first["w"]), [-learning_rate, learning_rate], rtol=1e-4)
    assert default_config().train.optimizer == "adam"
    older = {"learning_rate": learning_rate}  # a section without the optimizer key: Adam
    np.testing.assert_allclose(np.asarray(train_state.make_optimizer(older).update(
        {"w": jnp.array([0.5, -1.0])}, adam.init(params), params)[0]["w"]), np.asarray(first["w"]))
    with pytest.raises(ValueError, match=r"train.optimizer must be one of 'adam', 'sgd_nesterov', got 'sgd'$"):
        train_state.make_optimizer(tiny_config("train.optimizer=sgd").train)
