"""``python -m experiments run distill-targets``: AV vs SV vs BC on the same data (the paper's Table 2, first rows).

Writes ``WORKDIR/data/``, one run directory per predictor (``WORKDIR/action_value/`` …), the tournament's Elo book
``WORKDIR/elo.json`` and ``summary.json``: ``positions``, ``baselines``, ``variants`` (per predictor: action
accuracy, Kendall's τ, log-loss — of its own target, so not comparable across predictors —, puzzle accuracy when
``puzzles=PATH`` is given, and Elo ± σ) and ``tournament``.  Reruns resume.
"""

from __future__ import annotations

import logging
import pathlib
from typing import Any

import ml_collections

from distill.pipeline import compare_variants, plan_variants


def plan(config: ml_collections.ConfigDict) -> str:
    """``python -m experiments plan distill-targets``: each predictor's training step and scoring pass."""
    return plan_variants(config, {name: variant_overrides(name) for name in config.predictors},
                         "distill-targets: action-value, state-value and behavioural-cloning predictors")


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict[str, Any]:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    return compare_variants(config, workdir, {name: variant_overrides(name) for name in config.predictors})


def variant_overrides(predictor: str) -> dict[str, Any]:
    """``config.train`` overrides of one predictor: the action-token options concern the action-value one only."""
    if predictor == "action_value":
        return {"predictor": predictor}
    return {"predictor": predictor, "action_embedding": "table", "mark_action_squares": False}
