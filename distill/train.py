"""Training a predictor: optax Adam with gradient clipping, EMA parameters, data-parallel over a mesh, resumable.

One step: a batch of ``batch_size`` examples (tokens [B, 78], target classes [B]) sharded over the mesh axis
``data``, the mean cross-entropy of the predictor's logits, an optax update of the replicated parameters, and the
exponential moving average ``ema ← decay · ema + (1 − decay) · params`` that evaluation and engines use.  The step
is one ``jax.jit`` with the train state replicated and the batch split over the devices (a mesh of one device
works the same).  ``dtype='bfloat16'`` in the model config runs the matrix multiplications in bfloat16.

Every ``checkpoint_every`` steps (and at the end) :class:`zerolab.checkpoint.Checkpointer` saves the parameters,
the EMA parameters and the optimiser state, with the data loader's position, the model config and the last
metrics as metadata; rerunning on the same ``workdir`` continues from the newest readable checkpoint with the same
next batch, and ``metrics.jsonl`` is reconciled so each logged step appears once.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import pathlib
import time
from collections.abc import Callable
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh

from distill.data.records import make_loader
from distill.model import Transformer, TransformerConfig, count_parameters, init_params
from distill.predictors import Predictor, cross_entropy
from zerolab.api import Checkpointer
from zerolab.api import batch_sharded, check_divisible, make_mesh, replicated, shard_host_batch
from zerolab.api import MetricsLog
from zerolab.api import progress_bar

logger = logging.getLogger(__name__)

CHECKPOINT_DIRECTORY = "checkpoints"


@dataclasses.dataclass(frozen=True)
class TrainingSettings:
    """What to train and how.

    Attributes:
      predictor: ``action_value``, ``state_value`` or ``behavioral_cloning``.
      num_bins: K, the value classes of AV and SV.
      model_size: a key of ``distill.model.MODEL_SIZES``.
      dtype: ``float32`` or ``bfloat16`` matrix multiplications.
      action_embedding: ``table`` (the paper's), ``factored`` or ``square-tied`` action tokens (AV only; see
        ``distill.model``).
      mark_action_squares: markers on the board tokens of the action's squares (AV only; not the paper's).
      batch_size: global batch (split over hosts and devices).
      num_steps: optimiser steps in total.
      learning_rate: Adam's step size (the paper: 1e-4); ``warmup_steps`` ramps it linearly from 0, and
        ``schedule='cosine'`` then decays it to 0 at ``num_steps`` (``constant`` keeps it).
      gradient_clip: global-norm clipping (the paper: 1.0).
      ema_decay: decay of the parameter average (the paper: 0.99).
      seed: parameter initialisation and data order.
      log_every, checkpoint_every, keep_checkpoints: logging and checkpoint cadence.
      loader_workers: grain worker processes (0 decodes records in the training process).
    """

    predictor: str = "action_value"
    num_bins: int = 128
    model_size: str = "9M"
    dtype: str = "float32"
    action_embedding: str = "table"
    mark_action_squares: bool = False
    batch_size: int = 1024
    num_steps: int = 1000
    learning_rate: float = 1e-4
    warmup_steps: int = 0
    schedule: str = "constant"
    gradient_clip: float = 1.0
    ema_decay: float = 0.99
    seed: int = 0
    log_every: int = 50
    checkpoint_every: int = 500
    keep_checkpoints: int = 2
    loader_workers: int = 0

    @property
    def predictor_spec(self) -> Predictor:
        return Predictor(self.predictor, self.num_bins)

    def model_config(self) -> TransformerConfig:
        return self.predictor_spec.model_config(self.model_size, self.dtype, self.action_embedding,
                                                self.mark_action_squares)


@flax.struct.dataclass
class TrainState:
    """Everything a step updates: ``step`` [], ``params``, ``ema_params`` (same tree) and ``opt_state``."""

    step: jax.Array
    params: Any
    ema_params: Any
    opt_state: Any


def make_optimizer(settings: TrainingSettings) -> optax.GradientTransformation:
    if settings.schedule == "constant":
        schedule = optax.linear_schedule(0.0, settings.learning_rate, max(settings.warmup_steps, 1))
    elif settings.schedule == "cosine":
        schedule = optax.warmup_cosine_decay_schedule(0.0, settings.learning_rate, max(settings.warmup_steps, 1),
                                                      max(settings.num_steps, settings.warmup_steps + 1))
    else:
        raise ValueError(f"schedule must be 'constant' or 'cosine', got {settings.schedule!r}")
    return optax.chain(optax.clip_by_global_norm(settings.gradient_clip), optax.adam(schedule))


def init_train_state(model_config: TransformerConfig, optimizer: optax.GradientTransformation,
                     key: jax.Array) -> TrainState:
    params = init_params(model_config, key)
    return TrainState(step=jnp.zeros((), jnp.int32), params=params, ema_params=jax.tree.map(jnp.copy, params),
                      opt_state=optimizer.init(params))


def train_step(state: TrainState, batch: dict[str, jax.Array], *, model: Transformer,
               optimizer: optax.GradientTransformation, ema_decay: float) -> tuple[TrainState, dict[str, jax.Array]]:
    """One update on ``batch`` (``tokens`` [B, T], ``targets`` [B]); returns the new state and scalar metrics."""

    def loss_fn(params):
        logits = model.apply({"params": params}, batch["tokens"])
        return jnp.mean(cross_entropy(logits, batch["targets"]))

    loss, gradients = jax.value_and_grad(loss_fn)(state.params)
    updates, opt_state = optimizer.update(gradients, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    ema_params = optax.incremental_update(params, state.ema_params, step_size=1.0 - ema_decay)
    metrics = {"loss": loss, "gradient_norm": optax.global_norm(gradients)}
    return TrainState(state.step + 1, params, ema_params, opt_state), metrics


@functools.lru_cache(maxsize=16)
def make_train_step(settings: TrainingSettings, mesh: Mesh) -> Callable[[TrainState, dict], tuple[TrainState, dict]]:
    """:func:`train_step` jitted with the state replicated and the batch sharded over ``mesh``; donates the state.

    Cached per settings, so runs with the same model and optimiser (a resumed run, tests) compile once; fields that
    do not enter the step (logging, checkpoints, seed) are normalised away from the cache key.
    """
    return _compile_train_step(_step_defining(settings), mesh)


def _step_defining(settings: TrainingSettings) -> TrainingSettings:
    return dataclasses.replace(settings, seed=0, log_every=1, checkpoint_every=1, keep_checkpoints=1, loader_workers=0,
                               num_steps=settings.num_steps if settings.schedule == "cosine" else 1)


@functools.lru_cache(maxsize=16)
def _compile_train_step(settings: TrainingSettings, mesh: Mesh):
    step = functools.partial(train_step, model=Transformer(settings.model_config()),
                             optimizer=make_optimizer(settings), ema_decay=settings.ema_decay)
    return jax.jit(step, in_shardings=(replicated(mesh), batch_sharded(mesh)),
                   out_shardings=(replicated(mesh), replicated(mesh)), donate_argnums=0)


def train(settings: TrainingSettings, dataset_directory: str | pathlib.Path, workdir: str | pathlib.Path,
          mesh: Mesh | None = None, show_progress: bool = True) -> dict[str, Any]:
    """Train (or continue training) in ``workdir``; returns the last logged metrics plus the parameter count."""
    workdir = pathlib.Path(workdir)
    mesh = mesh or make_mesh()
    check_divisible("batch_size", settings.batch_size, mesh)
    if settings.batch_size % jax.process_count():
        raise ValueError(f"batch_size={settings.batch_size} must be divisible by the {jax.process_count()} hosts")
    model_config = settings.model_config()
    optimizer = make_optimizer(settings)
    state = jax.device_put(init_train_state(model_config, optimizer, jax.random.key(settings.seed)),
                           replicated(mesh))
    num_parameters = count_parameters(state.params)
    logger.info("%s predictor, model %s: %s parameters", settings.predictor, settings.model_size,
                f"{num_parameters:,}")
    loader = make_loader(dataset_directory, settings.predictor_spec, settings.batch_size // jax.process_count(),
                         seed=settings.seed, worker_count=settings.loader_workers)
    iterator = iter(loader)
    checkpointer = Checkpointer(workdir / CHECKPOINT_DIRECTORY, keep=settings.keep_checkpoints)
    metrics_log = MetricsLog(workdir)
    last_record: dict[str, Any] | None = None
    restored = checkpointer.restore_latest(
        {"params": state.params, "ema_params": state.ema_params, "opt_state": state.opt_state})
    if restored is not None:
        check_same_model(restored.metadata, model_config, settings, restored.path)
        state = TrainState(jnp.asarray(restored.step, jnp.int32), restored.items["params"],
                           restored.items["ema_params"], restored.items["opt_state"])
        state = jax.device_put(state, replicated(mesh))
        iterator.set_state(restored.metadata["data_iterator"].encode())
        last_record = restored.metadata.get("metrics")
        metrics_log.reconcile(restored.step, last_record)
        logger.info("resumed from %s (step %d)", restored.path, restored.step)
    else:
        metrics_log.reconcile(0, None)
    step_fn = make_train_step(settings, mesh)
    step = int(state.step)

    def save():
        metadata = {"data_iterator": iterator.get_state().decode(), "metrics": last_record,
                    **checkpoint_description(model_config, settings)}
        checkpointer.save(step, {"params": state.params, "ema_params": state.ema_params,
                                 "opt_state": state.opt_state}, metadata)

    window_losses, window_start = [], time.perf_counter()
    with progress_bar(f"training {settings.predictor}", total=settings.num_steps, unit="steps",
                      enabled=show_progress) as bar:
        bar.advance(step)
        while step < settings.num_steps:
            batch = shard_host_batch(next(iterator), mesh)
            state, metrics = step_fn(state, batch)
            step += 1
            window_losses.append(metrics["loss"])
            if step % settings.log_every == 0 or step == settings.num_steps:
                window_mean_loss = float(np.mean(jax.device_get(window_losses)))  # waits for the window's steps
                elapsed = time.perf_counter() - window_start
                last_record = {"iteration": step, "loss": window_mean_loss,
                               "gradient_norm": float(metrics["gradient_norm"]),
                               "examples_per_second": len(window_losses) * settings.batch_size / elapsed}
                metrics_log.append(last_record)
                bar.set_rate(f"loss {last_record['loss']:.3f}, {last_record['examples_per_second']:,.0f} ex/s")
                window_losses, window_start = [], time.perf_counter()
            if step % settings.checkpoint_every == 0 or step == settings.num_steps:
                save()
            bar.advance(1)
    if restored is not None and restored.step == step and step == settings.num_steps:
        logger.info("training already finished at step %d", step)
    metrics_log.close()
    checkpointer.close()
    return {**(last_record or {}), "num_parameters": num_parameters, "step": step}


def checkpoint_description(model_config: TransformerConfig, settings: TrainingSettings) -> dict[str, Any]:
    """What a checkpoint says about itself, so an engine can rebuild the network from the checkpoint alone."""
    return {"predictor": settings.predictor, "num_bins": settings.num_bins, "model": model_config.to_dict(),
            "training": dataclasses.asdict(settings)}


def check_same_model(metadata: dict[str, Any], model_config: TransformerConfig, settings: TrainingSettings,
                     path: pathlib.Path) -> None:
    saved = (metadata.get("predictor"), metadata.get("num_bins"), metadata.get("model"))
    wanted = (settings.predictor, settings.num_bins, model_config.to_dict())
    if saved != wanted:
        raise ValueError(f"checkpoint {path} holds predictor/bins/model {json.dumps(saved)}, but this run asks for "
                         f"{json.dumps(wanted)}; use another work directory")


# --- reading a trained predictor back --------------------------------------------------------------------------------


@dataclasses.dataclass
class TrainedPredictor:
    """A predictor's EMA parameters with what is needed to run them."""

    predictor: Predictor
    model_config: TransformerConfig
    params: Any
    step: int
    path: pathlib.Path


