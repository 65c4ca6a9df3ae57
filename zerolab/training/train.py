"""Training: the AlphaZero loop — self-play, frame window, optax updates, checkpoints, metrics — that resumes.

``run(config, workdir)`` runs ``config.iterations`` iterations.  Each one plays a self-play batch, updates the
frame window, trains ``train.epochs_per_iteration`` epochs over it, saves a checkpoint and appends one line to
``metrics.jsonl``.  What the loop plays and learns is chosen from the config: the network (``model.name``), the search
rules (``search.rules``) and the method (``method``: loss, per-ply move rule, lane rule, game rule;
:mod:`zerolab.training.method`).  Evaluation runs after training, from the checkpoints
(:mod:`zerolab.evaluation`).  Rerunning on the same ``workdir`` resumes from the newest complete checkpoint: train state,
replay window, random state and counters are restored, and ``metrics.jsonl`` is reconciled so that each completed
iteration appears exactly once, even after ``kill -9`` during self-play, training or a save.  A rerun whose config
differs from the one the directory records is refused before anything changes, unless the changes are safe on
resume or allowed (:mod:`zerolab.training.run_directory`).

Checkpoint step ``k`` holds the state after ``k`` iterations; step 0 is the initial network, kept for evaluation
along with every ``checkpoint.keep_period``-th step and the last ``checkpoint.keep`` ones.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import json
import logging
import math
import pathlib
import signal
import time
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from zerolab.devices import (
    DATA_AXIS,
    AheadOfTimeStep,
    is_main_process,
    jit_step,
    local_batch_size,
    local_numpy,
    make_mesh,
    process_numpy_rng,
    replicate,
    shard_host_batch,
    sum_over_processes,
    use_compilation_cache,
)
from zerolab.games import Game
from zerolab.training.method import ALPHAZERO, LossFn, alphazero_loss
from zerolab.training.interrupt import StopOnSignal, TrainingInterrupted
from zerolab.training.metrics import MetricsLog
from zerolab.networks.network import NetworkInputs, apply_network, count_parameters
from zerolab.games.pgn import GameRecord, replay_moves, write_games
from zerolab.progress import progress_bar
from zerolab.training.pending import PendingFrames, settle
from zerolab.training.replay import FrameWindow, update_window
from zerolab.training.file_system import check_run_directory, writing
from zerolab.training.run_directory import ConfigRecord, check_run_config
from zerolab.training.run_owner import RunDirectoryOwner
from zerolab.search.config import SearchRules
from zerolab.training.run_checkpoints import RunCheckpoints, RunState
from zerolab.training.runs import Components, check_training_config
from zerolab.training.train_state import TrainConfig, TrainState, init_train_state
from zerolab.training.trained_variables import check_compatible, initialise_from
from zerolab.selfplay.frames import Frames
from zerolab.selfplay.programs import make_selfplay_fn
from zerolab.selfplay.records import finished_games, summarize
from zerolab.selfplay.types import PlyRecord

logger = logging.getLogger(__name__)


#: Training updates dispatched to the devices ahead of the one whose metrics the host waits for.
TRAINING_LOOKAHEAD = 2



def loss_fn(
    params: Any, batch_stats: Any, network: nn.Module, frames: Frames, l2_weight: float,
    method_loss: LossFn = alphazero_loss,
) -> tuple[jax.Array, tuple[dict, Any]]:
    """The method's loss (default: policy cross-entropy + value MSE over known outcomes) + L2."""
    inputs = NetworkInputs(observation=frames.observation, legal_action_mask=frames.legal_action_mask)
    output, new_batch_stats = apply_network(network, {"params": params, "batch_stats": batch_stats}, inputs, train=True)
    data_loss, method_metrics = method_loss(output, frames)
    l2_loss = sum(jnp.sum(w**2) for w in jax.tree_util.tree_leaves(params))
    loss = data_loss + l2_weight * l2_loss
    metrics = {"loss": loss, **method_metrics}
    return loss, (metrics, new_batch_stats)


def make_train_step(network: nn.Module, optimizer: optax.GradientTransformation, mesh: Mesh, l2_weight: float,
                    method_loss: LossFn = alphazero_loss):
    """A jitted ``(state, frames) -> (state, metrics)``: frames sharded over the mesh, state replicated.

    The batch is one global array, so BatchNorm's batch statistics and the gradient are those of the whole batch:
    the result does not depend on the number of devices.
    """

    def train_step(state: TrainState, frames: Frames) -> tuple[TrainState, dict]:
        grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
        (_, (metrics, batch_stats)), grads = grad_fn(state.params, state.batch_stats, network, frames, l2_weight,
                                                     method_loss)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = {**metrics, "grad_norm": optax.global_norm(grads)}
        return TrainState(step=state.step + 1, params=params, batch_stats=batch_stats, opt_state=opt_state), metrics

    return jit_step(train_step, mesh)


