"""Training: the AlphaZero loop — self-play, frame window, optax updates, checkpoints, metrics — that resumes.

``run(config, workdir)`` runs ``config.iterations`` iterations.  Each one plays a self-play batch, updates the
frame window, trains ``train.epochs_per_iteration`` epochs over it, saves a checkpoint and appends one line to
``metrics.jsonl``.  Rerunning on the same ``workdir`` resumes from the newest complete checkpoint: train state,
replay window, random state and counters are restored, and ``metrics.jsonl`` is reconciled so that each completed
iteration appears exactly once, even after ``kill -9`` during self-play, training or a save.

Checkpoint step ``k`` holds the state after ``k`` iterations; step 0 is the initial network, kept for evaluation
along with every ``checkpoint.keep_period``-th step and the last ``checkpoint.keep`` ones.
"""

from __future__ import annotations

import json
import logging
import math
import pathlib
import time
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from jax.sharding import Mesh

from zerolab import config as config_lib
from zerolab.devices import batch_sharded, check_divisible, local_numpy, make_mesh, replicate, replicated, shard_host_batch
from zerolab.games import Game
from zerolab.metrics import MetricsLog
from zerolab.networks import NetworkInputs, apply_network, count_parameters
from zerolab.pgn import GameRecord, replay_moves, write_games
from zerolab.progress import progress_bar
from zerolab.replay import FrameWindow, update_window
from zerolab.runs import (
    Components,
    RunCheckpoints,
    RunState,
    TrainState,
    check_compatible,
    init_train_state,
    initialise_from,
    make_optimizer,
)
from zerolab.search import masked_logits
from zerolab.selfplay import Frames, PlyRecord, finished_games, make_selfplay_fn, summarize

logger = logging.getLogger(__name__)


def default_config() -> ml_collections.ConfigDict:
    """The base config of a training run; experiment configs start from it."""
    return ml_collections.ConfigDict(
        {
            "seed": 0,
            "iterations": 10,
            "game": {"name": "gardner_chess", "go_size": 7, "komi": 7.5},
            "model": {"name": "resnet", "channels": 64, "num_blocks": 5},
            "search": {
                "kind": "gumbel",
                "num_simulations": 32,
                "max_depth": None,
                "max_num_considered_actions": 16,
                "gumbel_scale": 1.0,
                "dirichlet_alpha": 0.3,
                "dirichlet_fraction": 0.25,
                "pb_c_init": 1.25,
                "pb_c_base": 19652.0,
            },
            "selfplay": {
                "num_games": 64,
                "plies_per_iteration": 64,
                "max_game_plies": 256,
                "temperature_plies": 0,
                "temperature": 1.0,
            },
            "replay": {"window_size": 100_000, "mode": "sample"},
            "train": {"learning_rate": 1e-3, "batch_size": 256, "epochs_per_iteration": 1.0, "l2_weight": 0.0},
            "checkpoint": {"keep": 3, "keep_period": 10},  # keep_period also keeps step 0, the initial network
            "init_from": "",  # a run or checkpoint directory whose network variables start this run
            "progress": True,
        }
    )


def loss_fn(
    params: Any, batch_stats: Any, network: nn.Module, frames: Frames, l2_weight: float
) -> tuple[jax.Array, tuple[dict, Any]]:
    """Policy cross-entropy (illegal actions masked) + value MSE over known outcomes (+ L2)."""
    inputs = NetworkInputs(observation=frames.observation, legal_action_mask=frames.legal_action_mask)
    logits, value, new_batch_stats = apply_network(
        network, {"params": params, "batch_stats": batch_stats}, inputs, train=True
    )
    logits = masked_logits(logits, frames.legal_action_mask)
    policy_target = frames.policy_target.astype(jnp.float32)
    policy_loss = optax.softmax_cross_entropy(logits, policy_target).mean()
    value_mask = frames.value_mask.astype(jnp.float32)
    value_loss = jnp.sum(value_mask * (value - frames.value_target) ** 2) / jnp.maximum(value_mask.sum(), 1.0)
    l2_loss = sum(jnp.sum(w**2) for w in jax.tree_util.tree_leaves(params))
    loss = policy_loss + value_loss + l2_weight * l2_loss
    metrics = {"loss": loss, "policy_loss": policy_loss, "value_loss": value_loss}
    return loss, (metrics, new_batch_stats)


