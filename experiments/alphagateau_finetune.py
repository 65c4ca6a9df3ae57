"""Transfer: AlphaGateau trained on 5×5 Gardner chess, played on 8×8 untouched, then fine-tuned on 8×8 (Figure 6).

``run(config, workdir)``:

1. trains AlphaGateau on Gardner chess in ``workdir/gardner`` (``config.pretrain``);
2. fine-tunes it on 8×8 chess in ``workdir/chess``, starting from the last 5×5 checkpoint's parameters with a fresh
   optimiser (zerolab's ``init_from``; ``config.finetune``); both runs resume when rerun;
3. rates on 8×8, in this order, with Algorithm 2 and one Elo book (WLS, ±2σ; the "compare runs" recipe,
   :class:`zerolab.evaluation.RunComparison`):

   * ``untrained`` — the 5×5 run's iteration 0, i.e. an untrained AlphaGateau, the reference;
   * ``gardner@k`` — the 5×5 checkpoints (every ``pretrain.checkpoint.keep_period``-th and the last), played on
     8×8 without any 8×8 training: the last one is the 5×5 model's 8×8 rating before fine-tuning;
   * ``chess@k`` — the fine-tuning checkpoints (every ``finetune.checkpoint.keep_period``-th and the last; its
     iteration 0 is the last 5×5 checkpoint itself, already rated);
   * ``scratch@k`` — with ``config.scratch``, the control: the 8×8 stage trained again in ``workdir/scratch`` with
     the same keys and seed from an untrained network (the one the 5×5 stage started from: AlphaGateau's
     parameters do not depend on the board), drawn at the same 8×8 iterations as the fine-tuning;

4. when ``config.match.games`` > 0, plays two head-to-head matches on 8×8 (``play_pairings`` in
   ``workdir/head-to-head``: ``matches.json``, ``elo.json``, ``games/*.pgn``; not played again on a rerun): the last
   5×5 checkpoint against the untrained network (the transfer) and the last fine-tuned checkpoint against that 5×5
   checkpoint (the fine-tuning), each ``match.games`` games, half with each colour, ``match.search.num_simulations``,
   a draw at ``match.max_game_plies``; with ``config.scratch`` a third, the last fine-tuned checkpoint against the
   last from-scratch one (the control: the paper's claim is that pre-training on 5×5 then fine-tuning beats
   training 8×8 from scratch at equal 8×8 iterations);
5. writes ``elo.json``, ``elo.txt``, ``figures/alphagateau_finetune.png`` (Elo against iterations — 5×5 ones, then
   8×8 ones — and against cumulative training wall-clock) and ``summary.json`` (with ``head_to_head``: each match's
   W/D/L, score ± se, Elo ± se and its capped games; and ``selfplay``: each stage's finished, decisive and drawn
   self-play games, the draws including those stopped at ``max_game_plies``).

The 5×5 networks play 8×8 as zerolab :class:`~zerolab.SearchAgent` s built with the 8×8 game and the 5×5
variables: the graph, not the parameters, carries the board size.
"""

from __future__ import annotations

import pathlib
from typing import Any

import ml_collections

from alphagateau import score_statistics
from zerolab import default_config, make_game
from zerolab.evaluation import (
    EloPanel,
    EvaluationConfig,
    Pairing,
    PairingRecord,
    RunComparison,
    TrainedRun,
    checkpoint_loader,
    play_pairings,
)
from zerolab.frontends import prepare_experiment, training_config
from zerolab.training import MetricsLog

from experiments.common.experiment import Experiment
from experiments.common.results import Quantity

PRETRAIN_GAME = "gardner_chess"
FINETUNE_GAME = "chess"
UNTRAINED = "untrained"
SCRATCH = "scratch"
PRETRAIN_SERIES = "trained on 5×5, played on 8×8"
FINETUNE_SERIES = "fine-tuned on 8×8 from the 5×5 parameters"
SCRATCH_SERIES = "trained on 8×8 from scratch (the control)"
HEAD_TO_HEAD_DIRECTORY = "head-to-head"


def stage_training_config(config: ml_collections.ConfigDict, stage: str, game: str, **values: Any):
    """The zerolab training config of one stage: the shared ``seed``, ``model``, ``search``, ``progress`` and the
    stage's own keys."""
    sections = {"seed": config.seed, "search": config.search, "progress": config.progress}
    sections.update(config[stage].items())
    return training_config(sections, config.model, game=ml_collections.ConfigDict(
        {**default_config().game.to_dict(), "name": game}), **values)


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


