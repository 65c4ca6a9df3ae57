"""A network with an extra output: the AlphaZero ResNet plus a linear ``ply_estimate`` head on the observation."""

from __future__ import annotations

import flax.linen as nn
import jax.numpy as jnp

from zerolab import AlphaZeroResNet, NetworkInputs, NetworkOutput


class ResNetWithPlyHead(nn.Module):
    num_actions: int
    channels: int
    num_blocks: int

    @nn.compact
    def __call__(self, inputs: NetworkInputs, train: bool = False) -> NetworkOutput:
        output = AlphaZeroResNet(self.num_actions, self.channels, self.num_blocks)(inputs, train)
        flat = inputs.observation.astype(jnp.float32).reshape(inputs.observation.shape[0], -1)
        ply_estimate = nn.Dense(1)(flat).squeeze(-1)
        return NetworkOutput(output.policy_logits, output.value, {"ply_estimate": ply_estimate})


def make_network(model_config, game) -> nn.Module:
    return ResNetWithPlyHead(game.num_actions, int(model_config.channels), int(model_config.num_blocks))
