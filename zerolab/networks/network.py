"""Networks: Flax modules ``(inputs, train) -> NetworkOutput(policy_logits [B, A], value [B], extras)``.

Every network reads a :class:`NetworkInputs` batch: the pgx observation and the legal-action mask of each
position.  That pair is all a frame in the replay window stores, so any encoder (planes for the ResNet, a graph for
AlphaGateau) is computed from it inside the network's ``__call__`` and stays under jit.

A network returns a :class:`NetworkOutput`; ``extras`` holds any further heads a method needs (SAI's α and β, an
auxiliary target), each ``[B, ...]``.  :func:`apply_network` is the seam between networks and everything else (search,
losses, agents): it checks the output's shapes there, as mctx checks its model outputs, so a head of the wrong shape
fails at trace time with the name of the field instead of broadcasting silently.

Networks are chosen by ``config.model.name``: ``resnet`` is built in; any other name is a ``module:factory`` path,
with ``factory(model_config, game) -> nn.Module``, so method packages add networks without ``zerolab`` importing
them.

**Mixed precision, one rule for every network.**  ``config.model.dtype`` (:data:`NETWORK_DTYPES`) is the dtype a
network computes in.  :func:`make_network` sets it on the module the factory returns (its ``dtype`` field, as Flax's
own layers name it); parameters, BatchNorm statistics, optimiser state, losses and the search's arithmetic stay
float32, and :func:`check_network_output` — the seam every caller passes through — casts the outputs to float32.
Inside a network, softmaxes and BatchNorm moments are computed in float32 (Flax's BatchNorm does that itself), and
so is each head's last layer: logits rounded to bfloat16 would tie moves float32 tells apart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import pgx

from zerolab.config import check_at_least, check_choice, did_you_mean, load_factory, section_dataclass
from zerolab.games import Game

#: ``model.dtype`` values: what a network computes in (``bfloat16`` on accelerators; parameters stay float32).
NETWORK_DTYPES = ("float32", "bfloat16")


def compute_dtype(name: str, key: str = "model.dtype") -> jnp.dtype:
    """The computation dtype named ``name`` (one of :data:`NETWORK_DTYPES`), or a ValueError naming ``key``."""
    check_choice(key, name, NETWORK_DTYPES)
    return jnp.dtype(name)


def float32_output(output: NetworkOutput) -> NetworkOutput:
    """``output`` with every floating array in float32 (the network boundary of the mixed-precision rule)."""
    def cast(array):
        return array.astype(jnp.float32) if jnp.issubdtype(array.dtype, jnp.floating) else array
    return NetworkOutput(cast(output.policy_logits), cast(output.value),
                         {name: cast(value) for name, value in output.extras.items()})


class NetworkOutput(NamedTuple):
    """What a network returns for a batch of B positions.

    Attributes:
      policy_logits: [B, A] unnormalised move logits (illegal actions are masked by the caller).
      value: [B] expected outcome from the side to move, in [-1, 1].
      extras: ``{name: [B, ...]}`` further outputs for a method's loss or search (empty for AlphaZero networks).
    """

    policy_logits: jax.Array
    value: jax.Array
    extras: Mapping[str, jax.Array] = {}


def check_network_output(output: Any, inputs: NetworkInputs) -> NetworkOutput:
    """``output`` as a :class:`NetworkOutput` whose shapes fit ``inputs``, its floating arrays in float32, or a
    ValueError naming the field.

    A bare ``(policy_logits, value)`` pair (networks written before ``NetworkOutput``) is accepted.
    """
    if not isinstance(output, NetworkOutput):
        if not (isinstance(output, tuple) and len(output) == 2):
            raise ValueError(f"a network must return NetworkOutput(policy_logits, value, extras), got {type(output).__name__}")
        output = NetworkOutput(*output)
    batch_size, num_actions = inputs.legal_action_mask.shape
    expected = {"policy_logits": (batch_size, num_actions), "value": (batch_size,)}
    for field, shape in expected.items():
        found = tuple(getattr(output, field).shape)
        if found != shape:
            raise ValueError(f"network output {field} has shape {found}, expected {shape} (batch {batch_size}, "
                             f"{num_actions} actions)")
    for name, value in output.extras.items():
        if value.ndim == 0 or value.shape[0] != batch_size:
            raise ValueError(f"network output extras[{name!r}] has shape {tuple(value.shape)}, expected [{batch_size}, ...]")
    return float32_output(output)


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
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        y = nn.Conv(self.channels, (3, 3), use_bias=False, dtype=self.dtype)(x)
        y = nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=self.dtype)(y)
        y = nn.relu(y)
        y = nn.Conv(self.channels, (3, 3), use_bias=False, dtype=self.dtype)(y)
        y = nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=self.dtype)(y)
        return nn.relu(x + y)


def residual_tower(observation: jax.Array, channels: int, num_blocks: int, train: bool,
                   dtype: Any = jnp.float32) -> jax.Array:
    """AlphaZero's trunk: a 3×3 conv stem with BatchNorm and ReLU, then ``num_blocks`` residual blocks, computed in
    ``dtype``.

    Call it inside a ``@nn.compact`` method: its layers belong to the calling module and are named as if written
    there (``Conv_0``, ``BatchNorm_0``, ``ResidualBlock_0``, ...), so networks that share it keep their parameter names.
    """
    x = nn.Conv(channels, (3, 3), use_bias=False, dtype=dtype)(observation.astype(dtype))
    x = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=dtype)(x))
    for _ in range(num_blocks):
        x = ResidualBlock(channels, dtype)(x, train)
    return x


def policy_head(x: jax.Array, num_actions: int, train: bool, dtype: Any = jnp.float32) -> jax.Array:
    """AlphaZero's policy head over a trunk's [B, H, W, C] features: [B, num_actions] float32 logits (call it inside
    ``@nn.compact``, like :func:`residual_tower`).  Its convolution computes in ``dtype``, its last layer in float32,
    as every network's last layers do: logits rounded to bfloat16 (steps of 1/32 at 4) would tie moves that float32
    tells apart."""
    policy = nn.Conv(2, (1, 1), use_bias=False, dtype=dtype)(x)
    policy = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=dtype)(policy))
    return nn.Dense(num_actions, dtype=jnp.float32)(policy.reshape(policy.shape[0], -1).astype(jnp.float32))


class AlphaZeroResNet(nn.Module):
    """AlphaZero's network: a conv stem, ``num_blocks`` residual blocks, policy and value heads.

    BatchNorm statistics update when ``train`` is true.  Under ``jit`` with a batch sharded over a device mesh the
    batch mean and variance are those of the global batch, so the statistics are synchronised across devices.
    It computes in ``dtype`` (``model.dtype``) and returns float32.
    """

    num_actions: int
    channels: int = 64
    num_blocks: int = 5
    value_hidden: int = 64
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, inputs: NetworkInputs, train: bool = False) -> NetworkOutput:
        x = residual_tower(inputs.observation, self.channels, self.num_blocks, train, self.dtype)
        policy_logits = policy_head(x, self.num_actions, train, self.dtype)

        value = nn.Conv(1, (1, 1), use_bias=False, dtype=self.dtype)(x)
        value = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=self.dtype)(value))
        value = nn.relu(nn.Dense(self.value_hidden, dtype=self.dtype)(value.reshape(value.shape[0], -1)))
        value = jnp.tanh(nn.Dense(1, dtype=jnp.float32)(value.astype(jnp.float32))).squeeze(-1)
        return float32_output(NetworkOutput(policy_logits, value))


@dataclasses.dataclass(frozen=True)
class ResNetConfig:
    """The ResNet's keys of a ``model`` section (``name`` and ``dtype`` are :func:`make_network`'s)."""

    channels: int = 64
    num_blocks: int = 5

    def __post_init__(self):
        check_at_least("model.channels", self.channels, 1)
        check_at_least("model.num_blocks", self.num_blocks, 0)


def make_resnet(model_config: Any, game: Game) -> nn.Module:
    sizes = section_dataclass(ResNetConfig, model_config, "model", shared=True)
    return AlphaZeroResNet(num_actions=game.num_actions, channels=sizes.channels, num_blocks=sizes.num_blocks)


BUILTIN_NETWORKS: dict[str, Callable[[Any, Game], nn.Module]] = {"resnet": make_resnet}


def make_network(model_config: Any, game: Game) -> nn.Module:
    """The Flax module named by ``model_config.name`` (``resnet`` or ``package.module:factory``), computing in
    ``model_config.dtype`` (float32 when absent; see the module docstring)."""
    dtype = compute_dtype(model_config.get("dtype", "float32") if hasattr(model_config, "get") else "float32")
    name = model_config.name
    if name in BUILTIN_NETWORKS:
        network = BUILTIN_NETWORKS[name](model_config, game)
    elif ":" not in name:
        raise ValueError(f"model.name: unknown network {name!r}{did_you_mean(name, BUILTIN_NETWORKS)}: use one of "
                         f"{sorted(BUILTIN_NETWORKS)} or 'package.module:factory'")
    else:
        network = load_factory(name, "model.name")(model_config, game)
    if "dtype" in getattr(network, "__dataclass_fields__", {}):
        return network.clone(dtype=dtype)
    if dtype != jnp.float32:
        raise ValueError(f"model.dtype: the network {name!r} ({type(network).__name__}) has no dtype field, so it "
                         f"computes in float32 only; got {dtype.name!r}")
    return network


def example_inputs(game: Game, batch_size: int = 1) -> NetworkInputs:
    """A batch of initial positions, for initialising parameters."""
    keys = jax.random.split(jax.random.key(0), batch_size)
    return NetworkInputs.from_states(game.batched_init(keys))  # compiled once, not run op by op


def init_variables(network: nn.Module, game: Game, key: jax.Array) -> dict:
    """``{'params': ..., 'batch_stats': ...}`` of a freshly initialised network."""
    variables = jax.jit(lambda k, x: network.init(k, x, train=False))(key, example_inputs(game))
    return {"params": variables["params"], "batch_stats": variables.get("batch_stats", {})}


def abstract_variables(network: nn.Module, game: Game) -> dict:
    """The variables :func:`init_variables` would make, as ``jax.ShapeDtypeStruct`` leaves: traced, nothing
    initialised (a cost plan's network, whose checkpoint may not exist yet)."""
    return jax.eval_shape(lambda key: init_variables(network, game, key), jax.random.key(0))


def count_parameters(params: Any) -> int:
    return int(sum(x.size for x in jax.tree_util.tree_leaves(params)))


def apply_network(
    network: nn.Module, variables: dict, inputs: NetworkInputs, train: bool = False
) -> tuple[NetworkOutput, dict]:
    """``(NetworkOutput, batch_stats)``, shapes checked; batch_stats are updated only when ``train``."""
    if train:
        output, updates = network.apply(variables, inputs, train=True, mutable=["batch_stats"])
        return check_network_output(output, inputs), updates.get("batch_stats", {})
    output = network.apply(variables, inputs, train=False)
    return check_network_output(output, inputs), variables.get("batch_stats", {})
