"""contempt-train (search-contempt's efficiency claim): two training runs with equal budgets that differ only in
self-play — PUCT with τ2 against search-contempt with τ1 and N_scl 5 — rated together under one plain-PUCT search.

Every training key (game, model, search kind and simulations, root noise, games, plies, frame window, optimiser,
checkpoints, seed) is shared; ``puct_temperature``, ``contempt_temperature`` and ``sc_limit`` set the two arms'
self-play.  ``evaluation`` sets the rating matches (Algorithm 2 matchmaking; plain PUCT with
``evaluation.search.num_simulations``), ``final_games`` the match between the two final networks.

* ``tiny``: Gardner chess from scratch on a 2-core CPU, the quickstart's ResNet (32 channels, 2 blocks), PUCT with
  16 simulations, 6 iterations of 32 games × 96 plies; checkpoints 0, 2, 4, 6 rated.
* ``paper``: 8×8 from maia-1900 (``init_from=RUN``, converted with ``python -m zerolab lc0 convert``; its game and
  model are used), 1000 simulations with lc0's PUCT (``search.selection=lc0``: both arms' self-play and the rating
  matches, whose agents keep the runs' search), 30,000 games (60 iterations × 500 games × 512 plies), for
  accelerators.
"""

from __future__ import annotations

import dataclasses

import ml_collections

from contempt_search import TEMPERATURE_SCHEDULES
from zerolab import default_config, section_dataclass

#: The keys contempt-train's config shares with a core training config (its top level and sections, read by the core's
#: readers: ``RunConfig``, ``SearchConfig``, ``SelfPlayConfig`` …), and its ``evaluation`` section (the rating
#: matches, read by ``zerolab.evaluation.EvaluationConfig``): not in :class:`ContemptTrainConfig`.
READ_ELSEWHERE = (*default_config().keys(), "evaluation")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ContemptTrainConfig:
    """contempt-train's own keys (beside a core training config's, :data:`READ_ELSEWHERE`), their types and the tiny
    preset's values: :func:`get_config` is built from it and the launcher reads those keys through it
    (:func:`read_config`)."""

    # τ schedules: (start, delay, decay, end, cutoff) over full moves (contempt_search.TEMPERATURE_SCHEDULES, one
    # field a schedule)
    tau1: list[float] = dataclasses.field(default_factory=lambda: list(TEMPERATURE_SCHEDULES["tau1"]))
    tau2: list[float] = dataclasses.field(default_factory=lambda: list(TEMPERATURE_SCHEDULES["tau2"]))
    puct_temperature: str = "tau2"
    contempt_temperature: str = "tau1"
    sc_limit: int = 5
    from_scratch: bool = True  # False: init_from must name a run (maia-1900)
    final_games: int = 64


def read_config(config: ml_collections.ConfigDict) -> ContemptTrainConfig:
    """``config``'s own keys typed (:func:`zerolab.section_dataclass`: a ValueError names a key and what it must
    be); the training keys and ``evaluation`` are left to the core's readers."""
    return section_dataclass(ContemptTrainConfig, config, "contempt-train", read_elsewhere=READ_ELSEWHERE)


def get_config(preset: str = "tiny"):
    config = default_config()
    config.search.kind = "muzero"  # PUCT, as lc0; root Dirichlet noise on in both arms
    config.selfplay.temperature_schedule = "moves"
    own = dataclasses.asdict(ContemptTrainConfig())
    for key in ("tau1", "tau2", "puct_temperature", "contempt_temperature", "sc_limit", "from_scratch"):
        config[key] = own[key]
    config.evaluation = {"games": 16, "search": {"num_simulations": 16}, "max_game_plies": 256, "num_opponents": 3}
    config.final_games = own["final_games"]
    config.compilation_cache = "~/.cache/zerolab/jax-compilation"
    if preset == "tiny":
        config.game.name = "gardner_chess"
        config.model.name = "resnet"
        config.model.channels = 32
        config.model.num_blocks = 2
        config.iterations = 6
        config.checkpoint.keep_period = 2
        config.search.num_simulations = 16
        config.selfplay.num_games = 32
        config.selfplay.plies_per_iteration = 96  # a call; games go on in the next one, up to the 256-ply cap
        config.selfplay.max_game_plies = 256
        config.replay.window_size = 12_288  # four iterations of frames
        config.train.batch_size = 128
        config.train.epochs_per_iteration = 1.0
        config.evaluation.search.num_simulations = 8
        config.evaluation.max_game_plies = 100
    elif preset == "paper":
        config.from_scratch = False
        config.search.selection = "lc0"  # lc0's PUCT (the search the paper ran) in both arms and in the ratings
        config.model.dtype = "bfloat16"  # accelerators: the network computes in bfloat16, all else in float32
        config.game.name = "chess"
        config.iterations = 60
        config.checkpoint.keep_period = 10
        config.search.num_simulations = 1000
        config.selfplay.num_games = 500  # 30,000 games in 60 iterations
        config.selfplay.plies_per_iteration = 512
        config.selfplay.max_game_plies = 512
        config.replay.window_size = 1_000_000
        config.train.batch_size = 256
        config.evaluation.games = 64
        config.evaluation.search.num_simulations = 800
        config.evaluation.num_opponents = 5
        config.evaluation.max_game_plies = 512
        config.final_games = 400
    else:
        raise KeyError(preset)
    return config