def make_train_step(network: nn.Module, optimizer: optax.GradientTransformation, mesh: Mesh, l2_weight: float):
    """A jitted ``(state, frames) -> (state, metrics)``: frames sharded over the mesh, state replicated.

    The batch is one global array, so BatchNorm's batch statistics and the gradient are those of the whole batch:
    the result does not depend on the number of devices.
    """

    def train_step(state: TrainState, frames: Frames) -> tuple[TrainState, dict]:
        grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
        (_, (metrics, batch_stats)), grads = grad_fn(state.params, state.batch_stats, network, frames, l2_weight)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = {**metrics, "grad_norm": optax.global_norm(grads)}
        return TrainState(step=state.step + 1, params=params, batch_stats=batch_stats, opt_state=opt_state), metrics

    return jax.jit(
        train_step,
        in_shardings=(replicated(mesh), batch_sharded(mesh)),
        out_shardings=(replicated(mesh), replicated(mesh)),
        donate_argnums=(0,),
    )


def train_on_window(
    train_step: Callable, train_state: TrainState, window: FrameWindow, config: Any, mesh: Mesh,
    rng: np.random.Generator,
) -> tuple[TrainState, dict, int]:
    """``epochs_per_iteration`` epochs of minibatches drawn without replacement from the window."""
    batch_size = int(config.train.batch_size)
    check_divisible("train.batch_size", batch_size, mesh)
    num_updates = max(1, math.ceil(config.train.epochs_per_iteration * len(window) / batch_size))
    order = np.concatenate([rng.permutation(len(window)) for _ in range(math.ceil(num_updates * batch_size / len(window)) + 1)])
    totals: dict[str, float] = {}
    for update in range(num_updates):
        indices = np.sort(order[update * batch_size:(update + 1) * batch_size])
        batch = shard_host_batch(window.as_frames(indices), mesh)
        train_state, metrics = train_step(train_state, batch)
        for name, value in metrics.items():
            totals[name] = totals.get(name, 0.0) + float(value)
    return train_state, {name: total / num_updates for name, total in totals.items()}, num_updates * batch_size


def run_iteration(iteration: int, run_state: RunState, train_state: TrainState, config: Any, mesh: Mesh,
                  selfplay_fn: Callable, train_step: Callable, base_key: jax.Array, bar
                  ) -> tuple[dict, RunState, TrainState, PlyRecord]:
    """Self-play, window update and training of one iteration: its metrics record, the new states, the ply records."""
    started = time.perf_counter()
    variables = {"params": train_state.params, "batch_stats": train_state.batch_stats}
    frames, records = selfplay_fn(variables, jax.random.fold_in(base_key, iteration))
    frames, records = local_numpy((frames, records), axis=1)
    selfplay_seconds = time.perf_counter() - started
    num_frames = frames.value_target.size
    window = update_window(run_state.window, frames, int(config.replay.window_size), run_state.numpy_rng,
                           config.replay.mode)
    bar.set_rate(f"iteration {iteration}: training on {len(window)} frames")
    train_started = time.perf_counter()
    train_state, train_metrics, samples = train_on_window(train_step, train_state, window, config, mesh,
                                                          run_state.numpy_rng)
    train_seconds = time.perf_counter() - train_started
    record = {
        "iteration": iteration,
        "frames": run_state.frames_seen + num_frames,
        **train_metrics,
        **summarize(records),
        "window_size": len(window),
        "selfplay_moves_per_s": num_frames / selfplay_seconds,
        "train_samples_per_s": samples / train_seconds,
        "selfplay_s": selfplay_seconds,
        "train_s": train_seconds,
        "iteration_s": time.perf_counter() - started,
    }
    run_state = RunState(iteration, record["frames"], train_state, window, run_state.numpy_rng)
    return record, run_state, train_state, records


