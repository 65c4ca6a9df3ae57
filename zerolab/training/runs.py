"""Runs: what a run directory holds and how it is read back — train state, components, checkpoints, variables.

This module sits below both the training loop (:mod:`zerolab.training.train`) and the agents
(:mod:`zerolab.play.search_agents`): the loop writes run directories through :class:`RunCheckpoints`, and anything that plays a trained network reads one through
:func:`load_trained_variables`.

``TrainState`` is the project's own small dataclass rather than ``flax.training.train_state.TrainState``: Flax's keeps
``apply_fn`` and ``tx`` inside the state, while a zerolab train step closes over the network and the optimiser
(built from the config by :class:`Components` and :func:`make_optimizer`), so the state stays a plain pytree of
arrays that orbax writes as it is.  Its fields (``step``, ``params``, ``batch_stats``, ``opt_state``) are the names
every existing checkpoint was written with, which is why they are kept.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import pathlib
from collections.abc import Callable, Iterator
from typing import Any

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from zerolab import config as config_lib
from zerolab.config import check_at_least, check_choice, section_dataclass
from zerolab.devices import check_divisible, device_memory_bytes, format_bytes, make_mesh
from zerolab.training.checkpoint import Checkpointer
from zerolab.training.checkpoint_paths import resolve_checkpoint
from zerolab.games import Game, make_game
from zerolab.networks.network import init_variables, make_network
from zerolab.training.pending import PendingFrames
from zerolab.training.replay import FrameWindow, ReplayConfig
from zerolab.training.replay_checkpoints import ReplayCheckpoints
from zerolab.training.run_directory import SHAPE_DEFINING_PREFIXES, writing
from zerolab.training.method import ALPHAZERO, Method, make_method
from zerolab.search.config import SearchConfig, SearchRules
from zerolab.search.tree import tree_bytes
from zerolab.selfplay.types import SelfPlayConfig

logger = logging.getLogger(__name__)



class IncompatibleCheckpointError(RuntimeError):
    """The work directory holds a run whose game or model differs from the requested config."""


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


@dataclasses.dataclass
class Components:
    """What a run is built from, made once from its config at the entry and passed on as values: the game, the
    network, the search and its rules, the self-play sizes, the training method, the replay window and training
    settings (and so the optimiser, :attr:`optimizer`).

    Configs of runs written before a key existed (``search.rules``, ``method``, the temperature schedule,
    ``train.optimizer``) load with that key's default, so old run directories keep working.
    """

    game: Game
    network: nn.Module
    search: SearchConfig
    selfplay: SelfPlayConfig
    rules: SearchRules | None = None
    method: Method = ALPHAZERO
    replay: ReplayConfig = ReplayConfig()
    train: TrainConfig = TrainConfig()

    @classmethod
    def from_config(cls, config: Any) -> Components:
        game = make_game(config.game.name, go_size=config.game.go_size, komi=config.game.komi)
        search = SearchConfig.from_config(config.search)
        return cls(
            game=game,
            network=make_network(config.model, game),
            search=search,
            selfplay=SelfPlayConfig.from_config(config.selfplay),
            rules=search.make_rules(),
            method=make_method(config, game),
            replay=ReplayConfig.from_config(config.get("replay", {})),
            train=TrainConfig.from_config(config.get("train", {})),
        )

    @property
    def optimizer(self) -> optax.GradientTransformation:
        """The run's optimiser (:func:`make_optimizer`: one object for each setting)."""
        return make_optimizer(self.train)


def check_training_config(config: Any) -> Components:
    """A training run's config read whole and checked before anything is made or written: ``iterations`` and every
    component's values (:meth:`Components.from_config`: the game, the network's name and sizes, the search, the
    self-play sizes, the method, the replay window, the training settings) and the sizes that split over the
    devices (``selfplay.num_games``, ``train.batch_size``).  Raises ValueError (a
    :class:`~zerolab.config.ConfigError` for a value out of range or a name not known) naming the key, the value
    and what was expected; returns the components."""
    check_at_least("iterations", config.iterations, 0)
    components = Components.from_config(config)
    # the sizes split over the devices (all processes' together) before anything is written, not after
    mesh = make_mesh()
    check_divisible("selfplay.num_games", components.selfplay.num_games, mesh)
    check_divisible("train.batch_size", components.train.batch_size, mesh)
    check_search_fits(components, jax.local_devices()[0])  # a device this process can ask for its memory
    return components


