"""sai-go: SAI training on 7×7 Go (winrate-vs-komi sigmoid head, branching self-play, λ agent).

``tiny``: a 2-core CPU; ``paper``: the paper's settings for an accelerator (3 blocks × 128, 250 visits, λ = 0.5,
branching 0.025 × 3 from games started on the empty board only, the paper's l² loss on the winrate ρ).  Ablations:
``method_options.branch_probability=0`` (no branching), ``method_options.lam=0``; ``method_options.value_loss``
``paper`` | ``tanh`` (tiny: tanh, Leela Zero's scale, 4× the paper's), ``method_options.branch_from_branches``
(tiny: True, branches branch too; paper: False), ``method_options.pass_rule`` ``free`` | ``no_losing_pass`` (Leela
Zero's engine check: no pass that loses by the board count; both presets: free).
"""

from __future__ import annotations

import dataclasses

import ml_collections

from zerolab import SearchChanges, default_config, section_dataclass, section_dict

#: The core's training keys of the config (typed by the core's readers: ``RunConfig``, ``Components``).
CORE_KEYS = tuple(default_config().keys())


@dataclasses.dataclass(frozen=True, kw_only=True)
class SaiGoEvaluationConfig:
    """sai-go's ``evaluation`` section (the rating matches after training), with the tiny preset's values."""

    komi: float = 9.5
    games: int = 20
    search: SearchChanges = SearchChanges.of(num_simulations=16)  # the rated agents' changes to the run's search
    lam: float = 0.0
    # each game's first plies are drawn from the visits, so games differ (the agents have no noise)
    temperature_plies: int = 4
    gnugo_levels: list[int] = dataclasses.field(default_factory=lambda: [1])
    max_game_plies: int = 98


@dataclasses.dataclass(frozen=True, kw_only=True)
class SaiGoConfig:
    """sai-go's own keys (the core's training keys, :data:`CORE_KEYS`, are left to the core's readers): the launcher
    reads them through it (:func:`read_config`), once, at each hook."""

    evaluation: SaiGoEvaluationConfig = SaiGoEvaluationConfig()


def read_config(config: ml_collections.ConfigDict) -> SaiGoConfig:
    """``config``'s own keys typed (:func:`zerolab.section_dataclass`: a ValueError names a key and what it must
    be)."""
    return section_dataclass(SaiGoConfig, config, "sai-go", read_elsewhere=CORE_KEYS)


def get_config(preset: str = "tiny"):
    config = default_config()
    config.game.name = "go"
    config.game.go_size = 7
    config.game.komi = 9.5  # pgx's own komi: unused by SAI's scoring; the evaluation komi
    config.model.name = "sai_go.network:make_sai_network"
    config.model.beta_scale = 10.0  # β = beta_scale / N² · exp(β*)
    config.model.value_hidden = 64
    config.method = "sai_go.train:make_method"
    config.method_options = {"lam": 0.5, "branch_probability": 0.025, "max_branches": 3, "queue_size": 64,
                             "value_loss": "tanh", "branch_from_branches": True, "pass_rule": "free"}
    config.search.kind = "muzero"
    config.search.dirichlet_alpha = 0.03 * 361 / 49
    config.search.dirichlet_fraction = 0.25
    config.selfplay.max_game_plies = 98
    config.evaluation = section_dict(SaiGoEvaluationConfig())
    if preset == "tiny":
        config.iterations = 8
        config.checkpoint.keep_period = 2  # keeps 0, 2, 4, 6, 7, 8: five trained networks for sai-go-positions
        config.model.channels = 32
        config.model.num_blocks = 2
        config.search.num_simulations = 16
        config.selfplay.num_games = 64
        config.selfplay.plies_per_iteration = 128
        config.selfplay.temperature_plies = 8
        config.replay.window_size = 40_000
        config.train.batch_size = 256
        config.train.epochs_per_iteration = 1.0
        config.train.l2_weight = 1e-5
    elif preset == "paper":
        config.iterations = 200
        config.checkpoint.keep_period = 10
        config.model.channels = 128
        config.model.num_blocks = 3
        config.model.dtype = "bfloat16"  # accelerators: the network computes in bfloat16, all else in float32
        config.search.num_simulations = 250
        config.selfplay.num_games = 256
        config.selfplay.plies_per_iteration = 512
        config.selfplay.temperature_plies = 8
        config.replay.window_size = 1_000_000  # ≈ 20k games of ≈ 50 plies
        config.train.batch_size = 512
        config.train.l2_weight = 1e-4
        config.evaluation.games = 100
        config.evaluation.search.num_simulations = 250
        config.evaluation.gnugo_levels = [1, 5, 10]
        config.method_options.value_loss = "paper"
        config.method_options.branch_from_branches = False
    else:
        raise KeyError(preset)
    return config
