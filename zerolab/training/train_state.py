"""The train state and its optimiser: :class:`TrainState` (the pytree a checkpoint holds), the ``train``
section (:class:`TrainConfig`), the optimiser it names (:func:`make_optimizer`) and a fresh state
(:func:`init_train_state`).

``TrainState`` is the project's own small dataclass rather than ``flax.training.train_state.TrainState``: Flax's keeps
``apply_fn`` and ``tx`` inside the state, while a zerolab train step closes over the network and the optimiser
(built from the config by :class:`zerolab.training.runs.Components` and :func:`make_optimizer`), so the state stays
a plain pytree of arrays that orbax writes as it is.  Its fields (``step``, ``params``, ``batch_stats``,
``opt_state``) are the names every existing checkpoint was written with, which is why they are kept.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import optax

from zerolab.config import check_at_least, check_choice, section_dataclass
from zerolab.games import Game
from zerolab.networks.network import init_variables


@flax.struct.dataclass
class TrainState:
    step: jax.Array
    params: Any
    batch_stats: Any
    opt_state: Any

    @property
    def variables(self) -> dict:
        return {"params": self.params, "batch_stats": self.batch_stats}


#: ``train.optimizer`` values: Adam (the default), or SGD with Nesterov momentum ``train.momentum`` (lc0's
#: training code, used by fine-tuning recipes such as Hamade et al.'s attuned senior).
OPTIMIZERS = ("adam", "sgd_nesterov")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """A run's ``train`` section: the optimiser (``optimizer``, ``learning_rate``, ``momentum`` for
    ``sgd_nesterov``), the L2 weight, the batch size and the epochs over the window an iteration.  Configs written
    before ``optimizer`` existed get Adam, as they were trained."""

    learning_rate: float = 1e-3
    batch_size: int = 256
    epochs_per_iteration: float = 1.0
    l2_weight: float = 0.0
    optimizer: str = "adam"
    momentum: float = 0.9

    def __post_init__(self):
        check_choice("train.optimizer", self.optimizer, OPTIMIZERS)
        check_at_least("train.batch_size", self.batch_size, 1)
        if not self.learning_rate > 0:
            raise ValueError(f"train.learning_rate must be positive, got {self.learning_rate!r}")
        for name in ("epochs_per_iteration", "l2_weight", "momentum"):
            check_at_least(f"train.{name}", getattr(self, name), 0)

    def updates(self, window_frames: int) -> int:
        """The updates an iteration makes on a window of ``window_frames`` frames (all processes' together):
        ``epochs_per_iteration`` passes of ``batch_size``, rounded up, at least one — the rule the loop trains by
        (:func:`zerolab.training.train.train_on_window`) and the plan counts by."""
        return max(1, math.ceil(self.epochs_per_iteration * window_frames / self.batch_size))

    @classmethod
    def from_config(cls, config: Any) -> TrainConfig:
        """From a ConfigDict (or mapping) section (:func:`zerolab.config.section_dataclass`)."""
        return section_dataclass(cls, config, "train")


def make_optimizer(train: TrainConfig | Any) -> optax.GradientTransformation:
    """The optimiser of ``train`` (a :class:`TrainConfig`, or a ``train`` section read into one), built once for each
    setting: runs, plans and checkpoint templates of one setting share it (and so its compiled train step)."""
    train = train if isinstance(train, TrainConfig) else TrainConfig.from_config(train)
    return built_optimizer(train.optimizer, train.learning_rate, train.momentum)


@functools.lru_cache(maxsize=16)
def built_optimizer(name: str, learning_rate: float, momentum: float) -> optax.GradientTransformation:
    """The optax transformation ``name`` (one of :data:`OPTIMIZERS`)."""
    if name == "sgd_nesterov":
        return optax.sgd(learning_rate, momentum=momentum, nesterov=True)
    return optax.adam(learning_rate)


def init_train_state(network: nn.Module, game: Game, optimizer: optax.GradientTransformation, key: jax.Array) -> TrainState:
    variables = init_variables(network, game, key)
    return TrainState(
        step=jnp.zeros((), jnp.int32),
        params=variables["params"],
        batch_stats=variables["batch_stats"],
        opt_state=optimizer.init(variables["params"]),
    )


__all__ = ["OPTIMIZERS", "TrainConfig", "TrainState", "built_optimizer", "init_train_state", "make_optimizer"]