def check_search_fits(components: Components, device: jax.Device) -> None:
    """Refuses a search whose tree for a single game cannot fit a device (self-play can split its games into chunks
    down to one game a chunk, not further): the tree's size from its shape alone
    (:func:`zerolab.search.tree.tree_bytes`, the game's state as each node's embedding), against
    ``selfplay.device_memory_gib`` or the device's memory (the host's on the CPU)."""
    game, search = components.game, components.search
    state = jax.eval_shape(game.init, jax.random.key(0))
    embedding_bytes = sum(leaf.size * np.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(state))
    num_slots = min(game.max_legal_actions, game.num_actions)
    one_game = tree_bytes(search.num_simulations, num_slots, embedding_bytes)
    available = device_memory_bytes(components.selfplay.device_memory_gib, device)
    if one_game > available:
        raise ValueError(
            f"search.num_simulations={search.num_simulations}: one game's search tree needs {format_bytes(one_game)} "
            f"({search.num_simulations + 1:,} nodes of {one_game / (search.num_simulations + 1) / 1024:.1f} KiB), more "
            f"than the {format_bytes(available)} a device has ({device.platform}); self-play can play one game a "
            f"chunk, not less")


@dataclasses.dataclass(frozen=True)
class ResumePoint:
    """A step a run may resume from: the frames its run had played (``frames_seen``) and the frames of its replay
    window that cannot be read back (``lost_frames``, in unreadable chunks)."""

    step: int
    frames_seen: int
    lost_frames: int

    @property
    def kept_frames(self) -> int:
        """The self-play work this point keeps: the frames played up to it, less those of its window it lost."""
        return self.frames_seen - self.lost_frames


@dataclasses.dataclass
class RunState:
    """Everything a run carries from one iteration to the next (and through a checkpoint).

    ``lanes``: self-play's lanes, the games in progress (:class:`~zerolab.selfplay.types.Lanes`, leaves ``[B, ...]``
    over all devices; None before the first call); ``pending``: this process's frames of those games, waiting for
    their game's end (:class:`~zerolab.training.pending.PendingFrames`; None before the first call)."""

    iteration: int
    frames_seen: int
    train_state: TrainState
    window: FrameWindow
    numpy_rng: np.random.Generator
    last_record: dict | None = None
    lanes: Any = None
    pending: PendingFrames | None = None


