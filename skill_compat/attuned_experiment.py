"""skill-compat-attuned: fine-tune maia-1900 in a framework with the core's training loop, then play it.

1. ``WORKDIR/maia-base``: maia-1900 converted to a zerolab run (step 0), unless ``training.base_run`` names one.
2. ``WORKDIR/train``: ``zerolab.train.run`` with ``init_from`` the base, ``method = skill_compat.attuned:make_method``
   (the framework's move rule in the jitted, sharded self-play scan; the frozen junior passed as a jit argument), the
   Gumbel search of ``training.num_simulations`` and ``training.optimizer`` (tiny: Adam; paper: SGD with Nesterov
   momentum ``training.momentum``, as the paper fine-tunes) at ``training.learning_rate``.  Resumable like any run.
3. ``WORKDIR/eval``: the framework experiment with the trained run as ``attuned`` against S's team, and attuned
   against tree's team on the same bitstrings/seeds; plain chess against S.  ``summary.json`` adds the jitted
   self-play moves/s (iterations after the first, which compiles) beside the host games' (the core's arena).
"""

from __future__ import annotations

import json
import math
import pathlib
import time

import ml_collections
import numpy as np

from skill_compat.experiment import (
    build_cast,
    markdown_summary,
    play_matchup,
    run_framework_experiment,
    score_row,
    teams,
)
from skill_compat.frameworks import bitstrings_for_run
from zerolab import convert_to_run, default_config, train

LC0_NETWORK = "zerolab.networks.lc0.network:make_lc0"


def training_config(config, base_run: pathlib.Path) -> ml_collections.ConfigDict:
    """The core training run's config (its model architecture read from the base run)."""
    base = json.loads((base_run / "config.json").read_text())
    run = default_config()
    run.seed = int(config.seed)
    run.iterations = int(config.training.iterations)
    run.game.name = "chess:lc0"
    run.model = ml_collections.ConfigDict(base["model"])
    run.search.num_simulations = int(config.training.num_simulations)
    run.search.max_num_considered_actions = int(config.tree.max_num_considered_actions)
    run.selfplay.num_games = int(config.training.num_games)
    run.selfplay.plies_per_iteration = int(config.training.plies_per_iteration)
    run.selfplay.max_game_plies = int(config.training.max_game_plies)
    run.method = "skill_compat.attuned:make_method"
    run.method_options = ml_collections.ConfigDict({
        "framework": config.framework.name, "policy_target": config.attuned.policy_target,
        "train_on": config.attuned.train_on, "junior_weights": config.junior.weights})
    run.train.learning_rate = float(config.training.learning_rate)
    run.train.batch_size = int(config.training.batch_size)
    run.train.l2_weight = float(config.training.l2_weight)
    run.train.optimizer = str(config.training.optimizer)
    run.train.momentum = float(config.training.momentum)
    run.train.epochs_per_iteration = float(config.training.epochs_per_iteration)
    run.init_from = str(base_run)
    run.progress = bool(config.progress)
    return run


def jitted_moves_per_second(train_dir: pathlib.Path) -> float:
    """Mean ``selfplay_moves_per_s`` of the iterations after the first (the first one compiles)."""
    path = train_dir / "metrics.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    later = [row["selfplay_moves_per_s"] for row in rows if row["iteration"] > 1]
    return float(np.mean(later)) if later else math.nan


def run_attuned_experiment(config, workdir: str | pathlib.Path) -> dict:
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    base_run = pathlib.Path(config.training.base_run) if config.training.base_run else workdir / "maia-base"
    if not (base_run / "config.json").exists():
        convert_to_run(config.junior.weights or None, base_run)
    train_dir = workdir / "train"
    started = time.perf_counter()
    train.run(training_config(config, base_run), train_dir)
    training_seconds = time.perf_counter() - started

    evaluation = ml_collections.ConfigDict(config.to_dict())
    evaluation.attuned.run = str(train_dir)
    evaluation.seniors = ["attuned"]
    evaluation.plain_chess.seniors = ["attuned"]
    del evaluation["training"]
    summary = run_framework_experiment(evaluation, workdir / "eval")
    # attuned against tree's team on the same bitstrings / seeds
    framework, pairings = config.framework.name, int(config.framework.num_bitstrings)
    max_game_plies = int(config.framework.max_game_plies)
    bitstrings = bitstrings_for_run(workdir / "eval", int(config.framework.seed), pairings, max_game_plies) \
        if framework == "stt" else None
    cast = build_cast(evaluation)
    try:
        focal, alter = teams(cast, framework, "attuned", alter="tree")
        files = play_matchup(cast, workdir / "eval" / "versus_tree" / "attuned", focal, alter, 2 * pairings,
                             int(config.framework.batch_games), max_game_plies, int(config.framework.seed), bitstrings,
                             bool(config.progress))
        summary["versus_tree"] = {"attuned": score_row(files)}
    finally:
        cast.close()
    summary["training"] = {"seconds_this_run": training_seconds,
                           "jitted_selfplay_moves_per_s": jitted_moves_per_second(train_dir),
                           "host_moves_per_s_vs_stockfish": summary["matchups"]["attuned"]["host_moves_per_s"]}
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    text = markdown_summary(summary)
    row = summary["versus_tree"]["attuned"]
    text += (f"\n## Attuned vs tree's team\n\n| games | W | D | L | win-share | se |\n|---|---|---|---|---|---|\n"
             f"| {row['games']} | {row['wins']} | {row['draws']} | {row['losses']} | {row['win_share']:.3f} | "
             f"{row['win_share_se']:.3f} |\n\njitted self-play {summary['training']['jitted_selfplay_moves_per_s']:.1f}"
             f" moves/s; host games (arena) {summary['training']['host_moves_per_s_vs_stockfish']:.2f} moves/s\n")
    (workdir / "tables.md").write_text(text)
    return summary


__all__ = ["jitted_moves_per_second", "run_attuned_experiment", "training_config"]
