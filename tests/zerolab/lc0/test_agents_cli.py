"""maia as agents and runs: PolicyAgent inside jax.jit on a batch of 64, a converted run loaded as a search agent
(and as init_from), the command line (describe, eval, convert), lc0 found beside the running Python."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from zerolab.play.lc0_agents import PolicyAgent, policy_actions


@pytest.fixture(scope="module")
def policy_agent(maia, lc0_game):
    return PolicyAgent(maia.network, maia.variables, lc0_game, mode="argmax")


def test_policy_agent_runs_inside_jit_on_a_batch_of_64(maia, lc0_game, played, maia_outputs, policy_agent):
    positions, states = played
    alive = [row for row, p in enumerate(positions) if any(p.board().legal_moves)][:64]
    batch = jax.tree.map(lambda leaf: leaf[np.asarray(alive)], states)
    jitted = jax.jit(lambda variables, s, key: policy_actions(maia.network, variables, s, key, mode="sample"))
    sampled = np.asarray(jitted(maia.variables, batch, jax.random.key(0)))
    assert sampled.shape == (64,) and np.asarray(batch.legal_action_mask)[np.arange(64), sampled].all()
    chosen = policy_agent.select_actions(batch, jax.random.key(0))
    logits = np.where(np.asarray(batch.legal_action_mask), maia_outputs[0][alive], -np.inf)
    np.testing.assert_array_equal(chosen, logits.argmax(axis=1))
    probabilities = np.asarray(policy_agent.probabilities(batch))
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    assert (probabilities[~np.asarray(batch.legal_action_mask)] == 0).all()


def test_converted_run_is_an_agent_and_an_init_from(maia, lc0_game, tmp_path):
    from zerolab.play.agent_specs import make_agent
    from zerolab.frontends.lc0_convert import convert_to_run, lc0_run_config
    from zerolab.networks.lc0.network import architecture_config
    from zerolab.training.runs import Components
    from zerolab.training.train_state import init_train_state, make_optimizer
    from zerolab.training.trained_variables import initialise_from

    run = convert_to_run(maia.weights.path, tmp_path / "maia")
    agent = make_agent(f"{run}:num_simulations=4")
    assert agent.game == lc0_game
    restored = jax.tree.map(np.asarray, agent.variables)
    jax.tree.map(np.testing.assert_array_equal, restored, jax.tree.map(np.asarray, maia.variables))
    config = lc0_run_config(maia.weights.path, architecture_config(maia.weights))
    components = Components.from_config(config)
    optimizer = make_optimizer(config.train)
    template = jax.eval_shape(lambda key: init_train_state(components.network, components.game, optimizer, key),
                              jax.random.key(0))
    template = jax.tree.map(lambda leaf: np.zeros(leaf.shape, leaf.dtype), template)
    started = initialise_from(template, str(run), optimizer)
    jax.tree.map(np.testing.assert_array_equal, jax.tree.map(np.asarray, started.params),
                 jax.tree.map(np.asarray, maia.variables["params"]))
    with pytest.raises(FileExistsError, match="already holds a run"):
        convert_to_run(maia.weights.path, run)


def _cli(capsys, *arguments: str) -> tuple[int, str, str]:
    from zerolab.frontends.lc0_cli import main

    code = main(list(arguments))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_describe_and_eval(maia_path, capsys):
    code, out, err = _cli(capsys, "describe")
    assert code == 0, err
    assert "6 SE blocks x 64 filters" in out and "(80, 64, 3, 3)" in out and '"accuracy": 52.96' in out
    code, out, err = _cli(capsys, "eval", "--fen", "rnbqkbnr/pp2pppp/2p5/3p4/3PP3/8/PPP2PPP/RNBQKBNR w KQkq - 0 3",
                          "--top", "5")
    assert code == 0, err
    lines = dict(line.split() for line in out.splitlines()[2:])
    assert set(lines) >= {"e4e5", "e4d5", "b1c3"} and abs(float(lines["b1c3"]) - 0.2168) < 6e-4


def test_cli_names_a_bad_file(tmp_path, capsys):
    bad = tmp_path / "not-a-net.pb"
    bad.write_bytes(b"\x0d\x01\x02\x03\x04")
    code, _, err = _cli(capsys, "describe", "--weights", str(bad))
    assert code == 2 and str(bad) in err and "magic" in err


def test_python_dash_m_entry_point():
    result = subprocess.run([sys.executable, "-m", "zerolab", "lc0", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "describe" in result.stdout and "convert" in result.stdout


def test_lc0_binary_is_found_beside_python(monkeypatch):
    from zerolab.engines.executables import find_engine

    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # not the virtualenv's bin
    path = find_engine("lc0", search_directories=())
    assert path == os.path.join(os.path.dirname(sys.executable), "lc0")
    version = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=30)
    assert "0.32.1" in version.stdout + version.stderr
