"""Searchless agents of an lc0 network: :class:`PolicyAgent` plays the raw policy (argmax or sampled).

A junior in skill-compatibility plays maia's raw policy at temperature 1 (lc0's UCI engine applies
``PolicyTemperature`` 1.359 by default, which does not change its argmax).  Everything is jitted and batched:
:func:`policy_probabilities` and :func:`policy_actions` are pure functions usable inside a caller's ``jax.jit``.
"""

from __future__ import annotations

import functools
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pgx

from zerolab.play.agents import Agent
from zerolab.networks.lc0.network import check_lc0_game
from zerolab.networks.network import NetworkInputs
from zerolab.training.program_cost import PlannedProgram, abstract_states, compile_cost

MODES = ("argmax", "sample")


def policy_probabilities(network: nn.Module, variables: Any, states: pgx.State, temperature: float = 1.0) -> jax.Array:
    """[B, A] move probabilities of the network's policy over the legal moves, ``softmax(logits / temperature)``."""
    output = network.apply(variables, NetworkInputs.from_states(states), train=False)
    logits = jnp.where(states.legal_action_mask, output.policy_logits / temperature, -jnp.inf)
    return jax.nn.softmax(logits, axis=-1)


def policy_actions(network: nn.Module, variables: Any, states: pgx.State, key: jax.Array, mode: str = "argmax",
                   temperature: float = 1.0) -> jax.Array:
    """[B] actions: the most probable legal move (``argmax``) or one sampled from the policy (``sample``)."""
    output = network.apply(variables, NetworkInputs.from_states(states), train=False)
    logits = jnp.where(states.legal_action_mask, output.policy_logits, -jnp.inf)
    if mode == "argmax":
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)
    if mode == "sample":
        return jax.random.categorical(key, logits / temperature, axis=-1).astype(jnp.int32)
    raise ValueError(f"PolicyAgent mode must be one of {MODES}, got {mode!r}")


def _actions_and_probabilities(network: nn.Module, variables: Any, states: pgx.State, key: jax.Array, mode: str,
                               temperature: float) -> tuple[jax.Array, jax.Array]:
    """([B] actions, [B, A] probabilities) from one forward pass (one compiled function serves both agent calls)."""
    output = network.apply(variables, NetworkInputs.from_states(states), train=False)
    logits = jnp.where(states.legal_action_mask, output.policy_logits, -jnp.inf)
    probabilities = jax.nn.softmax(logits / temperature, axis=-1)
    if mode == "argmax":
        actions = jnp.argmax(logits, axis=-1)
    else:
        actions = jax.random.categorical(key, logits / temperature, axis=-1)
    return actions.astype(jnp.int32), probabilities


class PolicyAgent(Agent):
    """An lc0 network's raw policy as an :class:`zerolab.play.agents.Agent` (no search).

    Args:
      network, variables: an lc0 module and its variables (default: maia-1900, :func:`zerolab.networks.lc0.load_lc0_weights`).
      game: the game it plays (default ``make_game("chess", observation="lc0")``).
      mode: ``"argmax"`` or ``"sample"``; temperature: divides the logits when sampling (1 = the raw policy).
    """

    def __init__(self, network: nn.Module | None = None, variables: Any = None, game: Any = None,
                 mode: str = "argmax", temperature: float = 1.0, name: str | None = None, weights: str | None = None):
        from zerolab.games import make_game
        from zerolab.networks.lc0 import load_lc0_weights

        if mode not in MODES:
            raise ValueError(f"PolicyAgent mode must be one of {MODES}, got {mode!r}")
        if temperature <= 0:
            raise ValueError(f"PolicyAgent temperature must be positive, got {temperature}")
        if network is None:
            network, variables = load_lc0_weights(weights)
        self.game = game or make_game("chess", observation="lc0")
        check_lc0_game(self.game)
        self.network, self.variables = network, variables
        self.mode, self.temperature = mode, float(temperature)
        self.name = name or f"lc0-policy-{mode}" + (f"-t{temperature:g}" if mode == "sample" else "")
        self._policy = jax.jit(functools.partial(_actions_and_probabilities, network, mode=mode,
                                                 temperature=self.temperature))

    def probabilities(self, states: pgx.State) -> jax.Array:
        """[B, 4672] policy over the legal moves (for hand-and-brain hands and the expector)."""
        return self._policy(self.variables, states, jax.random.key(0))[1]

    def select_actions(self, states: pgx.State, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        return np.asarray(self._policy(self.variables, states, key)[0])  # one batched call over every lane

    def planned_program(self, batch: int, calls: int, what: str = "", name: str = "") -> PlannedProgram:
        """This agent's own jitted policy of ``batch`` positions (one network evaluation: no loop, so XLA's FLOPs are
        the call's), compiled over abstract states, called ``calls`` times and named ``name`` (default
        ``<agent> [batch]``); the variables may be abstract."""
        lowered = self._policy.lower(self.variables, abstract_states(self.game, batch), jax.random.key(0))
        cost = compile_cost(name or f"{self.name} [{batch}]", lowered)
        return PlannedProgram(cost, calls, what or f"the policy ({self.mode}) of {batch} positions")


__all__ = ["PolicyAgent", "policy_actions", "policy_probabilities", "MODES"]
