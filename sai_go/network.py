"""SAI's network: a residual tower with a policy head and two value-type heads for the sigmoid's α and β.

``model.name = "sai_go.network:make_sai_network"``.  For a batch of positions it returns a
:class:`~zerolab.NetworkOutput` whose ``extras`` hold ``alpha`` [B] (the expected area difference, mover minus
opponent, komi excluded) and ``beta`` [B] (``c·exp(β*)``, ``c = beta_scale / N²``, 10/N² by default); komi is not an
input.  :func:`sigmoid_value` reads them back as a :class:`SigmoidValue`.  ``value`` is the mover's outcome at komi 0,
``2σ(βα) − 1``, for code that knows nothing of komi; SAI's own search and loss use α and β with each game's komi.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from zerolab import GoGame, NetworkInputs, NetworkOutput, section_dataclass
from zerolab.networks import float32_output, policy_head, residual_tower

#: β* is clipped to this range before the exponential, so a wild head cannot overflow β (c·e^6 ≈ 82 on 7×7).
RAW_BETA_RANGE = (-12.0, 6.0)


class SigmoidValue(NamedTuple):
    """α [B] and β [B] of a batch of positions, from the mover's view (see :mod:`sai_go.value`)."""

    alpha: jax.Array
    beta: jax.Array


def sigmoid_value(output: NetworkOutput) -> SigmoidValue:
    """The α and β heads of an SAI network's output, or a ValueError saying the network is not SAI's."""
    if "alpha" not in output.extras or "beta" not in output.extras:
        raise ValueError(f"the network has no SAI heads: its output extras are {sorted(output.extras)}, expected "
                         f"'alpha' and 'beta' (model.name = 'sai_go.network:make_sai_network')")
    return SigmoidValue(output.extras["alpha"], output.extras["beta"])


class ValueTypeHead(nn.Module):
    """AlphaZero's value head without its tanh: 1×1 conv, BatchNorm, ReLU, dense hidden layer, ReLU, one output."""

    hidden: int
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        """[B, H, W, C] → [B] float32."""
        y = nn.Conv(1, (1, 1), use_bias=False, dtype=self.dtype)(x)
        y = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=self.dtype)(y))
        y = nn.relu(nn.Dense(self.hidden, dtype=self.dtype)(y.reshape(y.shape[0], -1)))
        return nn.Dense(1, dtype=jnp.float32)(y.astype(jnp.float32)).squeeze(-1)  # the last layer in float32


class SaiNetwork(nn.Module):
    """Conv stem, ``num_blocks`` residual blocks of ``channels``, a policy head and the α and β* heads (type V).

    The tower and heads compute in ``dtype`` (``model.dtype``); α, β and the value are computed in float32."""

    num_actions: int
    board_points: int
    channels: int = 128
    num_blocks: int = 3
    value_hidden: int = 64
    beta_scale: float = 10.0
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, inputs: NetworkInputs, train: bool = False) -> NetworkOutput:
        x = residual_tower(inputs.observation, self.channels, self.num_blocks, train, self.dtype)
        policy_logits = policy_head(x, self.num_actions, train, self.dtype)

        alpha = ValueTypeHead(self.value_hidden, self.dtype, name="alpha_head")(x, train)
        raw_beta = ValueTypeHead(self.value_hidden, self.dtype, name="beta_head")(x, train)
        beta = (self.beta_scale / self.board_points) * jnp.exp(jnp.clip(raw_beta, *RAW_BETA_RANGE))
        value = jnp.tanh(0.5 * beta * alpha)  # 2σ(βα) − 1: the mover's outcome at komi 0
        return float32_output(NetworkOutput(policy_logits, value, {"alpha": alpha, "beta": beta}))


@dataclasses.dataclass(frozen=True)
class SaiModelConfig:
    """SAI's keys of a ``model`` section (``name`` and ``dtype`` are the core's), with :class:`SaiNetwork`'s
    defaults for a config without them."""

    channels: int = 128
    num_blocks: int = 3
    value_hidden: int = 64
    beta_scale: float = 10.0


def make_sai_network(model_config: Any, game: GoGame) -> nn.Module:
    """The ``model.name`` factory: ``model.channels``, ``model.num_blocks`` and optional ``model.value_hidden`` and
    ``model.beta_scale`` (:class:`SaiModelConfig`)."""
    if not isinstance(game, GoGame):
        raise ValueError(f"sai_go.network:make_sai_network plays Go only, got game {game.name!r} (set game.name=go)")
    sizes = section_dataclass(SaiModelConfig, model_config, "model", shared=True)
    return SaiNetwork(num_actions=game.num_actions, board_points=game.size * game.size, **dataclasses.asdict(sizes))
