"""The paper presets before any accelerator: their cost plan from the compiled programs, and a run of the 8×8 paper
path with only its sizes shrunk (the path whose first GPU run printed nothing for 260 s)."""

import logging
import os

import numpy as np
import pytest

from experiments.__main__ import main, training_configs
from zerolab.devices import with_device_count
from zerolab.devices import GIB
from zerolab.selfplay.chunks import ChunkChoice
from zerolab.training import train
from experiments.configs import load_config
from zerolab.training.device_fit import DeviceFit
from zerolab.training.plan import format_plan, plan_training_run
from zerolab.training.program_cost import ProgramCost
from zerolab.training.replay_checkpoints import ProcessReplay, read_window
from tests.fast_compile import fast_xla_flags


@pytest.mark.slow  # 48 s of CPU with a cold compilation cache (three programs at the paper sizes)
def test_the_plan_of_a_paper_preset_comes_from_its_compiled_programs(capsys):
    config = load_config("quickstart", "paper")
    plan = plan_training_run(config, "quickstart")
    assert [program.name for program in plan.programs] == ["self-play", "network evaluation", "training step"]
    assert plan.frames_per_iteration == 256 * 256 and plan.evaluations_per_iteration == 256 * (128 + 1)
    # A window of 1M frames: 1M / 256 updates per epoch once full, and fewer while it fills.
    assert plan.updates_per_iteration == 3907 and plan.total_updates < plan.iterations * 3907
    selfplay, evaluation, training = plan.programs
    # Frames are stored in the scan as the window stores them: self-play's output is smaller than the float16
    # observations alone, and the host receives at most that (policy arrays cut to the widest frame).
    assert plan.selfplay_host_bytes <= selfplay.output_bytes < plan.frames_per_iteration * 5 * 5 * 115 * 2
    assert training.flops > evaluation.flops > 0  # a training step (batch 256, forward + backward) costs more
    assert plan.frame.compact < plan.frame.dense / 10  # the compact window: Gardner frames 5 × 5 × 115 + 1225 actions
    assert plan.parameters > 900_000 and plan.train_state_bytes > 3 * 4 * plan.parameters  # params + Adam's moments
    text = format_plan(plan, "h100")
    assert "256 games × 256 plies" in text and "window 1,000,000" in text
    assert "no rate measured for gardner_chess" in text  # no invented numbers
    assert training_configs("contempt-odds", load_config("contempt-odds", "paper")) == {}  # its runner plans itself
    assert main(["plan", "quickstart", "no_such_key=1"]) == 2
    assert "unknown config key 'no_such_key'" in capsys.readouterr().err


@pytest.mark.slow  # 20 s: a child process compiles the shrunk tiny programs on 2 emulated devices
def test_the_plan_at_a_pod_shape_compiles_on_emulated_devices_and_says_what_does_not_fit(capfd, monkeypatch):
    """``plan --devices 2``: JAX has started in this process with one CPU device, so the command runs itself again
    with XLA_FLAGS set; its programs are sharded over 2 devices (2 of the 4 games a device) and a budget under even
    one game a device prints "does not fit" with the program and its memory."""
    # the child compiles at XLA's faster settings (tests/fast_compile.py); it keeps the flags it is started with
    monkeypatch.setenv("XLA_FLAGS", fast_xla_flags(os.environ.get("XLA_FLAGS", "")))
    assert main(["plan", "quickstart", "--preset", "tiny", "--devices", "2", "--device-memory-gib", "1e-6",
                 "model.name=resnet", "model.channels=4", "model.num_blocks=1", "selfplay.num_games=4",
                 "selfplay.plies_per_iteration=2", "search.num_simulations=2", "search.max_num_considered_actions=2",
                 "train.batch_size=4", "replay.window_size=64"]) == 0
    output = capfd.readouterr().out
    assert "devices: 2, 2 self-play games a device, budget 0.0 MiB a device: does not fit: self-play, chunks of 1 " \
           "(1 game a device at a time) takes " in output
    assert "training step takes" in output and "against the 0.0 MiB budget" in output
    assert "self-play, chunks of 1" in output.split("devices: 2")[0]  # the smallest program's row in the table
    flags = "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=1"
    assert with_device_count(flags, 8) == "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=8"
    assert main(["plan", "quickstart", "--devices", "0"]) == 2


