"""sai-go-komi: the fair-komi trend over training iterations and the komi calibration of SAI's sigmoid.

The training keys are sai-go's (one source: ``load_config("sai-go", ...)``), trained once per seed of ``seeds``;
``calibration`` sets the held-out self-play of checkpoint 0, every ``checkpoint.keep_period``-th and the last
(``games`` games from the empty board, komi drawn as in training, ``search.num_simulations`` PUCT simulations a move,
at λ ``lam`` — None: the training λ, ``method_options.lam``, 0.5 — no branches) and the reliability ``bins``.  The
evidence and paper presets train with the paper's value loss (``method_options.value_loss=paper``) and branch
points from empty-board games only (``method_options.branch_from_branches=False``: each fresh game followed by its
own branches, the paper's proportion); the evidence preset also plays with ``method_options.pass_rule=no_early_pass``
(no pass while a legal move fills no own eye; the held-out games too) in calls of 32 lanes × 512 plies with a queue of
128 (games then last ≈ 96 plies); tiny keeps sai-go tiny's.

* ``tiny``: sai-go tiny (8 iterations; checkpoints 0, 2, 4, 6, 8 measured), one seed, 64 games a checkpoint;
* ``evidence``: sai-go tiny's network and search for 32 iterations (checkpoints every 4), three seeds, 256
  held-out games at each of checkpoints 0, 4, …, 32 (27 cells; time measured under load: sai_go/README.md);
* ``paper``: sai-go paper (200 iterations, 3 × 128, 250 simulations), one seed, 1024 games at 250 simulations.
"""

from __future__ import annotations

import dataclasses

import ml_collections

from experiments.configs import load_config
from zerolab import SearchChanges, section_dataclass, section_dict

TRAINING_KEYS = ("iterations", "game", "model", "search", "selfplay", "method", "method_options", "replay", "train",
                 "checkpoint", "progress")


@dataclasses.dataclass(frozen=True, kw_only=True)
class CalibrationConfig:
    """sai-go-komi's ``calibration`` section: the held-out self-play of each measured checkpoint."""

    seed: int = 1234
    games: int = 64
    search: SearchChanges = SearchChanges.of(num_simulations=16)  # the held-out games' simulations only
    bins: int = 5
    lam: float | None = None  # None: the training λ, method_options.lam


@dataclasses.dataclass(frozen=True, kw_only=True)
class SaiGoKomiConfig:
    """sai-go-komi's own keys, their types and the tiny preset's values (the training keys, :data:`TRAINING_KEYS`
    and ``compilation_cache``, are sai-go's, typed by the core's readers): :func:`get_config` is built from it and
    the launcher reads its keys through it (:func:`read_config`), once, at each hook."""

    seeds: list[int] = dataclasses.field(default_factory=lambda: [0])
    calibration: CalibrationConfig = CalibrationConfig()


def read_config(config: ml_collections.ConfigDict) -> SaiGoKomiConfig:
    """``config``'s own keys typed (:func:`zerolab.section_dataclass`: a ValueError names a key and what it must
    be); the training keys are left to the core's readers."""
    return section_dataclass(SaiGoKomiConfig, config, "sai-go-komi",
                             read_elsewhere=TRAINING_KEYS + ("compilation_cache",))


def get_config(preset: str = "tiny"):
    if preset not in ("tiny", "evidence", "paper"):
        raise KeyError(preset)
    sai = load_config("sai-go", "paper" if preset == "paper" else "tiny")
    config = ml_collections.ConfigDict({key: sai[key] for key in TRAINING_KEYS})
    for key, value in section_dict(SaiGoKomiConfig()).items():
        config[key] = value
    config.compilation_cache = "~/.cache/zerolab/jax-compilation"
    if preset == "evidence":
        config.seeds = [0, 1, 2]
        config.iterations = 32
        config.checkpoint.keep_period = 4
        config.calibration.games = 256
        config.method_options.value_loss = "paper"
        config.method_options.branch_from_branches = False  # the paper's proportion of fresh games and branches
        # seed 2's drift: White passed early, ahead on the board count, and lost (sai_go/README.md)
        config.method_options.pass_rule = "no_early_pass"
        # games without early passes last ≈ 96 plies; calls of 512 plies are the measured run's (sai_go/README.md,
        # made when the branch queue lived for one call; it is now carried with the lanes from call to call)
        config.selfplay.num_games = 32
        config.selfplay.plies_per_iteration = 512
        config.method_options.queue_size = 128
    elif preset == "paper":
        config.calibration.games = 1024
        config.calibration.search.num_simulations = 250
    return config
