"""AlphaGateau against the AlphaZero ResNet, head to head, over seeds (``experiments/configs/alphagateau_versus.py``).

``run(config, workdir)``, for each seed of ``config.seeds``:

1. trains each network of ``config.models`` in ``workdir/seed-<s>/<model>`` with the core's loop (same training
   keys, ``seed`` = s); rerunning resumes;
2. plays the two final networks against each other, ``config.match.games`` games with the same search (half with
   each colour): one pairing of :func:`zerolab.evaluation.play_pairings` in ``workdir/seed-<s>/``
   (``matches.json``, ``elo.json``, ``games/<first>-vs-<second>.pgn``), not played again on a rerun.

``summary.json``: each seed's W/D/L and both runs' training statistics, the pooled score over every game with its
standard error (per-game scores 1, ½, 0), the standard error between seeds, and the Elo difference the pooled score
implies.
"""

from __future__ import annotations

import json
import logging
import math
import pathlib
import time
from typing import Any

import jax
import ml_collections

from alphagateau import score_statistics
from zerolab import make_game, train
from zerolab.evaluation import (
    EvaluationConfig,
    Pairing,
    checkpoint_loader,
    checkpoint_steps,
    play_pairings,
    run_statistics,
)
from zerolab.frontends import prepare_experiment, training_config

from experiments.common.experiment import Experiment
from experiments.configs.alphagateau_versus import read_config
from experiments.common.results import Quantity

logger = logging.getLogger(__name__)


def training_configs(config: ml_collections.ConfigDict, seed: int | None = None) -> dict[str, ml_collections.ConfigDict]:
    """Each network's training config for ``seed`` (default: the first of ``config.seeds``)."""
    seed = read_config(config).seeds[0] if seed is None else seed
    return {name: training_config(config, config.models[name], seed=seed) for name in config.models.keys()}


def check_config(config: ml_collections.ConfigDict) -> None:
    """The seeds and the match section, before the run directory is made; the training runs are the core's to
    check."""
    read_config(config)
    EvaluationConfig.for_match(config.match)


def play_seed(config: ml_collections.ConfigDict, seed: int, directory: pathlib.Path) -> dict[str, Any]:
    """Trains both networks of ``seed`` (resuming) and plays their final checkpoints (once)."""
    runs = training_configs(config, seed)
    for name, run_config in runs.items():
        logger.info("seed %d: training %s in %s", seed, name, directory / name)
        train.run(run_config, directory / name)
    game = make_game(config.game.name, go_size=config.game.go_size, komi=config.game.komi)
    evaluation = EvaluationConfig.for_match(config.match)
    games = evaluation.games
    first, second = list(runs)
    agents = {name: checkpoint_loader(directory / name, checkpoint_steps(directory / name)[-1], game, evaluation, name)
              for name in runs}
    _, records = play_pairings([Pairing(first, second, games, key=jax.random.key(1000 + seed))], agents, game,
                               directory, max_game_plies=evaluation.max_game_plies, show_progress=config.progress,
                               event=f"{first} vs {second}, seed {seed}")
    result = records[f"{first}-vs-{second}"].result
    return {"seed": seed, "players": [first, second], "games": games, "wins": result.wins, "draws": result.draws,
            "losses": result.losses, "training": {name: run_statistics(directory / name) for name in runs}}


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict:
    started = time.perf_counter()
    workdir = prepare_experiment(config, workdir)
    results = [play_seed(config, seed, workdir / f"seed-{seed}") for seed in read_config(config).seeds]
    first, second = results[0]["players"]
    summary = {"players": [first, second], "game": config.game.name, "seeds": [r["seed"] for r in results],
               "matches": [{key: r[key] for key in ("seed", "games", "wins", "draws", "losses")} for r in results],
               "training": {str(r["seed"]): r["training"] for r in results},
               **score_statistics(results), "match": config.match.to_dict(),
               "device": f"{jax.devices()[0].platform} × {jax.device_count()}", "wall_s": time.perf_counter() - started}
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def results(summary: dict, config: ml_collections.ConfigDict) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): the pooled head-to-head score and its Elo difference, with the
    seed as the unit of replication (se between the seeds' scores; the Elo's by the delta method), and the score's
    se over games beside it."""
    first, second = summary["players"]
    seeds = len(summary["seeds"])
    score = summary["score"]
    seed_se = summary["score_se_between_seeds"]
    clipped = min(max(score, 1e-3), 1 - 1e-3)
    return {
        "score": Quantity(f"score, {first} vs {second}", score, seed_se, "se", "seeds", seeds, unit="score"),
        "elo": Quantity(f"Elo, {first} − {second}", summary["elo"],
                        400 / math.log(10) * seed_se / (clipped * (1 - clipped)), "se", "seeds", seeds, unit="Elo",
                        digits=0),
        "score_over_games": Quantity(f"score, {first} vs {second}", score, summary["score_se"], "se", "games",
                                     summary["games"], unit="score"),
    }


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, training_configs=training_configs, results=results)
