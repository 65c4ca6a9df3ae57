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

4. writes ``elo.json``, ``elo.txt``, ``figures/alphagateau_finetune.png`` (Elo against iterations — 5×5 ones, then
   8×8 ones — and against cumulative training wall-clock) and ``summary.json``.

The 5×5 networks play 8×8 as zerolab :class:`~zerolab.SearchAgent` s built with the 8×8 game and the 5×5
variables: the graph, not the parameters, carries the board size.
"""

from __future__ import annotations

import pathlib
from typing import Any

import ml_collections

from zerolab import default_config, make_game
from zerolab.evaluation import EloPanel, RunComparison
from zerolab.frontends import prepare_experiment, training_config

PRETRAIN_GAME = "gardner_chess"
FINETUNE_GAME = "chess"
UNTRAINED = "untrained"
PRETRAIN_SERIES = "trained on 5×5, played on 8×8"
FINETUNE_SERIES = "fine-tuned on 8×8 from the 5×5 parameters"


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


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict:
    comparison = RunComparison(config, prepare_experiment(config, workdir), make_game(FINETUNE_GAME))
    pretrain = comparison.train("gardner", stage_training_config(config, "pretrain", PRETRAIN_GAME))
    init_from = str(pretrain.directory / "checkpoints" / str(pretrain.last_step))
    finetune = comparison.train("chess", stage_training_config(config, "finetune", FINETUNE_GAME, init_from=init_from))
    pretrained = [comparison.contestant(pretrain, step, UNTRAINED if step == 0 else PRETRAIN_SERIES,
                                        UNTRAINED if step == 0 else None) for step in pretrain.steps]
    finetuned = [comparison.contestant(finetune, step, FINETUNE_SERIES, iteration_offset=pretrain.last_step,
                                       wall_offset=pretrain.wall_seconds[pretrain.last_step])
                 for step in finetune.steps if step]
    book = comparison.rate(pretrained + finetuned)
    print(book.format_table())

    ratings = book.ratings()
    before, final = pretrained[-1], (pretrained + finetuned)[-1]  # the last 5×5 checkpoint, the last one rated

    def stages(x: str) -> dict[str, list]:
        # Each curve starts where its training started: 5×5 from the untrained network, 8×8 from the last 5×5 one.
        series = comparison.series(x)
        series.setdefault(PRETRAIN_SERIES, []).extend(series.pop(UNTRAINED, []))
        if FINETUNE_SERIES in series:
            series[FINETUNE_SERIES].append((float(getattr(before, x)), *ratings[before.name]))
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
        "stages": {"pretrain": pretrain.statistics(), "finetune": finetune.statistics()},
        "before_finetuning": {
            "player": before.name, "rating": ratings[before.name][0], "sigma": ratings[before.name][1],
            "minus_untrained": {"elo": before_minus_untrained[0], "sigma": before_minus_untrained[1]},
        },
        "after_finetuning": {
            "player": final.name, "rating": ratings[final.name][0], "sigma": ratings[final.name][1],
            "minus_before": {"elo": final_minus_before[0], "sigma": final_minus_before[1]},
        },
        "evaluation": config.evaluation.to_dict(),
    }, figure_path)
