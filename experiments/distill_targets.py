"""``python -m experiments run distill-targets``: AV vs SV vs BC on the same data (the paper's Table 2, first rows).

Writes ``WORKDIR/data/``, one run directory per variant (``WORKDIR/action_value/`` …), the tournament's Elo book
``WORKDIR/elo.json`` and ``summary.json``: ``positions``, ``baselines``, ``variants`` (per predictor: action
accuracy, Kendall's τ, log-loss — of its own target, so not comparable across predictors —, puzzle accuracy when
``puzzles=PATH`` is given, and Elo ± σ), ``comparisons`` (every pair among the variants and the two baselines: the
mean per-board difference of action accuracy and of Kendall's τ ± its paired standard error on the same test boards,
for all boards and split by whether Stockfish's best move is a capture) and ``tournament``.  Besides the predictors,
``config.ablations`` adds action-value variants trained on the same data (``action_value-<name>``: another bin
count, fewer steps).  Reruns resume.
"""

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
    """The sections of ``python -m experiments plan distill-targets``, declared (the command formats them): each
    variant's training step and scoring pass."""
    return [plan_variants(config, predictor_variants(config),
                          "distill-targets: action-value, state-value and behavioural-cloning predictors")]


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict[str, Any]:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    return compare_variants(config, workdir, predictor_variants(config), show_progress=config.progress)


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, programs=programs, results=results)
