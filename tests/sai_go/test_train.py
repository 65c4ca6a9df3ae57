"""SAI through the core loop: one tiny iteration, then the run resumed for a second; the replay window restored from
the checkpoint keeps the frames' komi, and bad method options fail by name."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.configs import load_config
from zerolab.training.replay_checkpoints import read_window
from zerolab.training import train
from zerolab.training.runs import Components

TINY = ["model.channels=8", "model.num_blocks=1", "model.value_hidden=8", "search.num_simulations=2",
        "selfplay.num_games=4", "selfplay.plies_per_iteration=24", "selfplay.max_game_plies=10",
        "train.batch_size=16", "method_options.queue_size=8", "method_options.branch_probability=0.3",
        # the paper preset's method (tiny's is pinned bit for bit by test_selfplay_reference.py)
        "method_options.value_loss=paper", "method_options.branch_from_branches=False",
        "progress=False"]


def sai_config(iterations: int):
    return load_config("sai-go", "tiny", TINY + [f"iterations={iterations}"])


@pytest.mark.slow
def test_two_sai_iterations_stopped_and_resumed_keep_the_frames_komi(tmp_path):
    """One iteration, then the same run asked for two: it resumes from the first iteration's checkpoint (as a killed
    run does: tests/zerolab/test_train.py kills one), in this process, so the second reuses the first's programs."""
    workdir = tmp_path / "run"
    train.run(sai_config(1), workdir)
    first = (workdir / "metrics.jsonl").read_text()
    train.run(sai_config(2), workdir)
    assert (workdir / "metrics.jsonl").read_text().startswith(first)  # iteration 1 kept, not trained again
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [record["iteration"] for record in records] == [1, 2]
    for record in records:
        assert np.isfinite(record["value_loss"]) and record["branches_pushed"] >= record["branches_started"] >= 1
        assert record["mean_beta"] > 0 and np.isfinite(record["score_estimate_mae"])

    step, stored = read_window(workdir)
    assert step == 2
    window = stored.fields()
    komi, signed = np.asarray(window["extra_komi"]), np.asarray(window["extra_signed_komi"])
    # Every frame played is in the window or waits for its game's end (lanes carried from call to call): iteration
    # 1's frames, and the pending ones, survived the restart.
    assert len(komi) == len(window["value_target"]) == sum(record["frames_entered"] for record in records)
    assert len(komi) + records[-1]["frames_pending"] == 2 * 4 * 24
    assert np.asarray(window["value_mask"]).all()
    np.testing.assert_array_equal(komi - np.floor(komi), 0.5)  # half-integer komi, fresh and branch games
    np.testing.assert_array_equal(np.abs(signed), np.abs(komi))
    assert np.asarray(window["extra_branch"]).any() and not np.asarray(window["extra_branch"]).all()
    assert len(np.unique(komi)) > 1  # games at several komi


def test_bad_sai_settings_fail_by_name():
    with pytest.raises(ValueError, match=r"method_options.lam must be in \[0, 1\], got 2.0"):
        Components.from_config(load_config("sai-go", "tiny", ["method_options.lam=2.0"]))
    with pytest.raises(ValueError, match="needs model.name='sai_go.network:make_sai_network'"):
        Components.from_config(load_config("sai-go", "tiny", ["model.name=resnet"]))
    with pytest.raises(ValueError, match="method_options.branch_probability must be in"):
        Components.from_config(load_config("sai-go", "tiny", ["method_options.branch_probability=1.5"]))
    with pytest.raises(ValueError, match=r"method_options.value_loss must be one of \('paper', 'tanh'\), got 'l1'"):
        Components.from_config(load_config("sai-go", "tiny", ["method_options.value_loss=l1"]))
    with pytest.raises(ValueError, match="plays Go only, got game .gardner_chess."):
        Components.from_config(load_config("sai-go", "tiny", ["game.name=gardner_chess"]))


def test_the_presets_method_trains_with_its_value_loss():
    """One finished frame at ρ = ½ won: the paper's value loss (1 − ½)² = ¼ (the paper preset), tanh's (1 − 0)² = 1
    (tiny)."""
    import jax.numpy as jnp

    from zerolab import Frames, NetworkOutput

    output = NetworkOutput(jnp.zeros((1, 2)), jnp.zeros(1), {"alpha": jnp.array([3.0]), "beta": jnp.array([0.5])})
    frames = Frames(observation=jnp.zeros((1, 1)), legal_action_mask=jnp.ones((1, 2), bool),
                    policy_target=jnp.full((1, 2), 0.5), value_target=jnp.array([1.0]), value_mask=jnp.array([True]),
                    extras={"signed_komi": jnp.array([-3.0])})
    for preset, expected in (("paper", 0.25), ("tiny", 1.0)):
        method = Components.from_config(load_config("sai-go", preset)).method
        assert float(method.loss_fn(output, frames)[1]["value_loss"]) == expected, preset
