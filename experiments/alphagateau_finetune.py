"""Transfer: AlphaGateau trained on 5×5 Gardner chess, played on 8×8 untouched, then fine-tuned on 8×8 (Figure 6).

``run(config, workdir)``:

1. trains AlphaGateau on Gardner chess in ``workdir/gardner`` (``config.pretrain``);
2. fine-tunes it on 8×8 chess in ``workdir/chess``, starting from the last 5×5 checkpoint's parameters with a fresh
   optimiser (zerolab's ``init_from``; ``config.finetune``); both runs resume when rerun;
3. rates on 8×8, in this order, with Algorithm 2 and one Elo book (WLS, ±2σ):

   * ``untrained`` — the 5×5 run's iteration 0, i.e. an untrained AlphaGateau, the reference;
   * ``gardner@k`` — the 5×5 checkpoints (every ``pretrain.checkpoint.keep_period``-th and the last), played on
     8×8 without any 8×8 training: the last one is the 5×5 model's 8×8 rating before fine-tuning;
   * ``chess@k`` — the fine-tuning checkpoints (every ``finetune.checkpoint.keep_period``-th and the last; its
     iteration 0 is the last 5×5 checkpoint itself, already rated);

4. when ``config.match.games`` > 0, plays two head-to-head matches on 8×8 (``play_pairings`` in
   ``workdir/head-to-head``: ``matches.json``, ``elo.json``, ``games/*.pgn``; not played again on a rerun): the last
   5×5 checkpoint against the untrained network (the transfer) and the last fine-tuned checkpoint against that 5×5
   checkpoint (the fine-tuning), each ``match.games`` games, half with each colour, ``match.num_simulations``,
   a draw at ``match.max_game_plies``;
5. writes ``elo.json``, ``elo.txt``, ``figures/alphagateau_finetune.png`` (Elo against iterations — 5×5 ones, then
   8×8 ones — and against cumulative training wall-clock) and ``summary.json`` (with ``head_to_head``: each match's
   W/D/L, score ± se, Elo ± se and its capped games; and ``selfplay``: each stage's finished, decisive and drawn
   self-play games, the draws including those stopped at ``max_game_plies``).

The 5×5 networks play 8×8 as zerolab :class:`~zerolab.play.agents.SearchAgent` s built with the 8×8 game and the 5×5
variables: the graph, not the parameters, carries the board size.
"""

from __future__ import annotations

import functools
import json
import logging
import pathlib
import time
from typing import Any

import jax
import ml_collections

from alphagateau import score_statistics
from zerolab.evaluation.pairings import Pairing, PairingRecord, play_pairings
from zerolab.training import train
from zerolab.training.metrics import MetricsLog
from zerolab.frontends.experiment_setup import prepare_experiment, training_config
from zerolab.games import make_game
from zerolab.evaluation.plots import new_figure, plot_elo_curves, save_figure
from zerolab.evaluation.rating import (
    Contestant,
    EvaluationConfig,
    checkpoint_agent,
    checkpoint_steps,
    elo_series,
    rate_contestants,
    rated_steps,
    ratings_summary,
    run_statistics,
    training_wall_seconds,
)

logger = logging.getLogger(__name__)

PRETRAIN_GAME = "gardner_chess"
FINETUNE_GAME = "chess"
UNTRAINED = "untrained"
PRETRAIN_SERIES = "trained on 5×5, played on 8×8"
FINETUNE_SERIES = "fine-tuned on 8×8 from the 5×5 parameters"
HEAD_TO_HEAD_DIRECTORY = "head-to-head"


def stage_training_config(config: ml_collections.ConfigDict, stage: str, game: str, **values: Any):
    """The zerolab training config of one stage: the shared ``seed``, ``model``, ``search``, ``progress`` and the
    stage's own keys."""
    sections = {"seed": config.seed, "search": config.search, "progress": config.progress}
    sections.update(config[stage].items())
    return training_config(sections, config.model, game=ml_collections.ConfigDict(
        {**train.default_config().game.to_dict(), "name": game}), **values)


def training_configs(config: ml_collections.ConfigDict) -> dict[str, ml_collections.ConfigDict]:
    """The two stages' training configs, as ``python -m experiments plan`` costs them (the fine-tuning stage's
    ``init_from`` is set by ``run``)."""
    return {"pretrain": stage_training_config(config, "pretrain", PRETRAIN_GAME),
            "finetune": stage_training_config(config, "finetune", FINETUNE_GAME)}


