"""Networks: Flax modules ``(inputs, train) -> (policy_logits [B, A], value [B])`` and the AlphaZero ResNet.

Every network reads a :class:`NetworkInputs` batch: the pgx observation and the legal-action mask of each
position.  That pair is all a frame in the replay window stores, so any encoder (planes for the ResNet, a graph for
AlphaGateau) is computed from it inside the network's ``__call__`` and stays under jit.

Networks are chosen by ``config.model.name``: ``resnet`` is built in; any other name is a ``module:factory`` path,
with ``factory(model_config, game) -> nn.Module``, so method packages add networks without ``zerolab`` importing
them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import pgx

from zerolab.games import Game


@flax.struct.dataclass
class NetworkInputs:
    """What a network sees of a batch of positions.

    Attributes:
      observation: [B, *observation_shape] pgx observation from the side to move.
      legal_action_mask: [B, A] bool.
    """

    observation: jax.Array
    legal_action_mask: jax.Array

    @classmethod
    def from_states(cls, states: pgx.State) -> NetworkInputs:
        return cls(observation=states.observation, legal_action_mask=states.legal_action_mask)


class ResidualBlock(nn.Module):
    channels: int

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        y = nn.Conv(self.channels, (3, 3), use_bias=False)(x)
        y = nn.BatchNorm(use_running_average=not train, momentum=0.9)(y)
        y = nn.relu(y)
        y = nn.Conv(self.channels, (3, 3), use_bias=False)(y)
        y = nn.BatchNorm(use_running_average=not train, momentum=0.9)(y)
        return nn.relu(x + y)


class AlphaZeroResNet(nn.Module):
    """AlphaZero's network: a conv stem, ``num_blocks`` residual blocks, policy and value heads.

    BatchNorm statistics update when ``train`` is true.  Under ``jit`` with a batch sharded over a device mesh the
    batch mean and variance are those of the global batch, so the statistics are synchronised across devices.
    """

    num_actions: int
    channels: int = 64
    num_blocks: int = 5
    value_hidden: int = 64

    @nn.compact
    def __call__(self, inputs: NetworkInputs, train: bool = False) -> tuple[jax.Array, jax.Array]:
        x = inputs.observation.astype(jnp.float32)
        x = nn.Conv(self.channels, (3, 3), use_bias=False)(x)
        x = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9)(x))
        for _ in range(self.num_blocks):
            x = ResidualBlock(self.channels)(x, train)

        policy = nn.Conv(2, (1, 1), use_bias=False)(x)
        policy = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9)(policy))
        policy_logits = nn.Dense(self.num_actions)(policy.reshape(policy.shape[0], -1))

        value = nn.Conv(1, (1, 1), use_bias=False)(x)
        value = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9)(value))
        value = nn.relu(nn.Dense(self.value_hidden)(value.reshape(value.shape[0], -1)))
        value = jnp.tanh(nn.Dense(1)(value)).squeeze(-1)
        return policy_logits, value


def make_resnet(model_config: Any, game: Game) -> nn.Module:
    return AlphaZeroResNet(
        num_actions=game.num_actions,
        channels=int(model_config.channels),
        num_blocks=int(model_config.num_blocks),
    )


BUILTIN_NETWORKS: dict[str, Callable[[Any, Game], nn.Module]] = {"resnet": make_resnet}


def make_network(model_config: Any, game: Game) -> nn.Module:
    """The Flax module named by ``model_config.name`` (``resnet`` or ``package.module:factory``)."""
    name = model_config.name
    if name in BUILTIN_NETWORKS:
        return BUILTIN_NETWORKS[name](model_config, game)
    if ":" not in name:
        raise ValueError(f"unknown network {name!r}: use one of {sorted(BUILTIN_NETWORKS)} or 'module:factory'")
    module_name, factory_name = name.split(":", 1)
    factory = getattr(importlib.import_module(module_name), factory_name, None)
    if factory is None:
        raise ValueError(f"network factory {name!r}: module {module_name} has no {factory_name}")
    return factory(model_config, game)


def example_inputs(game: Game, batch_size: int = 1) -> NetworkInputs:
    """A batch of initial positions, for initialising parameters."""
    keys = jax.random.split(jax.random.key(0), batch_size)
    return NetworkInputs.from_states(jax.vmap(game.init)(keys))


def init_variables(network: nn.Module, game: Game, key: jax.Array) -> dict:
    """``{'params': ..., 'batch_stats': ...}`` of a freshly initialised network."""
    variables = jax.jit(lambda k, x: network.init(k, x, train=False))(key, example_inputs(game))
    return {"params": variables["params"], "batch_stats": variables.get("batch_stats", {})}


def count_parameters(params: Any) -> int:
    return int(sum(x.size for x in jax.tree_util.tree_leaves(params)))


def apply_network(
    network: nn.Module, variables: dict, inputs: NetworkInputs, train: bool = False
) -> tuple[jax.Array, jax.Array, dict]:
    """``(policy_logits [B, A], value [B], batch_stats)``; batch_stats are updated only when ``train``."""
    if train:
        (logits, value), updates = network.apply(variables, inputs, train=True, mutable=["batch_stats"])
        return logits, value, updates.get("batch_stats", {})
    logits, value = network.apply(variables, inputs, train=False)
    return logits, value, variables.get("batch_stats", {})
