"""Training a predictor: optax Adam with gradient clipping, EMA parameters, data-parallel over a mesh, resumable.

One step: a batch of ``batch_size`` examples (tokens [B, 78], target classes [B]) sharded over the mesh axis
``data``, the mean cross-entropy of the predictor's logits, an optax update of the replicated parameters, and the
exponential moving average ``ema ← decay · ema + (1 − decay) · params`` that evaluation and engines use.  The step
is jitted by the core's ``zerolab.devices.jit_step``: the train state replicated and donated, the batch split over
the devices (a mesh of one device works the same).  ``dtype='bfloat16'`` in the model config runs the matrix
multiplications in bfloat16.

Every ``checkpoint_every`` steps (and at the end) :class:`zerolab.training.checkpoint.Checkpointer` saves the parameters,
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
from distill.model import MODEL_SIZES, Transformer, TransformerConfig, count_parameters, init_params, jitted_apply
from distill.predictors import Predictor, cross_entropy
from zerolab import (
    Checkpointer, PlannedProgram, check_at_least, check_choice, check_divisible, compile_cost, jit_step, make_mesh,
    progress_bar, replicated, shard_host_batch,
)
from zerolab.training import MetricsLog, resolve_checkpoint

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
      normalization: ``post`` (the paper's) or ``pre`` LayerNorms (``distill.model``).
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
    normalization: str = "post"
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

    def __post_init__(self):
        """Every field checked when the settings are made (before a run writes anything): sizes and rates in range,
        names among the known ones (``train.``-prefixed keys in the messages, as the configs name them)."""
        check_choice("train.model_size", self.model_size, MODEL_SIZES)
        check_choice("train.schedule", self.schedule, ("constant", "cosine"))
        for name in ("batch_size", "num_steps", "log_every", "checkpoint_every", "keep_checkpoints"):
            check_at_least(f"train.{name}", getattr(self, name), 1)
        for name in ("warmup_steps", "loader_workers"):
            check_at_least(f"train.{name}", getattr(self, name), 0)
        for name in ("learning_rate", "gradient_clip"):
            if not getattr(self, name) > 0:
                raise ValueError(f"train.{name} must be positive, got {getattr(self, name)!r}")
        if not 0 <= self.ema_decay < 1:
            raise ValueError(f"train.ema_decay must be in [0, 1), got {self.ema_decay!r}")
        self.model_config()  # the predictor, bins, dtype, embedding and normalisation (their own messages)

    @property
    def predictor_spec(self) -> Predictor:
        return Predictor(self.predictor, self.num_bins)

    def model_config(self) -> TransformerConfig:
        return self.predictor_spec.model_config(self.model_size, self.dtype, self.action_embedding,
                                                self.mark_action_squares, self.normalization)


@flax.struct.dataclass
class TrainState:
    """Everything a step updates: ``step`` [], ``params``, ``ema_params`` (same tree) and ``opt_state``.

    Not Flax's ``train_state.TrainState``: this one carries the EMA parameters, and keeps the model and optimiser
    outside (bound into the jitted step) so the state is arrays only, as checkpoints save it.
    """

    step: jax.Array
    params: Any
    ema_params: Any
    opt_state: Any


def learning_rate_schedule(settings: TrainingSettings) -> optax.Schedule:
    """The step size of update ``count`` (0 for the first): a linear ramp from 0 over ``warmup_steps`` updates, then
    ``learning_rate`` (``constant``) or a cosine decay to 0 at ``num_steps`` (``cosine``).

    Without warm-up the first update already uses ``learning_rate`` (a ramp "over 1 step" would make it 0).
    """
    if settings.schedule == "constant":
        if settings.warmup_steps == 0:
            return optax.constant_schedule(settings.learning_rate)
        return optax.linear_schedule(0.0, settings.learning_rate, settings.warmup_steps)
    if settings.warmup_steps == 0:
        return optax.cosine_decay_schedule(settings.learning_rate, max(settings.num_steps, 1))
    return optax.warmup_cosine_decay_schedule(0.0, settings.learning_rate, settings.warmup_steps,
                                              max(settings.num_steps, settings.warmup_steps + 1))


def make_optimizer(settings: TrainingSettings) -> optax.GradientTransformation:
    """Global-norm clipping, then Adam with :func:`learning_rate_schedule`."""
    return optax.chain(optax.clip_by_global_norm(settings.gradient_clip), optax.adam(learning_rate_schedule(settings)))


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
    metrics = {"loss": loss, "grad_norm": optax.global_norm(gradients)}
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
    return jit_step(step, mesh)


def plan_training(settings: TrainingSettings, label: str = "training step",
                  evaluation_boards: int = 0) -> list[PlannedProgram]:
    """The compiled training step (:func:`make_train_step`, one device) at ``settings.batch_size`` with abstract
    inputs, called ``num_steps`` times, and the forward pass that evaluation scores boards with (its batch: one row
    per legal move of 64 boards, about 2,000; one call per 64 of ``evaluation_boards``), for
    ``python -m experiments plan``."""
    model_config = settings.model_config()
    state = jax.eval_shape(lambda key: init_train_state(model_config, make_optimizer(settings), key), jax.random.key(0))
    batch = {"tokens": jax.ShapeDtypeStruct((settings.batch_size, model_config.sequence_length), jnp.int32),
             "targets": jax.ShapeDtypeStruct((settings.batch_size,), jnp.int32)}
    step = compile_cost(label, make_train_step(settings, make_mesh(jax.devices()[:1])).lower(state, batch))
    rows = 64 * 32
    tokens = jax.ShapeDtypeStruct((rows, model_config.sequence_length), jnp.int32)
    forward = compile_cost(f"{label.replace('training step', 'scoring')}",  # the engine's own scoring function
                           jitted_apply(model_config).lower(state.params, tokens))
    parameters = sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(state.params))
    return [PlannedProgram(step, settings.num_steps, f"one update of {settings.batch_size} examples, "
                           f"{settings.model_size} ({parameters:,} parameters, {settings.dtype})"),
            PlannedProgram(forward, -(-evaluation_boards // 64), f"scores {rows} (board, move) rows: 64 test boards")]


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
    check_newest_model(checkpointer, model_config, settings)  # before restoring: a mismatch is no unreadable step
    restored = checkpointer.restore_newest(
        None, {"params": state.params, "ema_params": state.ema_params, "opt_state": state.opt_state})
    if restored is None and checkpointer.steps():
        raise RuntimeError(f"no checkpoint in {checkpointer.directory} can be read (steps {checkpointer.steps()}); "
                           "move the directory away to start again")
    if restored is not None:
        check_same_model(restored.metadata, model_config, settings, restored.path)
        saved_workers = restored.metadata.get("training", {}).get("loader_workers", settings.loader_workers)
        if saved_workers != settings.loader_workers:
            raise ValueError(f"checkpoint {restored.path} was written with loader_workers={saved_workers}, but this "
                             f"run has loader_workers={settings.loader_workers}; the data loader's position can "
                             "only be restored with the same number of workers")
        checkpointer.discard_after(restored.step)  # unreadable newer steps: this run writes them again
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
                               "grad_norm": float(metrics["grad_norm"]),
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


def check_newest_model(checkpointer: Checkpointer, model_config: TransformerConfig, settings: TrainingSettings) -> None:
    """Raises if the newest checkpoint whose metadata can be read holds another predictor, bin count or model.

    Checked before restoring, because restoring into another model's shapes fails like an unreadable checkpoint
    would, and the run would fall back past every step and start again over them.
    """
    for step in reversed(checkpointer.steps()):
        try:
            metadata = checkpointer.read_metadata(step)
        except Exception:  # noqa: BLE001 - unreadable metadata: restore_newest reports it and passes the step
            continue
        check_same_model(metadata, model_config, settings, checkpointer.directory / str(step))
        return


def check_same_model(metadata: dict[str, Any], model_config: TransformerConfig, settings: TrainingSettings,
                     path: pathlib.Path) -> None:
    saved_model = TransformerConfig.from_saved(metadata["model"]).to_dict() if metadata.get("model") else None
    saved = (metadata.get("predictor"), metadata.get("num_bins"), saved_model)
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


def load_trained_predictor(path: str | pathlib.Path) -> TrainedPredictor:
    """The EMA parameters of a run directory's newest readable checkpoint, or of one checkpoint directory.

    The directory convention is :func:`zerolab.training.checkpoint_paths.resolve_checkpoint`'s, and the fallback past an unreadable
    checkpoint is :meth:`zerolab.training.checkpoint.Checkpointer.restore_newest`'s; a named step must be readable.
    """
    directory, step = resolve_checkpoint(path)
    checkpointer = Checkpointer(directory)
    try:
        steps = checkpointer.steps()
        if not steps or (step is not None and step not in steps):
            raise FileNotFoundError(f"no checkpoint {'' if step is None else step} in {directory} (steps: {steps})")
        if step is not None:
            restored = checkpointer.restore(step, _ema_template(checkpointer.read_metadata(step)))
        else:
            restored = checkpointer.restore_newest(None, _ema_template)
            if restored is None:
                raise FileNotFoundError(f"no readable checkpoint in {directory} (steps: {steps})")
    finally:
        checkpointer.close()
    predictor = Predictor(restored.metadata["predictor"], restored.metadata["num_bins"])
    model_config = TransformerConfig.from_saved(restored.metadata["model"])
    return TrainedPredictor(predictor, model_config, restored.items["ema_params"], restored.step, restored.path)


def _ema_template(metadata: dict[str, Any]) -> dict[str, Any]:
    """What to restore from a checkpoint with ``metadata``: its EMA parameters, shaped by its model config."""
    model_config = TransformerConfig.from_saved(metadata["model"])
    template = jax.eval_shape(lambda key: init_params(model_config, key), jax.random.key(0))
    return {"ema_params": jax.tree.map(lambda leaf: np.zeros(leaf.shape, leaf.dtype), template)}


__all__ = ["TrainState", "TrainedPredictor", "TrainingSettings", "init_train_state", "load_trained_predictor",
           "learning_rate_schedule", "make_optimizer", "make_train_step", "train", "train_step"]