def test_a_plan_line_says_the_chunk_a_device_plays_in_or_why_it_does_not_fit():
    def program(name, gib):
        return ProgramCost(argument_bytes=0, output_bytes=0, temp_bytes=int(gib * GIB), alias_bytes=0, name=name)

    whole, training = program("self-play", 120), program("training step", 2)
    fit = DeviceFit(4, 125, 80 * GIB, ChunkChoice(125, 25, int(70 * GIB), 80 * GIB))
    assert fit.describe(whole, training) == (
        "devices: 4, 125 self-play games a device, budget 80.00 GiB a device: self-play in 5 chunks of 25 games, "
        "70.00 GiB a device (in one chunk: 120.00 GiB); training step 2.00 GiB a device")
    smallest = program("self-play, chunks of 1", 90)
    fit = DeviceFit(4, 125, 80 * GIB, None, smallest)
    assert fit.describe(whole, program("training step", 81)) == (
        "devices: 4, 125 self-play games a device, budget 80.00 GiB a device: does not fit: self-play, chunks of 1 "
        "(1 game a device at a time) takes 90.00 GiB a device against the 80.00 GiB budget; training step takes "
        "81.00 GiB a device against the 80.00 GiB budget")


@pytest.mark.slow  # 30 s of CPU with a cold compilation cache
def test_the_8x8_paper_path_trains_with_only_its_sizes_shrunk(tmp_path, caplog):
    """alphagateau-speed's paper preset — 8×8 chess, AlphaGateau, Gumbel search, 512-ply games, the 1M-frame window —
    through the loop a pod runs, with games, plies, simulations, network and batch made small; the log says where
    the first iteration is (compile, plies played, window, training updates, checkpoint)."""
    config = load_config("alphagateau-speed", "paper", [
        "iterations=1", "selfplay.num_games=2", "selfplay.plies_per_iteration=3", "search.num_simulations=2",
        "selfplay.max_game_plies=3",  # games end inside the one call, so its 6 frames enter the window and train
        "search.max_num_considered_actions=2", "train.batch_size=4", "models.alphagateau.channels=8",
        "models.alphagateau.num_blocks=1", "progress=False", "compilation_cache="])
    runs = training_configs("alphagateau-speed", config)
    assert sorted(runs) == ["alphagateau", "resnet"]
    run_config = runs["alphagateau"]
    assert run_config.game.name == "chess" and run_config.replay.window_size == 1_000_000
    with caplog.at_level(logging.INFO):
        state = train.run(run_config, tmp_path / "alphagateau")
    assert state.iteration == 1
    for message in ("self-play: compiled in", "self-play played 3 plies of 2 games, 6 frames",
                    "replay window of 6 frames", "training: 2 of 2 updates", "iteration 1: checkpoint saved"):
        assert message in caplog.text, message
    step, window = read_window(tmp_path / "alphagateau")
    frames = window.as_frames()
    assert step == 1 and frames.observation.shape == (6, 8, 8, 119) and frames.policy_target.shape == (6, 4672)
    np.testing.assert_allclose(frames.policy_target.astype(np.float32).sum(axis=1), 1.0, atol=1e-2)
    assert window.bytes_per_frame() < 3000  # well under the 29 KB of a dense 8×8 frame


SHRUNK = ["iterations=1", "selfplay.num_games=2", "selfplay.plies_per_iteration=3", "search.num_simulations=2",
          "search.max_num_considered_actions=2", "train.batch_size=4", "model.channels=8", "model.num_blocks=1",
          "progress=False"]


# sai-go's paper preset plays the tiny one's game (7×7 Go) with the same method and network, only larger (and the
# paper's value loss and branching, which tests/sai_go/test_train.py's run sets): its tiny training tests
# (tests/sai_go) are its paper path.  quickstart's and alphagateau-finetune's pretraining are Gardner
# AlphaGateau (tests/experiments/test_quickstart.py); the fine-tuning stage is the 8×8 AlphaGateau run above.
@pytest.mark.parametrize("name, run, overrides", [
    ("contempt-train", "contempt", ["from_scratch=True"]),  # 8×8, MuZero search with contempt's frozen opponent nodes
])
def test_paper_presets_train_one_iteration_with_only_their_sizes_shrunk(tmp_path, caplog, name, run, overrides):
    config = load_config(name, "paper", SHRUNK + overrides)
    run_config = training_configs(name, config)[run]
    paper = training_configs(name, load_config(name, "paper", overrides))[run]
    for key in ("game", "search.kind", "search.rules", "method", "replay", "selfplay.max_game_plies"):
        section, _, leaf = key.partition(".")
        assert (run_config[section][leaf] if leaf else run_config[section]) == \
            (paper[section][leaf] if leaf else paper[section]), key  # the pod's path, not the tiny one's
    with caplog.at_level(logging.INFO):
        assert train.run(run_config, tmp_path / run).iteration == 1
    assert "self-play: compiled in" in caplog.text and "iteration 1: checkpoint saved" in caplog.text
    step, window = read_window(tmp_path / run)
    # The paper's 512-ply cap: no game of the 3-ply call ends, so its frames wait for their game's end (pending),
    # stored as the window stores them.
    pending = ProcessReplay(tmp_path / run / "replay" / "process-0", keep=3).load_pending(1)
    assert step == 1 and len(window) + len(pending) >= 6
    stored = pending.window if len(pending) else window
    assert stored.bytes_per_frame() < 0.2 * sum(array.nbytes for array in stored.fields().values()) / len(stored)