def selfplay_outcomes(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The self-play games of a run's ``metrics.jsonl`` records, all iterations together: games finished, decisive
    (a value target ±1) and drawn ones (0: the draws include the games stopped at ``max_game_plies``), the decisive
    share and the mean length of the finished games."""
    finished = sum(int(record["games_finished"]) for record in records)
    decisive = sum(int(record["first_player_wins"]) + int(record["first_player_losses"]) for record in records)
    plies = sum(float(record["mean_game_length"]) * int(record["games_finished"]) for record in records
                if int(record["games_finished"]))
    return {"games_finished": finished, "decisive": decisive, "draws": finished - decisive,
            "decisive_share": decisive / finished if finished else float("nan"),
            "mean_game_length": plies / finished if finished else float("nan")}


def head_to_head_summary(record: PairingRecord) -> dict[str, Any]:
    """One head-to-head match: W/D/L from its first player's side, the score and the Elo difference it implies, each
    ± its standard error over the games, and the games that reached the ply cap (scored as draws)."""
    result = record.result
    statistics = score_statistics([{"wins": result.wins, "draws": result.draws, "losses": result.losses}])
    return {"players": list(result.players), "wins": result.wins, "draws": result.draws, "losses": result.losses,
            **{key: statistics[key] for key in ("games", "score", "score_se", "elo", "elo_se")},
            "capped": record.capped, "capped_share": record.capped / result.games,
            "first_mover_score": record.first_mover_score, "second_mover_score": record.second_mover_score,
            "wall_s": record.wall_s}


def head_to_head_pairings(before: str, final: str, games: int) -> list[Pairing]:
    """The transfer (the last 5×5 network against the untrained one) and the fine-tuning (the last fine-tuned network
    against that 5×5 one) on 8×8, ``games`` games each."""
    return [Pairing(before, UNTRAINED, games), Pairing(final, before, games)]


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict:
    started = time.perf_counter()
    workdir = prepare_experiment(config, workdir)
    pretrain_directory, finetune_directory = workdir / "gardner", workdir / "chess"

    logger.info("stage 1: %s in %s", PRETRAIN_GAME, pretrain_directory)
    train.run(stage_training_config(config, "pretrain", PRETRAIN_GAME), pretrain_directory)
    pretrain_steps = rated_steps(checkpoint_steps(pretrain_directory), int(config.pretrain.checkpoint.keep_period))
    last_pretrain_step = pretrain_steps[-1]
    logger.info("stage 2: %s in %s from %s@%d", FINETUNE_GAME, finetune_directory, pretrain_directory,
                last_pretrain_step)
    init_from = str(pretrain_directory / "checkpoints" / str(last_pretrain_step))
    train.run(stage_training_config(config, "finetune", FINETUNE_GAME, init_from=init_from), finetune_directory)
    finetune_steps = rated_steps(checkpoint_steps(finetune_directory), int(config.finetune.checkpoint.keep_period))
    statistics = {"pretrain": run_statistics(pretrain_directory), "finetune": run_statistics(finetune_directory)}

    rating_started = time.perf_counter()
    game = make_game(FINETUNE_GAME)
    evaluation = EvaluationConfig.from_config(config.evaluation)
    pretrain_walls = training_wall_seconds(pretrain_directory)
    finetune_walls = training_wall_seconds(finetune_directory)
    pretrain_seconds = pretrain_walls[last_pretrain_step]

    def pretrained(step: int) -> Contestant:
        name = UNTRAINED if step == 0 else f"gardner@{step}"
        return Contestant(name, UNTRAINED if step == 0 else PRETRAIN_SERIES, step, pretrain_walls[step],
                          lambda: checkpoint_agent(pretrain_directory, step, game, evaluation, name))

    def finetuned(step: int) -> Contestant:
        name = f"chess@{step}"
        return Contestant(name, FINETUNE_SERIES, last_pretrain_step + step, pretrain_seconds + finetune_walls[step],
                          lambda: checkpoint_agent(finetune_directory, step, game, evaluation, name))

    contestants = [pretrained(step) for step in pretrain_steps] + [finetuned(step) for step in finetune_steps if step]
    before_name = contestants[len(pretrain_steps) - 1].name  # the last 5×5 checkpoint
    final_name = contestants[-1].name
    head_to_head = {}
    games = int(config.match.games)
    if games > 0:
        match = EvaluationConfig(games=games, max_game_plies=int(config.match.max_game_plies),
                                 num_simulations=int(config.match.num_simulations))
        checkpoints = {UNTRAINED: (pretrain_directory, 0), before_name: (pretrain_directory, last_pretrain_step),
                       final_name: (finetune_directory, finetune_steps[-1])}
        loaders = {name: functools.partial(checkpoint_agent, directory, step, game, match, name)
                   for name, (directory, step) in checkpoints.items()}
        _, records = play_pairings(head_to_head_pairings(before_name, final_name, games), loaders, game,
                                   workdir / HEAD_TO_HEAD_DIRECTORY, max_game_plies=match.max_game_plies,
                                   seed=int(config.seed) + 2, show_progress=bool(config.progress),
                                   event="AlphaGateau 5×5 → 8×8, head to head")
        head_to_head = {label: head_to_head_summary(record) for label, record in records.items()}
        print("\n".join(f"{label}: {h['wins']} W {h['draws']} D {h['losses']} L, score {h['score']:.3f} ± "
                        f"{h['score_se']:.3f}, Elo {h['elo']:+.0f} ± {h['elo_se']:.0f} (se), {h['capped']} of "
                        f"{h['games']} capped" for label, h in head_to_head.items()))

    book, matches = rate_contestants(contestants, game, evaluation, workdir / "elo.json", workdir / "games",
                                     seed=int(config.seed) + 1, show_progress=bool(config.progress))
    rating_seconds = time.perf_counter() - rating_started
    table = book.format_table()  # rate_contestants wrote elo.txt and figures/elo.png
    print(table)

    ratings = book.ratings()
    figure, axes = new_figure(columns=2)
    for column, x, label, scale in ((0, "iteration", "iteration (5×5, then 8×8)", 1.0),
                                    (1, "wall_seconds", "training wall-clock (minutes, compilation included)", 60.0)):
        series = elo_series(book, contestants, x)
        # Each curve starts where its training started: 5×5 from the untrained network, 8×8 from the last 5×5 one.
        series.setdefault(PRETRAIN_SERIES, []).extend(series.pop(UNTRAINED, []))
        before = next(c for c in contestants if c.name == before_name)
        if FINETUNE_SERIES in series:
            series[FINETUNE_SERIES].append((float(getattr(before, x)), *ratings[before_name]))
        series = {name: [(px / scale, r, s) for px, r, s in points] for name, points in series.items()}
        plot_elo_curves(axes[0, column], series, label, {"untrained AlphaGateau": ratings[UNTRAINED]})
        axes[0, column].axvline(getattr(before, x) / scale, color="black", linestyle=":", linewidth=1)
    axes[0, 0].set_title("8×8 Elo: 5×5 training, then 8×8 fine-tuning")
    axes[0, 1].set_title(f"8×8 Elo against training time ({jax.devices()[0].platform})")
    figure_path = save_figure(figure, workdir / "figures" / "alphagateau_finetune.png")

    fit = book.fit()
    before_minus_untrained = fit.difference(before_name, UNTRAINED)
    final_minus_before = fit.difference(final_name, before_name)
    summary = {
        "model": config.model.to_dict(),
        "stages": statistics,
        "elo": ratings_summary(book),
        "elo_table": table,
        "before_finetuning": {
            "player": before_name, "rating": ratings[before_name][0], "sigma": ratings[before_name][1],
            "minus_untrained": {"elo": before_minus_untrained[0], "sigma": before_minus_untrained[1]},
        },
        "after_finetuning": {
            "player": final_name, "rating": ratings[final_name][0], "sigma": ratings[final_name][1],
            "minus_before": {"elo": final_minus_before[0], "sigma": final_minus_before[1]},
        },
        "head_to_head": head_to_head,
        "selfplay": {"pretrain": selfplay_outcomes(MetricsLog(pretrain_directory).records()),
                     "finetune": selfplay_outcomes(MetricsLog(finetune_directory).records())},
        "matches_played_now": matches,
        "evaluation": config.evaluation.to_dict(),
        "match": config.match.to_dict(),
        "rating_wall_s": rating_seconds,
        "figure": str(figure_path),
        "device": f"{jax.devices()[0].platform} × {jax.device_count()}",
        "wall_s": time.perf_counter() - started,
    }
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
