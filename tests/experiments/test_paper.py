"""The paper presets before any accelerator: their cost plan from the compiled programs, and a run of the 8×8 paper
path with only its sizes shrunk (the path whose first GPU run printed nothing for 260 s)."""

import logging

import numpy as np
import pytest

from experiments.__main__ import main, training_configs
from zerolab.training import train
from zerolab.config import load_config
from zerolab.training.plan import format_plan, plan_training_run
from zerolab.training.replay_checkpoints import read_window


@pytest.mark.slow  # 48 s of CPU with a cold compilation cache (three programs at the paper sizes)
def test_the_plan_of_a_paper_preset_comes_from_its_compiled_programs(capsys):
    config = load_config("quickstart", "paper")
    plan = plan_training_run(config, "quickstart")
    assert [program.name for program in plan.programs] == ["self-play", "network evaluation", "training step"]
    assert plan.frames_per_iteration == 256 * 256 and plan.evaluations_per_iteration == 256 * (128 + 1)
    # A window of 1M frames: 1M / 256 updates per epoch once full, and fewer while it fills.
    assert plan.updates_per_iteration == 3907 and plan.total_updates < plan.iterations * 3907
    selfplay, evaluation, training = plan.programs
    assert selfplay.output_bytes > plan.frames_per_iteration * 5 * 5 * 115 * 4  # float32 observations on the device
    assert plan.selfplay_host_bytes < selfplay.output_bytes / 10  # frames leave the device as the window stores them
    assert training.flops > evaluation.flops > 0  # a training step (batch 256, forward + backward) costs more
    assert plan.frame.compact < plan.frame.dense / 10  # the compact window: Gardner frames 5 × 5 × 115 + 1225 actions
    assert plan.parameters > 900_000 and plan.train_state_bytes > 3 * 4 * plan.parameters  # params + Adam's moments
    text = format_plan(plan, "h100")
    assert "256 games × 256 plies" in text and "window 1,000,000" in text
    assert "no rate measured for gardner_chess" in text  # no invented numbers
    assert training_configs("contempt-odds", load_config("contempt-odds", "paper")) == {}  # its runner plans itself
    assert main(["plan", "quickstart", "no_such_key=1"]) == 2
    assert "unknown config key 'no_such_key'" in capsys.readouterr().err


@pytest.mark.slow  # 30 s of CPU with a cold compilation cache
def test_the_8x8_paper_path_trains_with_only_its_sizes_shrunk(tmp_path, caplog):
    """alphagateau-speed's paper preset — 8×8 chess, AlphaGateau, Gumbel search, 512-ply games, the 1M-frame window —
    through the loop a pod runs, with games, plies, simulations, network and batch made small; the log says where
    the first iteration is (compile, plies played, window, training updates, checkpoint)."""
    config = load_config("alphagateau-speed", "paper", [
        "iterations=1", "selfplay.num_games=2", "selfplay.plies_per_iteration=3", "search.num_simulations=2",
        "search.max_num_considered_actions=2", "train.batch_size=4", "models.alphagateau.embedding_size=8",
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


# sai-go's paper preset plays the tiny one's game (7×7 Go) with the same method and network, only larger: its tiny
# training tests (tests/sai_go) are its paper path.  quickstart's and alphagateau-finetune's pretraining are Gardner
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
    assert step == 1 and len(window) >= 6 and window.bytes_per_frame() < 0.2 * sum(
        array.nbytes for array in window.fields().values()) / len(window)