def head_to_head_pairings(before: str, final: str, games: int, scratch: str | None = None) -> list[Pairing]:
    """The transfer (the last 5×5 network against the untrained one) and the fine-tuning (the last fine-tuned network
    against that 5×5 one) on 8×8, ``games`` games each; with ``scratch`` (the last from-scratch 8×8 network), the
    control: the last fine-tuned network against it."""
    pairings = [Pairing(before, UNTRAINED, games), Pairing(final, before, games)]
    if scratch is not None:
        pairings.append(Pairing(final, scratch, games))
    return pairings


def check_config(config: ml_collections.ConfigDict) -> None:
    """The rating (``evaluation``) and head-to-head (``match``, unless its games are 0) sections, before the run
    directory is made; the training runs are the core's to check."""
    EvaluationConfig.from_config(config.evaluation)
    if config.match.games != 0:
        EvaluationConfig.for_match(config.match)


def play_head_to_head(config: ml_collections.ConfigDict, comparison: RunComparison, pretrain: TrainedRun,
                      finetune: TrainedRun, before: str, final: str,
                      scratch: TrainedRun | None = None) -> dict[str, dict[str, Any]]:
    """The head-to-head matches of :func:`head_to_head_pairings` on 8×8 (``config.match``; none when its ``games``
    is 0) in ``workdir/head-to-head``, each summarised by :func:`head_to_head_summary` and printed; ``scratch`` (the
    control run) adds the last fine-tuned checkpoint against its last one."""
    games = config.match.games
    if games <= 0:
        return {}
    match = EvaluationConfig.for_match(config.match)
    checkpoints = {UNTRAINED: (pretrain, 0), before: (pretrain, pretrain.last_step)}
    if final != before:
        checkpoints[final] = (finetune, finetune.last_step)
    scratch_name = None
    if scratch is not None:
        scratch_name = f"{scratch.name}@{scratch.last_step}"
        checkpoints[scratch_name] = (scratch, scratch.last_step)
    loaders = {name: checkpoint_loader(run.directory, step, comparison.game, match, name, comparison.search_options)
               for name, (run, step) in checkpoints.items()}
    _, records = play_pairings(head_to_head_pairings(before, final, games, scratch_name), loaders, comparison.game,
                               comparison.workdir / HEAD_TO_HEAD_DIRECTORY, max_game_plies=match.max_game_plies,
                               seed=config.seed + 2, show_progress=config.progress,
                               event="AlphaGateau 5×5 → 8×8, head to head")
    head_to_head = {label: head_to_head_summary(record) for label, record in records.items()}
    print("\n".join(f"{label}: {h['wins']} W {h['draws']} D {h['losses']} L, score {h['score']:.3f} ± "
                    f"{h['score_se']:.3f}, Elo {h['elo']:+.0f} ± {h['elo_se']:.0f} (se), {h['capped']} of "
                    f"{h['games']} capped" for label, h in head_to_head.items()))
    return head_to_head


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict:
    comparison = RunComparison(config, prepare_experiment(config, workdir), make_game(FINETUNE_GAME))
    pretrain = comparison.train("gardner", stage_training_config(config, "pretrain", PRETRAIN_GAME))
    init_from = str(pretrain.directory / "checkpoints" / str(pretrain.last_step))
    finetune = comparison.train("chess", stage_training_config(config, "finetune", FINETUNE_GAME, init_from=init_from))
    scratch = (comparison.train(SCRATCH, stage_training_config(config, "finetune", FINETUNE_GAME))
               if config.scratch else None)
    pretrained = [comparison.contestant(pretrain, step, UNTRAINED if step == 0 else PRETRAIN_SERIES,
                                        UNTRAINED if step == 0 else None) for step in pretrain.steps]
    finetuned = [comparison.contestant(finetune, step, FINETUNE_SERIES, iteration_offset=pretrain.last_step,
                                       wall_offset=pretrain.wall_seconds[pretrain.last_step])
                 for step in finetune.steps if step]
    from_scratch = [] if scratch is None else [
        comparison.contestant(scratch, step, SCRATCH_SERIES, iteration_offset=pretrain.last_step)
        for step in scratch.steps if step]  # its step 0 is the untrained network, already rated
    before, final = pretrained[-1], (pretrained + finetuned)[-1]  # the last 5×5 checkpoint, the last one rated
    head_to_head = play_head_to_head(config, comparison, pretrain, finetune, before.name, final.name, scratch)
    book = comparison.rate(pretrained + finetuned + from_scratch)
    print(book.format_table())

    ratings = book.ratings()

    def stages(x: str) -> dict[str, list]:
        # Each curve starts where its training started: 5×5 from the untrained network, 8×8 from the last 5×5 one.
        series = comparison.series(x)
        series.setdefault(PRETRAIN_SERIES, []).extend(series.pop(UNTRAINED, []))
        if FINETUNE_SERIES in series:
            series[FINETUNE_SERIES].append((float(getattr(before, x)), *ratings[before.name]))
        if SCRATCH_SERIES in series and x == "iteration":  # 8×8 iteration 0 of the control: the untrained network
            series[SCRATCH_SERIES].append((float(before.iteration), *ratings[UNTRAINED]))
        return series

    untrained = {"untrained AlphaGateau": ratings[UNTRAINED]}
    figure_path = comparison.plot("alphagateau_finetune.png", [
        EloPanel(stages("iteration"), "iteration (5×5, then 8×8)", "8×8 Elo: 5×5 training, then 8×8 fine-tuning",
                 untrained, before.iteration),
        EloPanel.wall_clock(stages("wall_seconds"), "8×8 Elo against training time", untrained, before.wall_seconds)])

    fit = book.fit()
    before_minus_untrained = fit.difference(before.name, UNTRAINED)
    final_minus_before = fit.difference(final.name, before.name)
    return comparison.write_summary({
        "model": config.model.to_dict(),
        "stages": {"pretrain": pretrain.statistics(), "finetune": finetune.statistics(),
                   **({} if scratch is None else {SCRATCH: scratch.statistics()})},
        "before_finetuning": {
            "player": before.name, "rating": ratings[before.name][0], "sigma": ratings[before.name][1],
            "minus_untrained": {"elo": before_minus_untrained[0], "sigma": before_minus_untrained[1]},
        },
        "after_finetuning": {
            "player": final.name, "rating": ratings[final.name][0], "sigma": ratings[final.name][1],
            "minus_before": {"elo": final_minus_before[0], "sigma": final_minus_before[1]},
        },
        **({} if scratch is None else {"scratch": {"player": from_scratch[-1].name if from_scratch else UNTRAINED}}),
        "head_to_head": head_to_head,
        "selfplay": {name: selfplay_outcomes(MetricsLog(run.directory).records())
                     for name, run in (("pretrain", pretrain), ("finetune", finetune), (SCRATCH, scratch))
                     if run is not None},
        "evaluation": config.evaluation.to_dict(),
        "match": config.match.to_dict(),
    }, figure_path)