def resolve_checkpoint(path: str | pathlib.Path) -> tuple[pathlib.Path, int | None]:
    """``(checkpoints directory, step)``: a run directory means its newest step, ``.../checkpoints/<step>`` that one.

    The same convention as ``zerolab.train.resolve_checkpoint``, which is not imported here because importing
    ``zerolab.train`` loads pgx (seconds) and an engine should start fast.
    """
    path = pathlib.Path(path)
    if path.name.isdigit() and path.parent.name == CHECKPOINT_DIRECTORY:
        return path.parent, int(path.name)
    if (path / CHECKPOINT_DIRECTORY).is_dir():
        return path / CHECKPOINT_DIRECTORY, None
    raise FileNotFoundError(f"{path} is neither a run directory (with {CHECKPOINT_DIRECTORY}/) nor a checkpoint "
                            f"directory ({CHECKPOINT_DIRECTORY}/<step>)")


def load_trained_predictor(path: str | pathlib.Path) -> TrainedPredictor:
    """The EMA parameters of a run directory's newest checkpoint, or of one checkpoint directory."""
    directory, step = resolve_checkpoint(path)
    checkpointer = Checkpointer(directory)
    steps = checkpointer.steps()
    if not steps or (step is not None and step not in steps):
        raise FileNotFoundError(f"no checkpoint {'' if step is None else step} in {directory} (steps: {steps})")
    for candidate in ([step] if step is not None else list(reversed(steps))):
        try:
            metadata = checkpointer.read_metadata(candidate)
            predictor = Predictor(metadata["predictor"], metadata["num_bins"])
            model_config = TransformerConfig(**metadata["model"])
            template = jax.eval_shape(lambda key: init_params(model_config, key), jax.random.key(0))
            template = jax.tree.map(lambda leaf: np.zeros(leaf.shape, leaf.dtype), template)
            restored = checkpointer.restore(candidate, {"ema_params": template})
        except Exception as error:  # noqa: BLE001 - an unreadable checkpoint: report it, try the previous one
            if step is not None:
                raise
            logger.warning("checkpoint %s cannot be read (%s: %s); trying the previous one",
                           directory / str(candidate), type(error).__name__, error)
            continue
        checkpointer.close()
        return TrainedPredictor(predictor, model_config, restored.items["ema_params"], candidate, restored.path)
    raise FileNotFoundError(f"no readable checkpoint in {directory}")


__all__ = ["TrainState", "TrainedPredictor", "TrainingSettings", "init_train_state", "load_trained_predictor",
           "make_optimizer", "make_train_step", "resolve_checkpoint", "train", "train_step"]
