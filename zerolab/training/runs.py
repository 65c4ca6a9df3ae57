"""What a run is built from: its config's keys and their defaults (:func:`default_config`, which experiment configs
start from), and :class:`Components` — the game, the network, the search and its rules, the self-play
sizes, the method, the replay window and the training settings — read from the config once at the entry, and the
checks of a training config before anything is made or written (:func:`check_training_config`,
:func:`check_search_fits`).

The rest of a run directory's life is in the modules beside this one: the train state and its optimiser
(:mod:`zerolab.training.train_state`), the run's checkpoints written and read back whole
(:mod:`zerolab.training.run_checkpoints`), and a trained network read back for play or to start another run from
(:mod:`zerolab.training.trained_variables`).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import flax.linen as nn
import jax
import ml_collections
import numpy as np
import optax

from zerolab.config import check_at_least, section_dataclass
from zerolab.devices import check_divisible, device_memory_bytes, format_bytes, make_mesh
from zerolab.games import Game, make_game
from zerolab.networks.network import make_network
from zerolab.search.config import SearchConfig, SearchRules
from zerolab.search.tree import tree_bytes
from zerolab.selfplay.types import SelfPlayConfig
from zerolab.training.method import ALPHAZERO, Method, make_method
from zerolab.training.replay import ReplayConfig
from zerolab.training.train_state import TrainConfig, make_optimizer

logger = logging.getLogger(__name__)


def default_config() -> ml_collections.ConfigDict:
    """The base config of a training run; experiment configs start from it."""
    return ml_collections.ConfigDict(
        {
            "seed": 0,
            "iterations": 10,
            "game": {"name": "gardner_chess", "go_size": 7, "komi": 7.5},
            # dtype: what the network computes in, float32 | bfloat16 (parameters and everything else stay float32)
            "model": {"name": "resnet", "channels": 64, "num_blocks": 5, "dtype": "float32"},
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
                "selection": "mctx",  # PUCT's rule: mctx's, or "lc0" (lc0's PUCT with the lc0_* parameters)
                "lc0_cpuct": 1.745,
                "lc0_cpuct_base": 38739.0,
                "lc0_cpuct_factor": 3.894,
                "lc0_fpu_reduction": 0.330,
                "rules": "",  # "package.module:factory" of a SearchRules variant; empty: the standard search
                "rule_options": {},  # keyword arguments of that factory
            },
            "selfplay": {
                "num_games": 64,
                "plies_per_iteration": 64,
                "max_game_plies": 256,
                "temperature_plies": 0,
                "temperature": 1.0,
                "temperature_schedule": "plies",  # or "moves" (lc0's; see zerolab.selfplay.types.SelfPlayConfig)
                "temperature_delay_moves": 0,
                "temperature_decay_moves": 0,
                "temperature_end": 0.0,
                "temperature_cutoff_moves": 0,
                # GiB one device's self-play may take; a device whose games do not fit plays them in chunks.
                # None: the device's own memory where the backend reports it (GPU, TPU), no chunks on the CPU.
                "device_memory_gib": None,
                # a call logs its progress every this many plies; None: every eighth of a call of 256 plies or more
                "progress_plies": None,
            },
            "method": "",  # "package.module:factory" of a zerolab.training.method.Method; empty: AlphaZero
            "method_options": {},  # keyword arguments of that factory
            "replay": {"window_size": 100_000, "mode": "sample"},
            # optimizer: adam | sgd_nesterov (momentum: its Nesterov momentum); see zerolab.training.train_state.make_optimizer
            "train": {"learning_rate": 1e-3, "batch_size": 256, "epochs_per_iteration": 1.0, "l2_weight": 0.0,
                      "optimizer": "adam", "momentum": 0.9},
            "checkpoint": {"keep": 3, "keep_period": 10},  # keep_period also keeps step 0, the initial network
            "init_from": "",  # a run or checkpoint directory whose network variables start this run
            "progress": True,
            # JAX's persistent compilation cache: a rerun or resume reads its compiled programs back ("": none; a
            # cache JAX was already given, e.g. by JAX_COMPILATION_CACHE_DIR, is kept)
            "compilation_cache": "~/.cache/zerolab/jax-compilation",
        }
    )


@dataclasses.dataclass(frozen=True)
class CheckpointConfig:
    """A run's ``checkpoint`` section: the newest ``keep`` checkpoints are kept, and every ``keep_period``-th step
    (step 0, the initial network, too; 0: none)."""

    keep: int = 3
    keep_period: int = 10


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A training run's own keys, typed (the top level of :func:`default_config` and its
    ``checkpoint`` section); the sections of its components are read by their own classes, and any key a launcher
    adds is left to the launcher.  Keys absent (configs of older runs) keep these defaults."""

    seed: int = 0
    iterations: int = 10
    checkpoint: CheckpointConfig = CheckpointConfig()
    init_from: str = ""
    progress: bool = True
    compilation_cache: str | None = None
    selfplay_pgn_games: int = 2  # games of each iteration's self-play written as PGN (standard games only)

    def __post_init__(self):
        check_at_least("iterations", self.iterations, 0)

    @classmethod
    def from_config(cls, config: Any) -> RunConfig:
        """The run's own keys of ``config`` (:func:`zerolab.config.section_dataclass`); its other keys are left to
        their readers."""
        return section_dataclass(cls, config, "config", shared=True)


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
    run: RunConfig = RunConfig()

    @classmethod
    def from_config(cls, config: Any) -> Components:
        run = RunConfig.from_config(config)  # first: a bad iteration count is named before anything is built
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
            run=run,
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


