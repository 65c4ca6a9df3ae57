"""sai-go: SAI training on 7×7 Go, then its checkpoints against GNU Go and against its own first network.

Training is the core loop with SAI's method (``sai_go.train``): each iteration's line in ``metrics.jsonl`` has the
losses, the mean β of the searched roots, the mean absolute error of the score estimate α^B − k against the final
margin of counted games, the fresh games' komi (mean and spread), and the branches started, pushed and dropped.
After training, checkpoint 0, every ``checkpoint.keep_period``-th and the last play GNU Go at each of
``evaluation.gnugo_levels`` (both colours at ``evaluation.komi``; the paper rated White only against its panel) and
the last plays checkpoint 0; all results go into one Elo book.  ``figures/sai-go.png`` shows the training curves and
the ratings; ``summary.json`` holds the numbers.  Rerunning on the same directory resumes.
"""

from __future__ import annotations

import json
import logging
import pathlib
import time

import jax

from zerolab.training import train
from zerolab.play.arena import play_match, write_pgn
from zerolab.training.checkpoint import Checkpointer
from zerolab.evaluation.elo import EloBook
from zerolab.games import make_game
from zerolab.play.agents import make_agent
from zerolab.training.metrics import MetricsLog
from zerolab.evaluation.plots import new_figure, plot_elo_curves, plot_training_curves, save_figure
from zerolab.evaluation.rating import rated_steps
from sai_go.agents import SaiAgent

logger = logging.getLogger(__name__)


def checkpoint_name(step: int) -> str:
    return f"sai-{step}"


def colour_scores(match, name: str) -> dict:
    """``name``'s score as White and as Black (Black moves first in Go; komi favours White)."""
    by_colour = {"white": [], "black": []}
    for record in match.games:
        as_black = record.first_player == name
        score = record.first_player_score if as_black else 1 - record.first_player_score
        by_colour["black" if as_black else "white"].append(score)
    return {f"{colour}_score": sum(values) / len(values) for colour, values in by_colour.items() if values}


def run(config, workdir: pathlib.Path) -> dict:
    started = time.perf_counter()
    workdir = pathlib.Path(workdir)
    train.run(config, workdir)
    records = MetricsLog(workdir).records()
    evaluation = config.evaluation
    game = make_game("go", go_size=int(config.game.go_size), komi=float(evaluation.komi))
    steps = Checkpointer(workdir / "checkpoints").steps()
    final_step = steps[-1]
    steps = rated_steps(steps, int(config.checkpoint.keep_period) or final_step)
    key = jax.random.key(int(config.seed) + 1)

    def agent(step: int) -> SaiAgent:
        loaded = SaiAgent.from_checkpoint(workdir, step, lam=float(evaluation.lam),
                                          num_simulations=int(evaluation.num_simulations), name=checkpoint_name(step))
        return loaded.with_options(komi=float(evaluation.komi), temperature_plies=int(evaluation.temperature_plies))

    book, scores = EloBook(), {}
    engines = {level: make_agent(f"gnugo:level={level}", game) for level in evaluation.gnugo_levels}
    try:
        for step in steps:
            player = agent(step)
            for level, engine in engines.items():
                match = play_match(game, player, engine, int(evaluation.games), jax.random.fold_in(key, step * 16 + level),
                                   max_game_plies=int(evaluation.max_game_plies), show_progress=bool(config.progress))
                write_pgn(game, match, workdir / "games" / f"{player.name}-vs-gnugo-{level}.sgf")
                book.add_result(match.result)
                scores[f"{player.name} vs gnugo-{level}"] = {"score": match.score, **colour_scores(match, player.name)}
                logger.info("%s", match.summary())
        if final_step != 0:
            match = play_match(game, agent(final_step), agent(0), int(evaluation.games), jax.random.fold_in(key, 2**20),
                               max_game_plies=int(evaluation.max_game_plies), show_progress=bool(config.progress))
            write_pgn(game, match, workdir / "games" / f"{checkpoint_name(final_step)}-vs-{checkpoint_name(0)}.sgf")
            book.add_result(match.result)
            scores[f"{checkpoint_name(final_step)} vs {checkpoint_name(0)}"] = {
                "score": match.score, **colour_scores(match, checkpoint_name(final_step))}
    finally:
        for engine in engines.values():
            engine.close()
    book.save(workdir / "elo.json")
    ratings = book.ratings()
    print(book.format_table())

    figure, axes = new_figure(columns=3)
    curve = [(step, *ratings[checkpoint_name(step)]) for step in steps if checkpoint_name(step) in ratings]
    references = {f"gnugo-{level}": ratings[engine.name] for level, engine in engines.items() if engine.name in ratings}
    plot_elo_curves(axes[0, 0], {"SAI (7×7)": curve}, "iteration", references)
    plot_training_curves(axes[0, 1], records, ("loss", "policy_loss", "value_loss"))
    plot_training_curves(axes[0, 2], records, ("mean_beta", "score_estimate_mae", "fresh_komi_mean", "fresh_komi_std"))
    axes[0, 2].set_ylabel("value")
    figure_path = save_figure(figure, workdir / "figures" / "sai-go.png")

    summary = {
        "iterations": final_step,
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
