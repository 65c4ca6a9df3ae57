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

import dataclasses
import json
import logging
import math
import pathlib
import time
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from jax.sharding import Mesh

from zerolab import config as config_lib
from zerolab.checkpoint import Checkpointer
from zerolab.devices import batch_sharded, check_divisible, local_numpy, make_mesh, replicate, replicated, shard_host_batch
from zerolab.arena import GameRecord, replay_moves, write_games
from zerolab.games import ChessGame, Game, make_game
from zerolab.metrics import MetricsLog
from zerolab.networks import NetworkInputs, apply_network, count_parameters, init_variables, make_network
from zerolab.progress import progress_bar
from zerolab.replay import FrameWindow, update_window
from zerolab.search import SearchConfig, masked_logits
from zerolab.selfplay import Frames, PlyRecord, SelfPlayConfig, finished_games, make_selfplay_fn, summarize

logger = logging.getLogger(__name__)

# Config keys that fix the shapes of what a checkpoint holds; resuming with other values is refused.
SHAPE_DEFINING_PREFIXES = ("game.", "model.")


class IncompatibleCheckpointError(RuntimeError):
    """The work directory holds a run whose game or model differs from the requested config."""


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


@flax.struct.dataclass
class TrainState:
    step: jax.Array
    params: Any
    batch_stats: Any
    opt_state: Any

    @property
    def variables(self) -> dict:
        return {"params": self.params, "batch_stats": self.batch_stats}


def make_optimizer(train_config: Any) -> optax.GradientTransformation:
    return optax.adam(float(train_config.learning_rate))


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


def init_train_state(network: nn.Module, game: Game, optimizer: optax.GradientTransformation, key: jax.Array) -> TrainState:
    variables = init_variables(network, game, key)
    return TrainState(
        step=jnp.zeros((), jnp.int32),
        params=variables["params"],
        batch_stats=variables["batch_stats"],
        opt_state=optimizer.init(variables["params"]),
    )


@dataclasses.dataclass
class Components:
    """What a run is built from: the game, the network and the search, made from a config."""

    game: Game
    network: nn.Module
    search: SearchConfig
    selfplay: SelfPlayConfig

    @classmethod
    def from_config(cls, config: Any) -> Components:
        game = make_game(config.game.name, go_size=config.game.go_size, komi=config.game.komi)
        return cls(
            game=game,
            network=make_network(config.model, game),
            search=SearchConfig.from_config(config.search),
            selfplay=SelfPlayConfig(**config.selfplay.to_dict()),
        )


@dataclasses.dataclass
class RunState:
    """Everything a run carries from one iteration to the next (and through a checkpoint)."""

    iteration: int
    frames_seen: int
    train_state: TrainState
    window: FrameWindow
    numpy_rng: np.random.Generator
    last_record: dict | None = None


class RunCheckpoints:
    """Train-state checkpoints (kept for rating) and replay-window checkpoints (only the latest few).

    A step is complete when both are written; restoring picks the newest step readable in both.
    """

    def __init__(self, workdir: pathlib.Path, keep: int, keep_period: int):
        self.states = Checkpointer(workdir / "checkpoints", keep=keep, keep_period=keep_period)
        self.replay = Checkpointer(workdir / "replay", keep=2)

    def save(self, run: RunState, config: ml_collections.ConfigDict) -> None:
        metadata = {
            "iteration": run.iteration,
            "frames_seen": run.frames_seen,
            "numpy_rng": run.numpy_rng.bit_generator.state,
            "config": config_lib.to_json(config),
            "metrics": run.last_record,
        }
        self.replay.save(run.iteration, {"window": {"num_frames": np.asarray(len(run.window)), **run.window.arrays}}, {"iteration": run.iteration})
        self.states.save(run.iteration, {"train_state": jax.device_get(run.train_state)}, metadata)

    def discard_after(self, step: int) -> None:
        """Deletes checkpoints newer than ``step`` (left by a run that is resumed from ``step``)."""
        for checkpointer in (self.states, self.replay):
            for stale in [s for s in checkpointer.steps() if s > step]:
                logger.warning("discarding checkpoint %s (newer than the resumed step %d)",
                               checkpointer.directory / str(stale), step)
                checkpointer.manager.delete(stale)

    def complete_steps(self) -> list[int]:
        return sorted(set(self.states.steps()) & set(self.replay.steps()))

    def restore(self, template: TrainState) -> RunState | None:
        for step in reversed(self.complete_steps()):
            try:
                state = self.states.restore(step, {"train_state": jax.device_get(template)})
                replay = self.replay.restore(step, {"window": None})
            except Exception as error:  # noqa: BLE001 - unreadable: report by path and use the previous one
                logger.warning("checkpoint step %d in %s cannot be read (%s: %s); trying the previous one",
                               step, self.states.directory, type(error).__name__, error)
                continue
            arrays = {k: np.asarray(v) for k, v in replay.items["window"].items() if k != "num_frames"}
            rng = np.random.default_rng()
            rng.bit_generator.state = state.metadata["numpy_rng"]
            return RunState(
                iteration=int(state.metadata["iteration"]),
                frames_seen=int(state.metadata["frames_seen"]),
                train_state=state.items["train_state"],
                window=FrameWindow(arrays),
                numpy_rng=rng,
                last_record=state.metadata.get("metrics"),
            )
        return None

    def saved_config(self) -> ml_collections.ConfigDict | None:
        for step in reversed(self.states.steps()):
            try:
                return config_lib.from_json(self.states.read_metadata(step)["config"])
            except Exception:  # noqa: BLE001 - unreadable metadata: look at the previous checkpoint
                continue
        return None


@dataclasses.dataclass
class TrainedVariables:
    """Network variables read from a checkpoint, with the config of the run that wrote them."""

    config: ml_collections.ConfigDict
    variables: dict
    step: int
    path: pathlib.Path


def resolve_checkpoint(path: str | pathlib.Path, step: int | None = None) -> tuple[pathlib.Path, int | None]:
    """``(checkpoints directory, step)`` for a run directory (``step`` or the newest) or a checkpoint step directory."""
    path = pathlib.Path(path)
    if path.name.isdigit() and path.parent.name == "checkpoints":
        return path.parent, int(path.name)
    if (path / "checkpoints").is_dir():
        return path / "checkpoints", step
    raise FileNotFoundError(f"{path} is neither a run directory (with checkpoints/) nor a checkpoint step directory")


def load_trained_variables(path: str | pathlib.Path, step: int | None = None) -> TrainedVariables:
    """The network variables of a run directory's newest (or ``step``) checkpoint, or of one checkpoint directory."""
    directory, step = resolve_checkpoint(path, step)
    checkpointer = Checkpointer(directory)
    steps = checkpointer.steps()
    if not steps:
        raise FileNotFoundError(f"no checkpoint in {directory}")
    if step is None:
        step = steps[-1]
    elif step not in steps:
        raise FileNotFoundError(f"no checkpoint step {step} in {directory}; steps: {steps}")
    run_config = config_lib.from_json(checkpointer.read_metadata(step)["config"])
    components = Components.from_config(run_config)
    template = init_train_state(components.network, components.game, make_optimizer(run_config.train), jax.random.key(0))
    restored = checkpointer.restore(step, {"train_state": jax.device_get(template)})
    state = restored.items["train_state"]
    return TrainedVariables(run_config, {"params": state.params, "batch_stats": state.batch_stats}, step, restored.path)


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
    if max_games <= 0 or not isinstance(game, ChessGame):
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