def train_on_window(
    train_step: Callable, train_state: TrainState, window: FrameWindow, train: TrainConfig, mesh: Mesh,
    rng: np.random.Generator,
) -> tuple[TrainState, dict, int]:
    """``train.epochs_per_iteration`` epochs of minibatches drawn without replacement from the window.

    Returns the new state, the metrics averaged over the updates and the number of frames trained on (all processes'
    together).  On several processes each trains from its own window: it supplies ``train.batch_size /
    process_count`` frames of every global minibatch of ``train.batch_size``, and the number of updates counts the
    frames of all windows, so every process makes the same number of (collective) updates.
    """
    batch_size = train.batch_size
    local_size = local_batch_size("train.batch_size", batch_size, mesh)
    num_updates = train.updates(sum_over_processes(len(window)))
    order = np.concatenate([rng.permutation(len(window)) for _ in range(math.ceil(num_updates * local_size / len(window)) + 1)])
    totals: dict[str, float] = {}
    pending: collections.deque = collections.deque()  # metrics of dispatched updates, read back in order

    def read_back(metrics: dict) -> None:
        for name, value in jax.device_get(metrics).items():
            totals[name] = totals.get(name, 0.0) + float(value)

    started, log_every = time.perf_counter(), max(1, num_updates // 10)
    for update in range(num_updates):
        indices = np.sort(order[update * local_size:(update + 1) * local_size])
        batch = shard_host_batch(window.as_frames(indices), mesh)
        train_state, metrics = train_step(train_state, batch)
        # The host decodes the next batches while the device trains: at most TRAINING_LOOKAHEAD updates in flight
        # (waiting for the oldest one's metrics), so batches do not pile up in device memory.
        pending.append(metrics)
        if len(pending) > TRAINING_LOOKAHEAD:
            read_back(pending.popleft())
        if (update + 1) % log_every == 0 or update + 1 == num_updates:
            logger.info("training: %d of %d updates of %d frames dispatched in %.1f s", update + 1, num_updates,
                        batch_size, time.perf_counter() - started)
    while pending:
        read_back(pending.popleft())
    return train_state, {name: total / num_updates for name, total in totals.items()}, num_updates * batch_size


def example_batch(window: FrameWindow, train: TrainConfig, mesh: Mesh) -> Frames:
    """A minibatch of the window's first frames, sharded as training's are: the arguments the train step compiles
    for (any frames of the window would do)."""
    local_size = local_batch_size("train.batch_size", train.batch_size, mesh)
    return shard_host_batch(window.as_frames(np.arange(local_size) % len(window)), mesh)


def run_iteration(iteration: int, run_state: RunState, train_state: TrainState, components: Components, mesh: Mesh,
                  selfplay_fn: Callable, train_step: Callable, base_key: jax.Array, bar
                  ) -> tuple[dict, RunState, TrainState, PlyRecord, dict[int, np.ndarray]]:
    """Self-play, window update and training of one iteration (sizes from ``components``: self-play, replay,
    train): its metrics record, the new states, this process's ply records and the moves its games carried into the
    call had played before it (:meth:`PendingFrames.earlier_actions`).  The rates leave out compilation
    (``selfplay_compile_s`` and ``train_compile_s``, nonzero on the iteration that compiled the program).

    Self-play continues the run's lanes (a run's first call starts them with its key): games still running when the
    call ends go on in the next, and their frames wait in ``run_state.pending`` until their game ends
    (:func:`zerolab.training.pending.settle`); only frames with a value target enter the window."""
    iteration_started = time.perf_counter()
    variables = {"params": train_state.params, "batch_stats": train_state.batch_stats}
    selfplay_key = jax.random.fold_in(base_key, iteration)
    lanes, pending = run_state.lanes, run_state.pending
    if lanes is None:  # the run's first games
        lanes = selfplay_fn.init_lanes(variables, selfplay_key)
        pending = PendingFrames.fresh(components.selfplay.num_games // jax.process_count(), iteration)
    compile_seconds = selfplay_fn.compile_lanes(variables, selfplay_key, lanes)
    started = time.perf_counter()
    frames, records, lanes = selfplay_fn.play_lanes(variables, selfplay_key, lanes)
    plies = frames.value_target.shape[0]
    # Stored compact where they were played (in the scan): only the window's arrays come to the host, and the
    # frames leave device memory before training.
    played_frames = FrameWindow.from_device_frames(frames, run_state.window.codec)
    del frames
    records = local_numpy(records, axis=1)
    earlier_actions = pending.earlier_actions()  # the moves of the games carried into this call, for their PGN
    new_frames, pending, entry = settle(pending, played_frames, records.game_over, iteration,
                                        components.selfplay.max_game_plies, records.action)
    selfplay_seconds = time.perf_counter() - started
    num_frames = sum_over_processes(len(played_frames))  # all processes' frames (a collective)
    entry = {name: sum_over_processes(value) for name, value in entry.items()}
    logger.info("iteration %d: self-play played %d plies of %d games, %d frames, in %.1f s: %d frames entered the "
                "window (%d of games begun in earlier calls), %d wait for their game's end", iteration, plies,
                components.selfplay.num_games, num_frames, selfplay_seconds, entry["frames_entered"],
                entry["frames_entered_from_earlier_calls"], entry["frames_pending"])
    if entry["frames_entered_without_value"]:
        raise AssertionError(f"{entry['frames_entered_without_value']} frames would enter the window without a "
                             f"value target")
    window_started = time.perf_counter()
    window = run_state.window
    if new_frames.arrays:
        window = update_window(window, new_frames, components.replay.window_size, run_state.numpy_rng,
                               components.replay.mode)
    logger.info("iteration %d: replay window of %d frames (%.0f bytes a frame) updated in %.1f s", iteration,
                len(window), window.bytes_per_frame(), time.perf_counter() - window_started)
    train_compile_seconds, train_metrics, samples, train_seconds = 0.0, {}, 0, 0.0
    if sum_over_processes(len(window)):
        bar.set_rate(f"iteration {iteration}: training on {len(window)} frames")
        if isinstance(train_step, AheadOfTimeStep) and train_step.executable is None:  # once a process
            train_compile_seconds = train_step.compile(train_state, example_batch(window, components.train, mesh))
        train_started = time.perf_counter()
        train_state, train_metrics, samples = train_on_window(train_step, train_state, window, components.train,
                                                              mesh, run_state.numpy_rng)
        train_seconds = time.perf_counter() - train_started
    else:
        logger.info("iteration %d: no frame has a value target yet (no game has ended): no training", iteration)
    record = {
        "iteration": iteration,
        "frames": run_state.frames_seen + num_frames,
        **train_metrics,
        **summarize(records),
        **entry,
        "window_size": len(window),
        "selfplay_moves_per_s": num_frames / selfplay_seconds,
        "train_samples_per_s": samples / train_seconds if train_seconds else 0.0,
        "selfplay_s": selfplay_seconds,
        "selfplay_compile_s": compile_seconds,
        "train_compile_s": train_compile_seconds,
        "train_s": train_seconds,
        "iteration_s": time.perf_counter() - iteration_started,
    }
    record.update(device_memory_record())
    run_state = RunState(iteration, record["frames"], train_state, window, run_state.numpy_rng, lanes=lanes,
                         pending=pending)
    return record, run_state, train_state, records, earlier_actions


def place_lanes(lanes: Any, mesh: Mesh) -> Any:
    """Host lanes (a checkpoint's) on ``mesh``'s devices, sharded along their leading axis as self-play's carried
    calls take them (one process; see :class:`~zerolab.training.run_checkpoints.RunCheckpoints`)."""
    sharding = NamedSharding(mesh, PartitionSpec(DATA_AXIS))
    return jax.tree.map(lambda leaf: jax.device_put(np.asarray(leaf), sharding), lanes)


def device_memory_record() -> dict:
    """``{'device_peak_gib': ...}``: the first local device's peak memory so far, where the backend reports it
    (GPUs and TPUs; the CPU backend does not, and the record then has no such entry)."""
    stats = jax.local_devices()[0].memory_stats() or {}
    return {"device_peak_gib": stats["peak_bytes_in_use"] / 2**30} if "peak_bytes_in_use" in stats else {}


@dataclasses.dataclass(frozen=True)
class RunPrograms:
    """The programs of one training run, declared once: :func:`run` calls them and
    :func:`zerolab.training.plan.plan_training_run` compiles the same functions with abstract arguments.

    Attributes:
      selfplay: ``(variables, key) -> (frames, records)``: one iteration's self-play over the mesh, once an
        iteration (:func:`make_run_selfplay_fn`).
      train_step: ``(train_state, batch) -> (train_state, metrics)``: one update, :meth:`TrainConfig.updates` times
        an iteration (:func:`standard_train_step`).
    """

    selfplay: Callable
    train_step: Callable


def run_programs(components: Components, mesh: Mesh) -> RunPrograms:
    """The run's programs (:class:`RunPrograms`) for its components on ``mesh``."""
    return RunPrograms(
        selfplay=make_run_selfplay_fn(components, mesh),
        train_step=standard_train_step(components.network, components.optimizer, mesh, components.train.l2_weight,
                                       components.method.loss_fn),
    )


def make_run_selfplay_fn(components: Components, mesh: Mesh) -> Callable:
    """The run's jitted, sharded self-play ``(variables, key) -> (frames, records)``, from its method's parts.

    With AlphaZero's parts the function is shared by every run of the process with the same game, network, search,
    rules and sizes (:func:`standard_selfplay_fn`; a config's rules are built once, :meth:`SearchConfig.make_rules`),
    so an in-process resume does not trace and compile it again.
    """
    if components.method is ALPHAZERO:
        return standard_selfplay_fn(components.game, components.network, components.search, components.selfplay, mesh,
                                    components.rules)
    play_fn, frozen_variables = components.method.selfplay_parts(components)
    return make_selfplay_fn(components.game, components.network, components.search, components.selfplay, mesh,
                            play_fn=play_fn, frozen_variables=frozen_variables)


@functools.lru_cache(maxsize=8)
def standard_selfplay_fn(game: Game, network: nn.Module, search: Any, selfplay: Any, mesh: Mesh,
                         rules: SearchRules | None = None) -> Callable:
    """:func:`make_selfplay_fn` with the default parts, one per (game, network, search, sizes, mesh, rules)."""
    return make_selfplay_fn(game, network, search, selfplay, mesh, rules=rules)


@functools.lru_cache(maxsize=8)
def standard_train_step(network: nn.Module, optimizer: optax.GradientTransformation, mesh: Mesh, l2_weight: float,
                        method_loss: LossFn) -> Callable:
    """:func:`make_train_step`, one per set of arguments (:func:`make_optimizer` gives one optimiser a setting)."""
    return make_train_step(network, optimizer, mesh, l2_weight, method_loss)


def write_selfplay_games(game: Game, records: PlyRecord, path: pathlib.Path, max_games: int, event: str,
                         earlier_actions: dict[int, np.ndarray] | None = None) -> None:
    """A few of the self-play games that ended in the iteration as PGN, for a person to look at (games from the start
    position: the records keep actions, which are replayed from ``game.init``).  A game begun in an earlier call is
    written whole: ``earlier_actions`` are its moves there (:meth:`PendingFrames.earlier_actions`)."""
    if max_games <= 0 or game.move_record_format is None:
        return
    games = [GameRecord("self-play", "self-play", replay_moves(game, actions), score, len(actions), False)
             for _, actions, score in finished_games(records, max_games, earlier_actions)]
    if games:
        write_games(game, games, path, event)


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path,
        allow_config_change: bool | None = None) -> RunState:
    """Trains for ``config.iterations`` iterations in ``workdir``, resuming what is there.

    Before anything in ``workdir`` changes, the directory is checked (:func:`~zerolab.training.file_system.
    check_run_directory`: not a file, writable, room left) and ``config`` against the config it records
    (:func:`~zerolab.training.run_directory.check_run_config`: a rerun with other settings is refused unless they
    are safe on resume or ``allow_config_change``; None: as :func:`~zerolab.training.run_directory.
    config_changes_allowed` says).  The run owns ``workdir`` while it trains
    (:class:`~zerolab.training.run_owner.RunDirectoryOwner`): a directory another process is writing is refused
    with :class:`~zerolab.training.run_owner.RunDirectoryBusyError` before anything is written.
    """
    workdir = check_run_directory(pathlib.Path(workdir), "run directory")
    # One owner per run directory: process 0 holds it (the other processes of a run write only their own files).
    owner = RunDirectoryOwner(workdir, "run directory") if is_main_process() else None
    with owner.claim(create=False) if owner is not None else contextlib.nullcontext():
        config_record = check_run_config(workdir, config, allow_config_change)
        components = check_training_config(config)
        workdir.mkdir(parents=True, exist_ok=True)
        if owner is not None:
            owner.take()
        return train_in(workdir, config, config_record, components)


def train_in(workdir: pathlib.Path, config: ml_collections.ConfigDict, config_record: ConfigRecord,
             components: Components) -> RunState:
    """:func:`run`'s work, in a run directory this process owns whose config has been checked."""
    settings = components.run
    use_compilation_cache(settings.compilation_cache)  # a resume reads its compiled programs back
    mesh = make_mesh()
    optimizer = components.optimizer
    checkpoints = RunCheckpoints(workdir, keep=settings.checkpoint.keep, keep_period=settings.checkpoint.keep_period)
    metrics_log = MetricsLog(workdir)
    main_process = is_main_process()  # on several processes, process 0 alone writes metrics, config and games
    show_progress = settings.progress and main_process

    saved_config = checkpoints.saved_config()
    if saved_config is not None:
        check_compatible(saved_config, config, workdir)
    base_key = jax.random.key(settings.seed)
    template = init_train_state(components.network, components.game, optimizer, jax.random.fold_in(base_key, 0))
    programs = run_programs(components, mesh)
    selfplay_fn, train_step = programs.selfplay, programs.train_step

    def lanes_template():
        """The self-play lanes' structure as host arrays, to restore a checkpoint's lanes into."""
        abstract = selfplay_fn.lanes_template(replicate(template.variables, mesh), base_key)
        return jax.tree.map(lambda leaf: np.zeros(leaf.shape, leaf.dtype), abstract)

    run_state = checkpoints.restore(template, lanes_template)
    if run_state is None:
        if settings.init_from:
            template = initialise_from(template, settings.init_from, optimizer)
        run_state = RunState(0, 0, template, FrameWindow.empty(), process_numpy_rng(settings.seed))
        checkpoints.save(run_state, config)
        if main_process:
            metrics_log.reconcile(0, None)
        logger.info("new run in %s: %d parameters", workdir, count_parameters(template.params))
    else:
        checkpoints.discard_after(run_state.iteration)
        if main_process:
            metrics_log.reconcile(run_state.iteration, run_state.last_record)
        logger.info("resuming %s at iteration %d", workdir, run_state.iteration)
    if main_process:
        with writing(workdir / "config.json"):
            config_record.write()

    if run_state.lanes is not None:  # restored as host arrays: sharded over the devices as self-play returns them
        run_state.lanes = place_lanes(run_state.lanes, mesh)
    # Self-play records replay from the start position; games of a method's own lane rule (other starts) or game rule
    # have no PGN.
    standard_games = components.method.games_from_start_position(components)
    pgn_games = settings.selfplay_pgn_games if standard_games else 0
    local_batch_size("train.batch_size", components.train.batch_size, mesh)  # a bad size stops before self-play
    train_state = replicate(run_state.train_state, mesh)

    previous_wall_seconds = float((run_state.last_record or {}).get("wall_s", 0.0))
    stop = StopOnSignal()  # SIGINT/SIGTERM: finish and save the iteration, then stop (zerolab.training.interrupt)
    with stop, progress_bar("training", settings.iterations, unit="iteration", enabled=show_progress) as bar:
        bar.advance(run_state.iteration)
        for iteration in range(run_state.iteration + 1, settings.iterations + 1):
            bar.set_rate(f"iteration {iteration}: self-play")
            record, run_state, train_state, last_records, earlier_actions = run_iteration(
                iteration, run_state, train_state, components, mesh, selfplay_fn, train_step, base_key, bar
            )
            record["wall_s"] = previous_wall_seconds + record["iteration_s"]
            previous_wall_seconds = record["wall_s"]
            run_state.last_record = record
            if main_process:
                games_path = workdir / "games" / f"selfplay-{iteration}.pgn"
                with writing(games_path):
                    write_selfplay_games(components.game, last_records, games_path, pgn_games,
                                         f"self-play iteration {iteration}", earlier_actions)
            save_started = time.perf_counter()
            checkpoints.save(run_state, config)
            logger.info("iteration %d: checkpoint saved in %.1f s", iteration, time.perf_counter() - save_started)
            if main_process:
                metrics_log.append(record)
            bar.advance()
            bar.set_rate(f"loss {record.get('loss', float('nan')):.3f} · {record['selfplay_moves_per_s']:.0f} moves/s")
            logger.info("iteration %d: %s", iteration, json.dumps(
                {k: round(v, 4) if isinstance(v, float) else v for k, v in record.items()}))
            # every process stops after the same iteration (a signal may reach only some of them)
            if sum_over_processes(stop.requested or 0) and iteration < settings.iterations:
                metrics_log.close()
                raise TrainingInterrupted(stop.requested or signal.SIGTERM, iteration, str(workdir))
    metrics_log.close()
    run_state.train_state = jax.device_get(train_state)
    return run_state
