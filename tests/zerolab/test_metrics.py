"""``metrics.jsonl`` after a restart: ``MetricsLog.reconcile`` on hand-written files."""

import json

import numpy as np

from zerolab.training.metrics import MetricsLog


def write_lines(workdir, *lines):
    (workdir / "metrics.jsonl").write_text("".join(line + "\n" for line in lines[:-1]) + lines[-1])


def logged(workdir):
    return [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]


def record(iteration, loss=0.5):
    return json.dumps({"iteration": iteration, "loss": loss})


def test_a_torn_last_line_is_dropped_and_the_checkpoint_record_appended(tmp_path):
    # Killed while writing iteration 3, after its checkpoint was saved: the checkpoint's record replaces the torn line.
    write_lines(tmp_path, record(1), record(2), '{"iteration": 3, "lo')
    log = MetricsLog(tmp_path, tensorboard=False)
    log.reconcile(3, {"iteration": 3, "loss": np.float32(0.25), "frames": np.int64(96)})
    assert logged(tmp_path) == [{"iteration": 1, "loss": 0.5}, {"iteration": 2, "loss": 0.5},
                                {"iteration": 3, "loss": 0.25, "frames": 96}]
    log.append({"iteration": 4, "loss": float("nan")})  # the next record starts on a line of its own
    assert logged(tmp_path)[-1] == {"iteration": 4, "loss": None}


def test_records_past_the_restored_checkpoint_are_dropped(tmp_path):
    # Resumed from step 2 (steps 3 and 4 unreadable): their records go, and are written again as they are redone.
    write_lines(tmp_path, record(1), record(2), record(3), record(4), "")
    MetricsLog(tmp_path, tensorboard=False).reconcile(2, {"iteration": 2, "loss": 0.125})
    assert logged(tmp_path) == [{"iteration": 1, "loss": 0.5}, {"iteration": 2, "loss": 0.5}]  # history kept as written


def test_each_iteration_appears_once_and_a_torn_line_in_the_middle_goes(tmp_path):
    write_lines(tmp_path, record(1), record(1, loss=0.75), '{"itera', record(2), "")
    MetricsLog(tmp_path, tensorboard=False).reconcile(2, {"iteration": 2, "loss": 0.5})
    assert logged(tmp_path) == [{"iteration": 1, "loss": 0.5}, {"iteration": 2, "loss": 0.5}]


def test_a_new_run_or_a_missing_file_gives_an_empty_log(tmp_path):
    log = MetricsLog(tmp_path, tensorboard=False)
    log.reconcile(0, None)
    assert (tmp_path / "metrics.jsonl").read_text() == ""
    write_lines(tmp_path, "")
    log.reconcile(1, {"iteration": 1, "loss": 1.0})  # killed after step 1's checkpoint, before its record
    assert logged(tmp_path) == [{"iteration": 1, "loss": 1.0}]
