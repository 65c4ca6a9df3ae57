"""The runner the skill-compat launchers share: a framework's matchups against Stockfish's team (skill-compat-stt,
-hb) and plain chess, played, scored and summarised in a run directory (the attuned experiment runs it for its
evaluation).  The cast, matchups and summaries are :mod:`skill_compat.experiment`'s; a rerun on the same directory
plays only the missing games."""

from __future__ import annotations

import json
import pathlib
import time
from typing import TYPE_CHECKING, Any

from experiments.common.experiment import Experiment
from experiments.common.results import Quantity
from skill_compat.configs import SttConfig, read_config
from skill_compat.experiment import (
    analyse, build_cast, check_config, check_seniors, markdown_summary, paired_differences, play_matchup, score_row,
    teams,
)
from skill_compat.frameworks import bitstrings_for_run
from zerolab.training import growing_leaves, record_run_config

if TYPE_CHECKING:
    from zerolab import ProgramSection

#: A rerun may raise the framework's bitstrings without --allow-config-change: games are played per bitstring, the
#: first ones the same at any count, so more extends the run (the ``growing_leaves`` of
#: :func:`framework_experiment`'s declaration).
FRAMEWORK_GROWING_LEAVES = ("num_bitstrings",)


def run_framework_experiment(given, workdir: str | pathlib.Path, config_class: type[SttConfig]) -> dict:
    """The skill-compat-stt / -hb experiment in ``workdir`` (its files: :mod:`skill_compat.experiment`); ``given``
    (a ConfigDict) is recorded as the run's config and read once as ``config_class``, the launcher's
    (:func:`skill_compat.configs.read_config`: :class:`~skill_compat.configs.SttConfig`, ``HbConfig`` or the attuned
    run's ``AttunedEvaluationConfig``)."""
    config = read_config(given, config_class)
    check_config(config)
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    framework = config.framework.name
    seniors = check_seniors(framework, config.seniors)
    if config.attuned.run and "attuned" not in seniors:
        seniors.append("attuned")
    plain_seniors = check_seniors(framework, config.plain_chess.seniors)
    max_game_plies = config.framework.max_game_plies
    pairings = config.framework.num_bitstrings
    bitstrings = bitstrings_for_run(workdir, config.framework.seed, pairings, max_game_plies) \
        if framework == "stt" else None
    with growing_leaves(FRAMEWORK_GROWING_LEAVES):
        record_run_config(workdir, given)
    cast = build_cast(config)
    started = time.perf_counter()
    summary: dict[str, Any] = {"framework": framework, "matchups": {}, "plain_chess": {}}
    matchups = {}
    try:
        for name in seniors:
            focal, alter = teams(cast, framework, name)
            begun = time.perf_counter()
            files = play_matchup(cast, workdir / "matchups" / name, focal, alter, 2 * pairings,
                                 config.framework.batch_games, max_game_plies, config.framework.seed, bitstrings,
                                 config.progress)
            matchups[name] = files
            summary["matchups"][name] = {**score_row(files), "seconds_this_run": time.perf_counter() - begun,
                                         **analyse(framework, files)}
        for name in plain_seniors:
            if name in ("hand",) or (framework == "hb" and name == "expector"):
                continue  # they name piece types, they do not play chess alone
            focal, alter = teams(cast, framework, name, plain=True)
            files = play_matchup(cast, workdir / "plain" / name, focal, alter, config.plain_chess.games,
                                 config.framework.batch_games, max_game_plies, config.framework.seed + 1, None,
                                 config.progress)
            summary["plain_chess"][name] = score_row(files)
    finally:
        cast.close()
    summary["paired_differences"] = paired_differences(matchups)
    summary["seconds_this_run"] = time.perf_counter() - started
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    (workdir / "tables.md").write_text(markdown_summary(summary))
    return summary


def framework_results(summary: dict, config) -> dict[str, Quantity]:
    """The headline quantities of skill-compat-stt / -hb (``results.json``): each focal senior's win-share against
    Stockfish's team (se over its games) and each two seniors' paired difference (se over the game slots both
    played: the same bitstrings or seeds and colours)."""
    framework = summary["framework"].upper()
    quantities = {f"win_share_{name}": Quantity(f"{framework}, {name} as focal senior: win-share", row["win_share"],
                                                row["win_share_se"], "se", "games", row["games"])
                  for name, row in summary["matchups"].items()}
    for label, row in summary.get("paired_differences", {}).items():
        first, second = label.split("-vs-")
        quantities[f"difference_{first}_{second}"] = Quantity(
            f"{framework}, {first} − {second}: win-share", row["difference"], row["se"], "se", "games", row["games"],
            paired=True, unit="score difference")
    return quantities


def framework_experiment(config_class: type[SttConfig], name: str) -> Experiment:
    """The declaration of a framework launcher (skill-compat-stt / -hb): its config read as ``config_class``, run by
    :func:`run_framework_experiment`, checked by :func:`skill_compat.experiment.check_config`, planned by
    :func:`skill_compat.plan.framework_plan` under ``name``, and a rerun may raise its bitstrings."""

    def run(config, workdir) -> dict:
        """The matchups and plain chess in ``workdir``."""
        return run_framework_experiment(config, workdir, config_class)

    def check(config) -> None:
        """Every key, before the run directory is made."""
        check_config(read_config(config, config_class))

    def programs(config) -> list[ProgramSection]:
        """The framework games' JAX programs and their calls (upper bounds), declared for ``plan``."""
        from skill_compat.plan import framework_plan

        return [framework_plan(read_config(config, config_class), name)]

    return Experiment(run=run, check_config=check, programs=programs, results=framework_results,
                      growing_leaves=FRAMEWORK_GROWING_LEAVES)
