"""Training on several processes: ``jax.distributed`` on 2 local CPU processes (2 devices each), then a resume in one.

Also the pure rules behind it: each process's share of a global batch, each process's numpy generator, and what a
process restores from a replay step written by another number of processes.
"""

import hashlib
import json
import pathlib
import socket
import subprocess
import sys
import textwrap
import time
import types

import jax
import numpy as np
import pytest

from zerolab.training import train
from experiments.configs import load_config
from zerolab.devices import check_divisible, local_batch_size, process_numpy_rng, process_share
from zerolab.training.replay_checkpoints import ProcessReplay, numpy_rng_share, window_share
from zerolab.training.trained_variables import load_trained_variables
from tests.fast_compile import subprocess_env

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
TINY_RUN = [  # tests/zerolab/test_train.py's tiny quickstart run, on 5×5 Go
    "model.name=resnet", "model.channels=8", "model.num_blocks=1", "search.num_simulations=4", "search.max_num_considered_actions=4",
    "selfplay.num_games=4", "selfplay.plies_per_iteration=8", "train.batch_size=16", "progress=False",
    # on 5×5 Go, not Gardner chess: the game is not the point, and each of the 3 processes compiles its self-play
    # in half the time
    "game.name=go", "game.go_size=5",
    # games of one call's length: every frame of the call enters the window (none waits for a later call)
    "selfplay.max_game_plies=8",
]
FRAMES_PER_PROCESS = 4 // 2 * 8  # each of the 2 processes plays 2 of the 4 games for 8 plies
TIMEOUT_SECONDS = 900  # per phase, an upper bound only: about 25 s each with a warm cache, minutes on a loaded machine

# ``python -m zerolab train`` as it is, plus one line per process with a checksum of the parameters it holds at the
# end (its own replica) and the number of updates made.  The wrapper is installed once jax.distributed is up.
TRAIN_AND_REPORT = textwrap.dedent("""
    import hashlib, json, sys
    import jax  # importing is not using: jax.distributed starts in cli.main, before any JAX computation
    import numpy as np
    from zerolab.frontends import cli

    start_distributed = cli.start_distributed

    def checksum(params):
        digest = hashlib.sha256()
        for leaf in jax.tree.leaves(params):
            digest.update(np.ascontiguousarray(leaf).tobytes())
        return digest.hexdigest()

    def start_then_report(args):
        start_distributed(args)
        from zerolab.training import train

        run = train.run

        def run_and_report(config, workdir, *rest, **options):
            state = run(config, workdir, *rest, **options)
            print("REPORT " + json.dumps({"process": jax.process_index(), "processes": jax.process_count(),
                                          "devices": jax.device_count(), "updates": int(state.train_state.step),
                                          "parameters": checksum(state.train_state.params)}), flush=True)
            return state

        train.run = run_and_report

    cli.start_distributed = start_then_report
    sys.exit(cli.main(sys.argv[1:]))
""")


def checksum(params) -> str:
    """The same digest of a parameter tree as the processes print."""
    digest = hashlib.sha256()
    for leaf in jax.tree.leaves(params):
        digest.update(np.ascontiguousarray(leaf).tobytes())
    return digest.hexdigest()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def train_arguments(workdir, *extra):
    return ["train", "--config", "quickstart", "--workdir", str(workdir), *TINY_RUN, *extra]


def report_of(output: str) -> dict:
    lines = [line for line in output.splitlines() if line.startswith("REPORT ")]
    assert len(lines) == 1, output[-3000:]
    return json.loads(lines[0][len("REPORT "):])


def run_processes(commands, environment, logs: pathlib.Path, timeout: float) -> list[str]:
    """Runs ``commands`` at once and returns their outputs; on a failure or a time-out, stops them all and fails
    with every process's status and the end of its output."""
    processes, outputs = [], []
    for index, command in enumerate(commands):
        output = open(logs / f"process-{index}.log", "w+")
        outputs.append(output)
        processes.append(subprocess.Popen(command, cwd=REPOSITORY, env=environment, stdout=output,
                                          stderr=subprocess.STDOUT, text=True))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(p.poll() is None for p in processes):
        if any(p.poll() not in (None, 0) for p in processes):
            break  # one failed: the others would wait for it until JAX's own time-outs
        time.sleep(0.2)
    timed_out = any(p.poll() is None for p in processes)
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait()
    texts = []
    for output in outputs:
        output.seek(0)
        texts.append(output.read())
        output.close()
    if timed_out or any(p.returncode != 0 for p in processes):
        details = "\n".join(f"--- process {index}: exit status {p.returncode}\n{text[-2500:]}"
                            for index, (p, text) in enumerate(zip(processes, texts)))
        pytest.fail(f"{'timed out after ' + str(timeout) + ' s' if timed_out else 'a process failed'}:\n{details}",
                    pytrace=False)
    return texts


