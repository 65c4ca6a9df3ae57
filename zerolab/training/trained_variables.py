"""A trained network read back from a run directory: :func:`load_trained_variables` (the variables of a step and
the run's config, for anything that plays a trained network: :mod:`zerolab.play.search_agents`), a fresh run
starting from another run's parameters (:func:`initialise_from`), and the check that a run directory holds the
requested game and model (:func:`check_compatible`).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import pathlib

import jax
import ml_collections
import numpy as np
import optax

from zerolab import config as config_lib
from zerolab.training.checkpoint import Checkpointer
from zerolab.training.checkpoint_paths import resolve_checkpoint
from zerolab.training.run_directory import SHAPE_DEFINING_PREFIXES
from zerolab.training.runs import Components
from zerolab.training.train_state import TrainState, init_train_state

logger = logging.getLogger(__name__)


class IncompatibleCheckpointError(RuntimeError):
    """The work directory holds a run whose game or model differs from the requested config."""


@dataclasses.dataclass
class TrainedVariables:
    """Network variables read from a checkpoint, with the config of the run that wrote them."""

    config: ml_collections.ConfigDict
    variables: dict
    step: int
    path: pathlib.Path


def train_state_template(components: Components, optimizer: optax.GradientTransformation) -> TrainState:
    """A train state of the right structure, shapes and dtypes to restore into, built without running the network.

    ``jax.eval_shape`` traces the initialisation instead of compiling and running it; the leaves are zero-filled
    numpy arrays (so restored states come back as numpy, as host data).
    """
    return zero_filled(abstract_train_state(components, optimizer))


def abstract_train_state(components: Components, optimizer: optax.GradientTransformation) -> TrainState:
    """The train state's structure, shapes and dtypes (``jax.ShapeDtypeStruct`` leaves), traced, not run."""
    return jax.eval_shape(
        lambda key: init_train_state(components.network, components.game, optimizer, key), jax.random.key(0)
    )


@functools.lru_cache(maxsize=32)
def recorded_train_state(config_json: str) -> TrainState:
    """:func:`abstract_train_state` of the run whose config a checkpoint recorded (its JSON text), traced once a
    config: the checkpoints of one run, read again and again when a run's steps are rated, share it."""
    components = Components.from_config(config_lib.from_json(config_json))
    return abstract_train_state(components, components.optimizer)


def zero_filled(abstract: TrainState) -> TrainState:
    """``abstract``'s leaves as zero-filled numpy arrays."""
    return jax.tree.map(lambda leaf: np.zeros(leaf.shape, leaf.dtype), abstract)


def load_trained_variables(path: str | pathlib.Path, step: int | None = None) -> TrainedVariables:
    """The network variables of a run directory's newest readable (or ``step``) checkpoint, or of one step directory.

    Without ``step``, a checkpoint that cannot be read is reported by its path and the one before it is used (as
    when a run resumes); with ``step``, that checkpoint must be readable.
    """
    directory, step = resolve_checkpoint(path, step)
    checkpointer = Checkpointer(directory)
    steps = checkpointer.steps()
    if not steps:
        raise FileNotFoundError(f"no checkpoint in {directory}")
    if step is not None and step not in steps:
        raise FileNotFoundError(f"no checkpoint step {step} in {directory}; steps: {steps}")
    candidates = [step] if step is not None else list(reversed(steps))

    def templates(metadata: dict) -> dict:
        return {"train_state": zero_filled(recorded_train_state(metadata["config"]))}

    restored = checkpointer.restore_newest(candidates, templates)
    if restored is None:
        raise FileNotFoundError(f"no readable checkpoint in {directory} (tried steps {candidates}; see the log)")
    state = restored.items["train_state"]
    run_config = config_lib.from_json(restored.metadata["config"])
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    return TrainedVariables(run_config, variables, restored.step, restored.path)


def initialise_from(template: TrainState, path: str, optimizer: optax.GradientTransformation) -> TrainState:
    """``template`` with the network variables of checkpoint ``path`` and a fresh optimiser state.

    The checkpoint may come from another game (AlphaGateau's parameters do not depend on the board size); its
    parameter shapes must match the new network's.
    """
    trained = load_trained_variables(path)
    expected = jax.tree.map(lambda x: x.shape, (template.params, template.batch_stats))
    found = jax.tree.map(lambda x: x.shape, (trained.variables["params"], trained.variables["batch_stats"]))
    if expected != found:
        raise IncompatibleCheckpointError(f"init_from={path}: its network's parameter shapes differ from this config's")
    logger.info("initialised from %s (step %d); optimiser state is new", trained.path, trained.step)
    params = trained.variables["params"]
    return TrainState(step=template.step, params=params, batch_stats=trained.variables["batch_stats"],
                      opt_state=optimizer.init(params))


def check_compatible(saved: ml_collections.ConfigDict, requested: ml_collections.ConfigDict, workdir: pathlib.Path) -> None:
    differing = config_lib.differing_keys(saved, requested, SHAPE_DEFINING_PREFIXES)
    if differing:
        saved_flat, requested_flat = config_lib.flatten(saved), config_lib.flatten(requested)
        details = "; ".join(f"{k}: checkpoint {saved_flat.get(k)!r} vs config {requested_flat.get(k)!r}" for k in differing)
        raise IncompatibleCheckpointError(
            f"{workdir} holds a run with a different game or model ({details}); use another --workdir or the same values"
        )


__all__ = ["IncompatibleCheckpointError", "TrainedVariables", "check_compatible", "initialise_from", "load_trained_variables", "train_state_template"]
