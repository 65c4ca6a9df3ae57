"""``python -m experiments run distill-games``: AV vs SV vs BC trained on the same games for the same number of steps,
as many as pass ``action_value_epochs`` over the action values (the paper's Table 2 setting;
``experiments/configs/distill_games.py``).  The outputs are ``distill-targets``' (its module docstring), with
``summary.json``'s ``equal_steps``: the steps each predictor trained."""

from __future__ import annotations

import logging
import pathlib
from typing import Any

import ml_collections

from distill.pipeline import plan_variants
from experiments.common.experiment import Experiment
from experiments.common.distill import check_comparison, compare_variants, predictor_variants
from experiments.common.distill import variant_results as results  # results.json's headline (python -m experiments)
from zerolab import ProgramSection


def check_config(config: ml_collections.ConfigDict) -> None:
    """Every variant's settings and the tournament section, before the run directory is made."""
    check_comparison(config, predictor_variants(config))


def programs(config: ml_collections.ConfigDict) -> list[ProgramSection]:
    """The sections of ``python -m experiments plan distill-games``, declared (the command formats them): each
    predictor's training step and scoring pass (the steps are the data's: ``train.num_steps`` stands in for them
    here)."""
    return [plan_variants(config, predictor_variants(config), "distill-games: AV, SV and BC at equal games")]


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict[str, Any]:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    return compare_variants(config, workdir, predictor_variants(config), show_progress=config.progress)


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, programs=programs, results=results)