def write_selfplay_games(game: Game, records: PlyRecord, path: pathlib.Path, max_games: int, event: str) -> None:
    """A few self-play games of the iteration as PGN, for a person to look at."""
    if max_games <= 0 or game.move_record_format is None:
        return
    games = [GameRecord("self-play", "self-play", replay_moves(game, actions), score, len(actions), False)
             for _, actions, score in finished_games(records, max_games)]
    if games:
        write_games(game, games, path, event)


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path,
        after_iteration: Callable[[RunState, dict], None] | None = None) -> RunState:
    """Trains for ``config.iterations`` iterations in ``workdir``, resuming what is there."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    components = Components.from_config(config)
    mesh = make_mesh()
    optimizer = make_optimizer(config.train)
    checkpoints = RunCheckpoints(workdir, keep=config.checkpoint.keep, keep_period=config.checkpoint.keep_period)
    metrics_log = MetricsLog(workdir)
    show_progress = bool(config.progress)

    saved_config = checkpoints.saved_config()
    if saved_config is not None:
        check_compatible(saved_config, config, workdir)
    base_key = jax.random.key(int(config.seed))
    template = init_train_state(components.network, components.game, optimizer, jax.random.fold_in(base_key, 0))
    run_state = checkpoints.restore(template)
    if run_state is None:
        if config.get("init_from"):
            template = initialise_from(template, config.init_from, optimizer)
        run_state = RunState(0, 0, template, FrameWindow.empty(), np.random.default_rng(int(config.seed)))
        checkpoints.save(run_state, config)
        metrics_log.reconcile(0, None)
        logger.info("new run in %s: %d parameters", workdir, count_parameters(template.params))
    else:
        checkpoints.discard_after(run_state.iteration)
        metrics_log.reconcile(run_state.iteration, run_state.last_record)
        logger.info("resuming %s at iteration %d", workdir, run_state.iteration)
    (workdir / "config.json").write_text(config_lib.to_json(config))

    selfplay_fn = make_selfplay_fn(components.game, components.network, components.search, components.selfplay, mesh)
    train_step = make_train_step(components.network, optimizer, mesh, float(config.train.l2_weight))
    train_state = replicate(run_state.train_state, mesh)

    previous_wall_seconds = float((run_state.last_record or {}).get("wall_s", 0.0))
    with progress_bar("training", int(config.iterations), unit="iteration", enabled=show_progress) as bar:
        bar.advance(run_state.iteration)
        for iteration in range(run_state.iteration + 1, int(config.iterations) + 1):
            bar.set_rate(f"iteration {iteration}: self-play")
            record, run_state, train_state, *last_records = run_iteration(
                iteration, run_state, train_state, config, mesh, selfplay_fn, train_step, base_key, bar
            )
            record["wall_s"] = previous_wall_seconds + record["iteration_s"]
            previous_wall_seconds = record["wall_s"]
            if after_iteration is not None:
                after_iteration(run_state, record)
            run_state.last_record = record
            write_selfplay_games(components.game, last_records[0], workdir / "games" / f"selfplay-{iteration}.pgn",
                                 int(config.get("selfplay_pgn_games", 2)), f"self-play iteration {iteration}")
            checkpoints.save(run_state, config)
            metrics_log.append(record)
            bar.advance()
            bar.set_rate(f"loss {record['loss']:.3f} · {record['selfplay_moves_per_s']:.0f} moves/s")
            logger.info("iteration %d: %s", iteration, json.dumps(
                {k: round(v, 4) if isinstance(v, float) else v for k, v in record.items()}))
    metrics_log.close()
    run_state.train_state = jax.device_get(train_state)
    return run_state