def results(summary: dict[str, Any], config: ml_collections.ConfigDict) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): each head-to-head match's score and Elo difference (se over its
    games; one training run each, so no seed-to-seed spread is in them) and the Algorithm 2 ratings (2σ, WLS)."""
    quantities: dict[str, Quantity] = {}
    for head in summary.get("head_to_head", {}).values():
        first, second = head["players"]
        key = ("transfer" if second == UNTRAINED else "control" if second.startswith(SCRATCH + "@") else "finetune")
        quantities[f"{key}_score"] = Quantity(f"score, {first} vs {second}", head["score"], head["score_se"], "se",
                                              "games", head["games"], unit="score")
        quantities[f"{key}_elo"] = Quantity(f"Elo, {first} − {second}", head["elo"], head["elo_se"], "se", "games",
                                            head["games"], unit="Elo", digits=0)
    rated = {"untrained": UNTRAINED, "before_finetuning": summary["before_finetuning"]["player"],
             "after_finetuning": summary["after_finetuning"]["player"]}
    if "scratch" in summary:
        rated["scratch"] = summary["scratch"]["player"]
    for key, player in rated.items():
        rating = summary["elo"][player]
        quantities[f"rating_{key}"] = Quantity(player, rating["rating"], 2 * rating["sigma"], "2σ", "rating games",
                                               int(rating["games"]), unit="rating", digits=0)
    return quantities


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, training_configs=training_configs, results=results)