class RunCheckpoints:
    """Train-state checkpoints (``workdir/checkpoints``) and replay-window checkpoints (``workdir/replay``).

    A step is complete when both are written; restoring picks the newest step readable in both.  Both keep the
    newest ``keep`` steps, so a run whose newest checkpoints cannot be read falls back at most ``keep - 1`` steps
    (to the oldest of those ``keep``).  A window whose index reads but one of whose chunks does not (a chunk is
    read by every window its frames survive in) still offers its readable frames: :meth:`restore` takes the step
    that keeps the most self-play work (:class:`ResumePoint`), logging the frames lost.  The train states of every ``keep_period``-th step are kept as well, for
    rating, but without their (large) replay window they are not points a run resumes from.  When no complete step
    can be read, :meth:`restore` stops with :class:`~zerolab.training.checkpoint.UnreadableCheckpointError` rather than start
    the run again over its own history.

    On several processes the train state is written collectively (orbax), and each process saves and restores its
    own replay window and numpy random state (:mod:`zerolab.training.replay_checkpoints`, which also says what a single
    process resuming a multi-process run restores: every process's window, concatenated).
    """

    def __init__(self, workdir: pathlib.Path, keep: int, keep_period: int):
        self.states = Checkpointer(workdir / "checkpoints", keep=keep, keep_period=keep_period)
        self.replay = ReplayCheckpoints(workdir / "replay", keep=keep)

    def save(self, run: RunState, config: ml_collections.ConfigDict) -> None:
        """Writes step ``run.iteration``: the replay window and the pending frames (each process its own), then the
        train state with the self-play lanes (an orbax item ``lanes``, where the run has them) and the metadata."""
        metadata = {
            "iteration": run.iteration,
            "frames_seen": run.frames_seen,
            "numpy_rng": run.numpy_rng.bit_generator.state,
            "config": config_lib.to_json(config),
            "metrics": run.last_record,
            "lanes": run.lanes is not None,
        }
        self.replay.save(run.iteration, run.window, run.numpy_rng, run.pending if run.lanes is not None else None)
        items = {"train_state": jax.device_get(run.train_state)}
        if run.lanes is not None:  # sharded over the devices: orbax writes each process's lanes (one process: all)
            items["lanes"] = jax.device_get(run.lanes) if jax.process_count() == 1 else run.lanes
        with writing(self.states.directory / str(run.iteration)):
            self.states.save(run.iteration, items, metadata)

    def discard_after(self, step: int) -> None:
        """Deletes checkpoints newer than ``step`` (left by a run that is resumed from ``step``)."""
        for stale in [s for s in self.states.steps() if s > step]:
            logger.warning("discarding checkpoint %s (newer than the resumed step %d)",
                           self.states.directory / str(stale), step)
            self.states.manager.delete(stale)
        self.replay.discard_after(step)

    def complete_steps(self) -> list[int]:
        return sorted(set(self.states.steps()) & set(self.replay.steps()))

    def restore(self, template: TrainState, lanes_template: Callable[[], Any] | None = None) -> RunState | None:
        """The run state to resume from (:func:`resume_candidates` says which step); None for a new run (no train
        state saved yet).  Raises ``UnreadableCheckpointError`` when train states exist but no step has both a
        readable train state and a readable window index.  ``lanes_template()``: the self-play lanes' structure
        (host arrays) to restore a step's lanes into; None: lanes are not restored."""
        best, passed = None, []
        for candidate, state, replay in self.resume_candidates(template, lanes_template):
            if best is None or candidate.kept_frames > best[0].kept_frames:
                if best is not None:
                    passed.append((best[0], best[2]))
                best = candidate, state, replay
            else:
                passed.append((candidate, replay))
            if not candidate.lost_frames:
                break
        if best is not None:
            candidate, state, replay = best
            if candidate.lost_frames:
                logger.warning(
                    "resuming from step %d with the readable part of its replay window: %d frames lost with the "
                    "unreadable %s; %d of the %d frames played so far are kept (no kept step keeps more)",
                    candidate.step, candidate.lost_frames, ", ".join(replay.lost.chunks), candidate.kept_frames,
                    candidate.frames_seen)
            for newer, newer_replay in (item for item in passed if item[0].step > candidate.step):
                logger.warning(
                    "not resuming from step %d: its replay window lost %d frames with the unreadable %s, more than the "
                    "%d frames played since step %d, whose window is whole", newer.step, newer.lost_frames,
                    ", ".join(newer_replay.lost.chunks), newer.frames_seen - candidate.frames_seen, candidate.step)
            return self._run_state(state, replay)
        state_steps = self.states.steps()
        if state_steps:
            from zerolab.training.checkpoint import UnreadableCheckpointError

            raise UnreadableCheckpointError(
                f"no complete readable checkpoint to resume from: train states {state_steps} in "
                f"{self.states.directory}, replay windows {self.replay.steps()} in {self.replay.directory} (the "
                f"unreadable ones are named above); a run falls back at most checkpoint.keep - 1 steps.  Move the "
                f"work directory aside to start again, or repair the checkpoints"
            )
        return None

    def resume_candidates(self, template: TrainState, lanes_template: Callable[[], Any] | None = None
                          ) -> Iterator[tuple[ResumePoint, Any, Any]]:
        """``(point, train state, replay)`` of the steps a run may resume from, newest first: each step with a
        readable train state and a readable window index, its window restored with its readable chunks.

        Stops at the first step older than one whose window is whole, and at the first step whose frames played
        are no more than a newer candidate keeps (an older step cannot keep more): :meth:`restore` takes the one
        that keeps the most frames (:attr:`ResumePoint.kept_frames`), the newest of equals.
        """
        most_kept = None
        host_template = jax.device_get(template)

        def templates(metadata: dict) -> dict:
            if metadata.get("lanes") and lanes_template is not None:
                return {"train_state": host_template, "lanes": lanes_template()}
            return {"train_state": host_template}

        for step in reversed(self.complete_steps()):
            state = self.states.restore_newest([step], templates)
            if state is None:
                continue
            frames_seen = int(state.metadata["frames_seen"])
            if most_kept is not None and frames_seen <= most_kept:
                return
            replay = self.replay.restore(step, keep_readable=True)
            if replay is None:
                continue
            point = ResumePoint(step, frames_seen, replay.lost.count)
            most_kept = point.kept_frames if most_kept is None else max(most_kept, point.kept_frames)
            yield point, state, replay
            if not point.lost_frames:
                return

    @staticmethod
    def _run_state(state, replay) -> RunState:
        rng = replay.numpy_rng
        if rng is None:  # the single-process layout: the random state is the train-state checkpoint's
            rng = np.random.default_rng()
            rng.bit_generator.state = state.metadata["numpy_rng"]
        lanes, pending = state.items.get("lanes"), replay.pending
        if (lanes is None) != (pending is None):
            # e.g. a run of several processes resumed by another number of them: the lanes cannot be shared out
            logger.warning("step %s saved %s but not %s: self-play starts fresh games (%d pending frames dropped)",
                           state.metadata["iteration"], "lanes" if lanes is not None else "pending frames",
                           "their pending frames" if lanes is not None else "lanes",
                           0 if pending is None else len(pending))
            lanes, pending = None, None
        return RunState(
            iteration=int(state.metadata["iteration"]),
            frames_seen=int(state.metadata["frames_seen"]),
            train_state=state.items["train_state"],
            window=replay.window,
            numpy_rng=rng,
            last_record=state.metadata.get("metrics"),
            lanes=lanes,
            pending=pending,
        )

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


def train_state_template(components: Components, optimizer: optax.GradientTransformation) -> TrainState:
    """A train state of the right structure, shapes and dtypes to restore into, built without running the network.

    ``jax.eval_shape`` traces the initialisation instead of compiling and running it; the leaves are zero-filled
    numpy arrays (so restored states come back as numpy, as host data).
    """
    abstract = jax.eval_shape(
        lambda key: init_train_state(components.network, components.game, optimizer, key), jax.random.key(0)
    )
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
        run_config = config_lib.from_json(metadata["config"])
        components = Components.from_config(run_config)
        return {"train_state": train_state_template(components, components.optimizer)}

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