@pytest.mark.slow
def test_two_processes_train_one_iteration_agree_and_resume_in_one_process(tmp_path):
    workdir = tmp_path / "run"
    port = free_port()
    # both processes compile at XLA's faster settings (tests/fast_compile.py); they are compared to each other
    environment = subprocess_env("--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    commands = [[sys.executable, "-c", TRAIN_AND_REPORT,
                 *train_arguments(workdir, "iterations=1", "--coordinator", f"127.0.0.1:{port}",
                                  "--num-processes", "2", "--process-id", str(index))] for index in range(2)]
    started = time.monotonic()
    outputs = run_processes(commands, environment, tmp_path, TIMEOUT_SECONDS)
    reports = [report_of(output) for output in outputs]
    assert [r["process"] for r in reports] == [0, 1] and all(r["processes"] == 2 and r["devices"] == 4 for r in reports)
    assert reports[0]["parameters"] == reports[1]["parameters"], "the processes disagree on the parameters"
    # One epoch over the 2 × 16 frames in global minibatches of 16: 2 updates (a process that passed the whole
    # batch_size as its own part would have made one update over a batch of 32).
    assert reports[0]["updates"] == reports[1]["updates"] == 2

    # Process 0 alone writes the run's files; each process saved its own replay window.
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [1] and records[0]["window_size"] == FRAMES_PER_PROCESS
    windows = [ProcessReplay(workdir / "replay" / f"process-{index}", keep=3).load(1)[0].fields() for index in range(2)]
    assert [len(window["value_target"]) for window in windows] == [FRAMES_PER_PROCESS] * 2
    assert not np.array_equal(windows[0]["policy_target"], windows[1]["policy_target"]), "each process plays its games"
    two_process_seconds = time.monotonic() - started

    # The checkpoint orbax wrote for both holds those parameters.
    assert checksum(load_trained_variables(workdir, step=1).variables["params"]) == reports[0]["parameters"]

    # The same directory resumes in a single process (this one, with one device), with both windows.
    state = train.run(load_config("quickstart", "tiny", TINY_RUN + ["iterations=2"]), workdir)
    assert state.iteration == 2 and jax.process_count() == 1
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [1, 2]
    assert records[1]["window_size"] == 2 * FRAMES_PER_PROCESS + 4 * 8, "both windows plus the new frames"
    print(f"2 processes: {two_process_seconds:.1f} s; resumed in one: {time.monotonic() - started - two_process_seconds:.1f} s")


def test_a_process_supplies_its_share_of_the_global_batch():
    assert process_share("train.batch_size", 16, num_devices=1, num_local_devices=1) == 16
    assert process_share("train.batch_size", 16, num_devices=4, num_local_devices=2, num_processes=2) == 8
    with pytest.raises(ValueError, match=r"train.batch_size=6 must be divisible .* \(2 processes × 2 local devices = 4\)"):
        process_share("train.batch_size", 6, num_devices=4, num_local_devices=2, num_processes=2)
    # a mesh's devices, two of them this process's (process 0), two another host's: this process feeds half a batch
    two_hosts = types.SimpleNamespace(devices=np.array([types.SimpleNamespace(process_index=index)
                                                        for index in (0, 1, 0, 1)]))
    assert jax.process_index() == 0 and local_batch_size("selfplay.num_games", 16, two_hosts) == 8
    with pytest.raises(ValueError, match=r"selfplay.num_games=6 must be divisible .* \(2 processes × 2 local"):
        check_divisible("selfplay.num_games", 6, two_hosts)
    # Three devices a host on two hosts (a mesh that tells the local devices, 3, from the processes, 2): 12 / 6 × 3.
    two_hosts_of_three = types.SimpleNamespace(devices=np.array([types.SimpleNamespace(process_index=index)
                                                                 for index in (0, 0, 0, 1, 1, 1)]))
    assert local_batch_size("selfplay.num_games", 12, two_hosts_of_three) == 6
    with pytest.raises(ValueError, match=r"selfplay.num_games=9 must be divisible .* \(2 processes × 3 local"):
        check_divisible("selfplay.num_games", 9, two_hosts_of_three)


def test_each_process_has_its_own_reproducible_numpy_generator():
    assert process_numpy_rng(7, 0).integers(1 << 30) == np.random.default_rng(7).integers(1 << 30)  # as before
    draws = [process_numpy_rng(7, index).integers(1 << 30, size=4).tolist() for index in (0, 1, 0, 1)]
    assert draws[0] == draws[2] and draws[1] == draws[3] and draws[0] != draws[1]


def test_a_step_written_by_two_processes_is_shared_out_by_the_processes_restoring_it():
    windows = [{"value_target": np.array([0.0, 1.0, 2.0])}, {"value_target": np.array([10.0, 11.0])}]
    assert window_share(windows, 1, 2) is windows[1]  # as many processes: each its own
    np.testing.assert_array_equal(window_share(windows, 0, 1)["value_target"], [0, 1, 2, 10, 11])  # one: all
    np.testing.assert_array_equal(window_share(windows, 1, 3)["value_target"], [1, 11])  # three: every third frame
    states = [np.random.default_rng(index).bit_generator.state for index in range(2)]
    assert numpy_rng_share(states, 5, 0, 1).integers(1 << 30) == np.random.default_rng(0).integers(1 << 30)
    for index in range(2):  # more processes than writers: process i continues writer i's generator
        assert numpy_rng_share(states, 5, index, 3).integers(1 << 30) == \
            np.random.default_rng(index).integers(1 << 30)
    assert numpy_rng_share([None], 5, 0, 1) is None  # the single-process layout: the train state's generator
    assert numpy_rng_share(states, 5, 2, 3).integers(1 << 30) == np.random.default_rng([5, 2]).integers(1 << 30)
