"""Quickstart: train AlphaGateau (or, with ``model.name=resnet``, the AlphaZero ResNet) on Gardner chess, then
measure it honestly.

After training, the final network plays its own iteration-0 network with the same search on both sides, earlier kept
checkpoints play the iteration-0 network too, and the final network plays Fairy-Stockfish at its weakest setting.
The matches are one schedule of :func:`zerolab.evaluation.pairings.play_pairings`: all go into one Elo book
(``elo.json``, mean pinned at 1000; ``matches.json`` per match), plotted in ``figures/quickstart.png``;
``summary.json`` holds the headline numbers.  Rerunning on the same directory resumes training, then the matches.
"""

from __future__ import annotations

import functools
import json
import logging
import pathlib
import time

import jax

from zerolab.evaluation.pairings import Pairing, play_pairings
from zerolab.evaluation.plots import new_figure, plot_elo_curves, plot_training_curves, save_figure
from zerolab.evaluation.rating import EvaluationConfig, checkpoint_agent, checkpoint_steps, rated_steps
from zerolab.games import make_game
from zerolab.play.agents import EngineAgent
from zerolab.training import train
from zerolab.training.metrics import MetricsLog

logger = logging.getLogger(__name__)


def checkpoint_name(step: int) -> str:
    return f"iteration-{step}"


NETWORK_LABELS = {"resnet": "AlphaZero ResNet", "alphagateau.network:make_alphagateau": "AlphaGateau"}


def schedule(config, workdir: pathlib.Path, game) -> tuple[list[Pairing], dict, list[int]]:
    """The matches after training: each rated checkpoint against iteration 0 (the last over ``evaluation.games``
    games, the others over a quarter of that), then the last against ``evaluation.engine``; their agents; the rated
    steps."""
    evaluation = EvaluationConfig.from_config(config.evaluation)
    steps = checkpoint_steps(workdir)
    final_step = steps[-1]
    if final_step == 0:
        raise ValueError(f"{workdir} holds only the initial checkpoint: nothing to rate (iterations={config.iterations})")
    steps = rated_steps(steps, int(config.checkpoint.keep_period) or final_step)  # 0, every period-th, the last
    agents = {checkpoint_name(step): functools.partial(checkpoint_agent, workdir, step, game, evaluation,
                                                       checkpoint_name(step)) for step in steps}
    key = jax.random.key(int(config.seed) + 1)
    pairings = [Pairing(checkpoint_name(step), checkpoint_name(0),
                        evaluation.games if step == final_step else max(2, (evaluation.games // 4) * 2),
                        key=jax.random.fold_in(key, step)) for step in steps[1:]]
    if evaluation.engine and evaluation.engine_games:
        agents[evaluation.engine] = lambda: EngineAgent(evaluation.engine, game)
        pairings.append(Pairing(checkpoint_name(final_step), evaluation.engine, evaluation.engine_games,
                                key=jax.random.fold_in(key, 2**31 - 1), label=f"{checkpoint_name(final_step)}-vs-engine"))
    return pairings, agents, steps


def run(config, workdir: pathlib.Path) -> dict:
    started = time.perf_counter()
    workdir = pathlib.Path(workdir)
    train.run(config, workdir)
    records = MetricsLog(workdir).records()
    evaluation = EvaluationConfig.from_config(config.evaluation)
    game = make_game(config.game.name, go_size=config.game.go_size, komi=config.game.komi)
    pairings, agents, steps = schedule(config, workdir, game)
    book, matches = play_pairings(pairings, agents, game, workdir, max_game_plies=evaluation.max_game_plies,
                                  show_progress=bool(config.progress))
    ratings = book.ratings()
    print(book.format_table())
    final = matches[f"{checkpoint_name(steps[-1])}-vs-{checkpoint_name(0)}"]
    engine = matches.get(f"{checkpoint_name(steps[-1])}-vs-engine")

    figure, axes = new_figure(columns=2)
    curve = [(step, *ratings[checkpoint_name(step)]) for step in steps if checkpoint_name(step) in ratings]
    references = {evaluation.engine: ratings[evaluation.engine]} if evaluation.engine in ratings else {}
    network_label = NETWORK_LABELS.get(config.model.name, config.model.name)
    plot_elo_curves(axes[0, 0], {f"{network_label} (Gardner)": curve}, "iteration", references)
    axes[0, 0].set_title(f"score vs iteration 0: {final.score:.2f} over {final.result.games} games")
    plot_training_curves(axes[0, 1], records)
    figure_path = save_figure(figure, workdir / "figures" / "quickstart.png")

    engine_summary = {} if engine is None else {
        "score_vs_engine": engine.score, "games_vs_engine": engine.result.games, "engine_result": engine.summary(),
        "engine_fallback_moves": engine.fallback_moves[evaluation.engine]}
    summary = {
        "iterations": steps[-1],
        "frames": records[-1]["frames"] if records else 0,
        "training_wall_s": records[-1]["wall_s"] if records else 0.0,
        "score_vs_initial": final.score,
        "games_vs_initial": final.result.games,
        "result_vs_initial": final.summary(),
        "engine": evaluation.engine,
        **engine_summary,
        "elo": {name: {"rating": r, "sigma": s} for name, (r, s) in ratings.items()},
        "figure": str(figure_path),
        "wall_s": time.perf_counter() - started,
    }
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
