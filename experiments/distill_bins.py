"""``python -m experiments run distill-bins``: action-value predictors with K = 16/32/64/128 value bins.

Writes ``WORKDIR/data/``, one run directory per bin count (``WORKDIR/bins-16/`` …), the tournament's Elo book
``WORKDIR/elo.json`` and ``summary.json``: ``positions``, ``baselines``, ``variants`` (per bin count: action
accuracy, Kendall's τ, log-loss — over K classes, so not comparable across K —, puzzle accuracy when
``puzzles=PATH`` is given, and Elo ± σ) and ``tournament``.  Reruns resume.
"""

from __future__ import annotations

import logging
import pathlib
from typing import Any

import ml_collections

from distill.pipeline import plan_variants
from experiments.common.experiment import Experiment
from experiments.common.distill import check_comparison, compare_variants
from experiments.common.distill import variant_results as results  # results.json's headline (python -m experiments)
from zerolab import ProgramSection


def variants(config: ml_collections.ConfigDict) -> dict[str, dict[str, Any]]:
    return {f"bins-{count}": {"predictor": "action_value", "num_bins": count} for count in config.bin_counts}


def check_config(config: ml_collections.ConfigDict) -> None:
    """Every variant's settings and the tournament section, before the run directory is made."""
    check_comparison(config, variants(config))


def programs(config: ml_collections.ConfigDict) -> list[ProgramSection]:
    """The sections of ``python -m experiments plan distill-bins``, declared (the command formats them): each bin
    count's training step and scoring pass."""
    return [plan_variants(config, variants(config), "distill-bins: action-value predictors with K value bins")]


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict[str, Any]:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    return compare_variants(config, workdir, variants(config), show_progress=config.progress)


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, programs=programs, results=results)
