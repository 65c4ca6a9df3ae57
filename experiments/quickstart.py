"""Quickstart: train AlphaGateau (or, with ``model.name=resnet``, the AlphaZero ResNet) on Gardner chess, then
measure it honestly.

After training, the final network plays its own iteration-0 network with the same search on both sides, earlier kept
checkpoints play the iteration-0 network too, and the final network plays Fairy-Stockfish at its weakest setting.
All matches go into one Elo book (``elo.json``, mean pinned at 1000), plotted in ``figures/quickstart.png``;
``summary.json`` holds the headline numbers.
"""

from __future__ import annotations

import json
import logging
import pathlib
import time

import jax

from zerolab.training import train
from zerolab.play.agents import EngineAgent, load_search_agent
from zerolab.play.arena import play_match, write_pgn
from zerolab.training.checkpoint import Checkpointer
from zerolab.evaluation.elo import EloBook
from zerolab.training.metrics import MetricsLog
from zerolab.evaluation.plots import new_figure, plot_elo_curves, plot_training_curves, save_figure
from zerolab.evaluation.rating import EvaluationConfig, rated_steps

logger = logging.getLogger(__name__)


def checkpoint_name(step: int) -> str:
    return f"iteration-{step}"


NETWORK_LABELS = {"resnet": "AlphaZero ResNet", "alphagateau.network:make_alphagateau": "AlphaGateau"}


def run(config, workdir: pathlib.Path) -> dict:
    started = time.perf_counter()
    workdir = pathlib.Path(workdir)
    train.run(config, workdir)
    records = MetricsLog(workdir).records()
    training_seconds = records[-1]["wall_s"] if records else 0.0

    evaluation = EvaluationConfig.from_config(config.evaluation)
    options = {"num_simulations": str(evaluation.num_simulations)}
    steps = Checkpointer(workdir / "checkpoints").steps()
    final_step = steps[-1]
    steps = rated_steps(steps, int(config.checkpoint.keep_period) or final_step)  # 0, every period-th, the last
    initial = load_search_agent(workdir, {**options, "step": "0", "name": checkpoint_name(0)})
    game = initial.game
    book = EloBook()
    key = jax.random.key(int(config.seed) + 1)
    final_match = None
    for step in steps[1:]:
        agent = load_search_agent(workdir, {**options, "step": str(step), "name": checkpoint_name(step)})
        num_games = evaluation.games if step == final_step else max(2, (evaluation.games // 4) * 2)
        match = play_match(game, agent, initial, num_games, jax.random.fold_in(key, step),
                           max_game_plies=evaluation.max_game_plies, show_progress=bool(config.progress))
        write_pgn(game, match, workdir / "games" / f"{agent.name}-vs-{initial.name}.pgn")
        book.add_result(match.result)
        logger.info("%s", match.summary())
        if step == final_step:
            final_match, final = match, agent

    engine_summary = {}
    if evaluation.engine and evaluation.engine_games:
        engine = EngineAgent(evaluation.engine, game)
        try:
            engine_match = play_match(game, final, engine, evaluation.engine_games, jax.random.fold_in(key, 2**31 - 1),
                                      max_game_plies=evaluation.max_game_plies, show_progress=bool(config.progress))
        finally:
            engine.close()
        write_pgn(game, engine_match, workdir / "games" / f"{final.name}-vs-engine.pgn")
        book.add_result(engine_match.result)
        engine_summary = {"score_vs_engine": engine_match.score, "games_vs_engine": engine_match.result.games,
                          "engine_result": engine_match.summary(), "engine_fallback_moves": engine.fallback_moves}
    book.save(workdir / "elo.json")
    ratings = book.ratings()
    print(book.format_table())

    figure, axes = new_figure(columns=2)
    curve = [(step, *ratings[checkpoint_name(step)]) for step in steps if checkpoint_name(step) in ratings]
    references = {evaluation.engine: ratings[evaluation.engine]} if evaluation.engine in ratings else {}
    network_label = NETWORK_LABELS.get(config.model.name, config.model.name)
    plot_elo_curves(axes[0, 0], {f"{network_label} (Gardner)": curve}, "iteration", references)
    axes[0, 0].set_title(f"score vs iteration 0: {final_match.score:.2f} over {final_match.result.games} games")
    plot_training_curves(axes[0, 1], records)
    figure_path = save_figure(figure, workdir / "figures" / "quickstart.png")

    summary = {
        "iterations": final_step,
        "frames": records[-1]["frames"] if records else 0,
        "training_wall_s": training_seconds,
        "score_vs_initial": final_match.score,
        "games_vs_initial": final_match.result.games,
        "result_vs_initial": final_match.summary(),
        "engine": evaluation.engine,
        **engine_summary,
        "elo": {name: {"rating": r, "sigma": s} for name, (r, s) in ratings.items()},
        "figure": str(figure_path),
        "wall_s": time.perf_counter() - started,
    }
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
