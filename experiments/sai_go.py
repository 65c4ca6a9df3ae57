"""sai-go: SAI training on 7×7 Go, then its checkpoints against GNU Go and against its own first network.

Training is the core loop with SAI's method (``sai_go.train``): each iteration's line in ``metrics.jsonl`` has the
losses, the mean β of the searched roots, the mean absolute error of the score estimate α^B − k against the final
margin of counted games, the fresh games' komi (mean and spread), and the branches started, pushed and dropped.
After training, checkpoint 0, every ``checkpoint.keep_period``-th and the last play GNU Go at each of
``evaluation.gnugo_levels`` (both colours at ``evaluation.komi``; the paper rated White only against its panel) and
the last plays checkpoint 0: one schedule of :func:`zerolab.evaluation.pairings.play_pairings`, all results in one
Elo book (``elo.json``; ``matches.json`` per match, games as SGF in ``games/``).  ``figures/sai-go.png`` shows the
training curves and the ratings; ``summary.json`` holds the numbers.  Rerunning on the same directory resumes training, then the matches.
"""

from __future__ import annotations

import functools
import json
import logging
import pathlib
import time

import jax

from zerolab.evaluation.pairings import Pairing, PairingRecord, play_pairings
from zerolab.evaluation.plots import new_figure, plot_elo_curves, plot_training_curves, save_figure
from zerolab.evaluation.rating import checkpoint_steps, rated_steps
from zerolab.games import make_game
from zerolab.play.agents import make_agent
from zerolab.training import train
from zerolab.training.metrics import MetricsLog
from sai_go.agents import SaiAgent

logger = logging.getLogger(__name__)


def checkpoint_name(step: int) -> str:
    return f"sai-{step}"


def colour_scores(record: PairingRecord) -> dict:
    """Player A's score as Black (moving first) and as White (komi favours White), for the colours it played."""
    scores = {"black_score": record.first_mover_score, "white_score": record.second_mover_score}
    return {name: score for name, score in scores.items() if score is not None}


def schedule(config, workdir: pathlib.Path, game) -> tuple[list[Pairing], dict, list[int]]:
    """Checkpoint 0, every ``checkpoint.keep_period``-th and the last against GNU Go at each level, then the last
    against checkpoint 0; their agents; the rated steps."""
    evaluation = config.evaluation
    steps = checkpoint_steps(workdir)
    final_step = steps[-1]
    steps = rated_steps(steps, int(config.checkpoint.keep_period) or final_step)
    key = jax.random.key(int(config.seed) + 1)

    def agent(step: int) -> SaiAgent:
        loaded = SaiAgent.from_checkpoint(workdir, step, lam=float(evaluation.lam),
                                          num_simulations=int(evaluation.num_simulations), name=checkpoint_name(step))
        return loaded.with_options(komi=float(evaluation.komi), temperature_plies=int(evaluation.temperature_plies))

    agents = {checkpoint_name(step): functools.partial(agent, step) for step in steps}
    engines = {level: f"gnugo:level={level}" for level in evaluation.gnugo_levels}
    agents.update({spec: functools.partial(make_agent, spec, game) for spec in engines.values()})
    games = int(evaluation.games)
    pairings = [Pairing(checkpoint_name(step), engines[level], games, key=jax.random.fold_in(key, step * 16 + level),
                        label=f"{checkpoint_name(step)}-vs-gnugo-{level}")
                for step in steps for level in evaluation.gnugo_levels]
    if final_step != 0:
        pairings.append(Pairing(checkpoint_name(final_step), checkpoint_name(0), games,
                                key=jax.random.fold_in(key, 2**20)))
    return pairings, agents, steps


def run(config, workdir: pathlib.Path) -> dict:
    started = time.perf_counter()
    workdir = pathlib.Path(workdir)
    train.run(config, workdir)
    records = MetricsLog(workdir).records()
    evaluation = config.evaluation
    game = make_game("go", go_size=int(config.game.go_size), komi=float(evaluation.komi))
    pairings, agents, steps = schedule(config, workdir, game)
    book, matches = play_pairings(pairings, agents, game, workdir, max_game_plies=int(evaluation.max_game_plies),
                                  show_progress=bool(config.progress))
    scores = {label.replace("-vs-", " vs "): {"score": record.score, **colour_scores(record)}
              for label, record in matches.items()}
    ratings = book.ratings()
    print(book.format_table())

    figure, axes = new_figure(columns=3)
    curve = [(step, *ratings[checkpoint_name(step)]) for step in steps if checkpoint_name(step) in ratings]
    references = {f"gnugo-{level}": ratings[f"gnugo:level={level}"] for level in evaluation.gnugo_levels
                  if f"gnugo:level={level}" in ratings}
    plot_elo_curves(axes[0, 0], {"SAI (7×7)": curve}, "iteration", references)
    plot_training_curves(axes[0, 1], records, ("loss", "policy_loss", "value_loss"))
    plot_training_curves(axes[0, 2], records, ("mean_beta", "score_estimate_mae", "fresh_komi_mean", "fresh_komi_std"))
    axes[0, 2].set_ylabel("value")
    figure_path = save_figure(figure, workdir / "figures" / "sai-go.png")

    summary = {
        "iterations": steps[-1],
        "frames": records[-1]["frames"] if records else 0,
        "training_wall_s": records[-1]["wall_s"] if records else 0.0,
        "scores": scores,
        "last_record": records[-1] if records else {},
        "elo": {name: {"rating": rating, "sigma": sigma} for name, (rating, sigma) in ratings.items()},
        "figure": str(figure_path),
        "wall_s": time.perf_counter() - started,
    }
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
