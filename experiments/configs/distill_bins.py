"""Config of ``python -m experiments run distill-bins``: action-value predictors with K = 16, 32, 64 and 128 value
bins on the same data, evaluated and rated against each other in a tournament.

The keys are those of ``distill`` (``experiments/configs/distill.py``) plus ``bin_counts`` and ``tournament``.
"""

from __future__ import annotations

import ml_collections

from experiments.configs import distill
from experiments.configs.distill_targets import tournament_config


def get_config(preset: str) -> ml_collections.ConfigDict:
    config = distill.get_config(preset)
    config.bin_counts = (16, 32, 64, 128)
    config.tournament = tournament_config(4 if preset == "tiny" else 400)
    if preset == "tiny":
        config.train.num_steps = 15_000  # a quarter of the distill run's steps for each of the 4 models
    return config
