"""Training runs: resume after kill -9, corrupt checkpoints, incompatible configs, and 1-vs-4-device equivalence."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from zerolab import train
from zerolab.config import load_config

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
TINY_RUN = [  # the quickstart config with the ResNet (the core's own network) at toy size
    "model.name=resnet", "model.channels=8", "model.num_blocks=1", "search.num_simulations=4", "search.max_num_considered_actions=4",
    "selfplay.num_games=4", "selfplay.plies_per_iteration=8", "train.batch_size=16", "progress=False",
]


def train_command(workdir, *overrides):
    return [sys.executable, "-m", "zerolab", "train", "--config", "quickstart", "--workdir", str(workdir),
            *TINY_RUN, *overrides]


def iterations_logged(workdir):
    path = pathlib.Path(workdir) / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["iteration"] for line in path.read_text().splitlines() if line.strip()]


def run_to_completion(command, timeout=300):
    completed = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, timeout=timeout)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed


@pytest.fixture(scope="module")
def killed_and_resumed_run(tmp_path_factory):
    """A run killed with SIGKILL after its first iteration was logged, then rerun to the end."""
    workdir = tmp_path_factory.mktemp("resume") / "run"
    process = subprocess.Popen(train_command(workdir, "iterations=4"), cwd=REPOSITORY,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while not iterations_logged(workdir) and time.time() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    logged_before = iterations_logged(workdir)
    first_record = (workdir / "metrics.jsonl").read_text().splitlines()[0]
    # A save interrupted by the kill leaves a temporary directory; the rerun must ignore it.
    (workdir / "checkpoints" / "3.orbax-checkpoint-tmp-1234").mkdir(parents=True)
    resumed = run_to_completion(train_command(workdir, "iterations=4"))
    return workdir, logged_before, first_record, resumed


def test_kill_minus_nine_then_rerun_resumes_and_logs_each_iteration_once(killed_and_resumed_run):
    workdir, logged_before, first_record, resumed = killed_and_resumed_run
    assert logged_before and logged_before[-1] < 4, logged_before
    assert iterations_logged(workdir) == [1, 2, 3, 4]
    assert (workdir / "metrics.jsonl").read_text().splitlines()[0] == first_record  # history is kept as it was
    assert "resuming" in resumed.stderr
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [r["frames"] for r in records] == [32, 64, 96, 128]
    for key in ("loss", "policy_loss", "value_loss", "selfplay_moves_per_s", "train_samples_per_s", "wall_s"):
        assert all(isinstance(r[key], float) for r in records), key
    assert list((workdir / "tb").iterdir()), "TensorBoard events are written"
    assert json.loads((workdir / "config.json").read_text())["game"]["name"] == "gardner_chess"


def test_unreadable_checkpoint_is_reported_and_the_previous_one_used(killed_and_resumed_run):
    workdir, *_ = killed_and_resumed_run
    newest = workdir / "checkpoints" / "4" / "train_state"
    for path in newest.rglob("*"):
        if path.is_file():
            path.write_bytes(b"corrupt")
    completed = run_to_completion(train_command(workdir, "iterations=5"))
    assert "checkpoint step 4" in completed.stderr and "cannot be read" in completed.stderr
    assert str(workdir / "checkpoints") in completed.stderr
    assert iterations_logged(workdir) == [1, 2, 3, 4, 5]


def test_resuming_with_another_model_names_the_differing_keys(killed_and_resumed_run):
    workdir, *_ = killed_and_resumed_run
    config = load_config("quickstart", "tiny", TINY_RUN + ["model.channels=16", "iterations=9"])
    with pytest.raises(train.IncompatibleCheckpointError, match="model.channels: checkpoint 8 vs config 16"):
        train.run(config, workdir)


SHARDING_CHECK = textwrap.dedent("""
    import jax, numpy as np
    from zerolab.devices import make_mesh, replicate, shard_host_batch
    from zerolab.games import make_game
    from zerolab.networks import AlphaZeroResNet
    from zerolab.search import SearchConfig
    from zerolab.selfplay import SelfPlayConfig, make_selfplay_fn
    from zerolab.train import init_train_state, make_optimizer, make_train_step
    import ml_collections

    assert len(jax.devices()) == 4, jax.devices()
    game = make_game("gardner_chess")
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=8, num_blocks=1)
    optimizer = make_optimizer(ml_collections.ConfigDict({"learning_rate": 1e-3}))
    state = init_train_state(network, game, optimizer, jax.random.key(0))
    mesh4, mesh1 = make_mesh(), make_mesh(jax.devices()[:1])
    selfplay = make_selfplay_fn(game, network, SearchConfig(num_simulations=4, max_num_considered_actions=4),
                                SelfPlayConfig(num_games=8, plies_per_iteration=6), mesh4)
    frames, _ = selfplay(replicate(state.variables, mesh4), jax.random.key(1))
    assert len(frames.observation.sharding.device_set) == 4
    frames = jax.device_get(frames).flatten()
    per_device = np.asarray(frames.policy_target).reshape(6, 4, 2, -1)
    assert not np.allclose(per_device[:, 0], per_device[:, 1]), "devices must play different games"
    results = []
    for mesh in (mesh4, mesh1):
        step = make_train_step(network, optimizer, mesh, 1e-4)
        new_state, metrics = step(replicate(jax.device_get(state), mesh), shard_host_batch(frames, mesh))
        new_state, metrics2 = step(new_state, shard_host_batch(frames, mesh))
        results.append((jax.device_get(new_state), {k: float(v) for k, v in metrics.items()}, float(metrics2["loss"])))
    (state4, metrics4, loss4), (state1, metrics1, loss1) = results
    for key in metrics1:
        np.testing.assert_allclose(metrics4[key], metrics1[key], rtol=2e-5, err_msg=key)
    np.testing.assert_allclose(loss4, loss1, rtol=2e-5)
    # Losses, gradient norms and BatchNorm statistics (of the global batch) agree to float precision above.  Adam
    # divides by sqrt(v): a float-level difference in a near-zero gradient can flip that update's sign, so after two
    # steps parameters and the statistics computed with them agree to within two updates of size learning_rate.
    for a, b in zip(jax.tree.leaves((state4.params, state4.batch_stats)), jax.tree.leaves((state1.params, state1.batch_stats))):
        np.testing.assert_allclose(a, b, atol=2 * 2e-3)
    print("ok", metrics4["loss"], metrics1["loss"])
""")


def test_training_step_on_four_devices_equals_one_device():
    environment = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    completed = subprocess.run([sys.executable, "-c", SHARDING_CHECK], cwd=REPOSITORY, env=environment,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.startswith("ok")
