"""Config of ``python -m experiments run distill-targets``: action-value, state-value and behavioural-cloning
predictors trained on the same data (the paper's Table 2, first rows), then rated against each other.

The keys are those of ``distill`` (``experiments/configs/distill.py``) plus ``predictors`` and ``tournament``.
Each predictor sees the same number of steps; one AV step covers one (board, move) pair while SV and BC steps cover
whole boards, as in the paper.
"""

from __future__ import annotations

import ml_collections

from experiments.configs import distill


def tournament_config(games_per_pair: int) -> ml_collections.ConfigDict:
    return ml_collections.ConfigDict({
        "games_per_pair": games_per_pair,  # games between each pair of engines (even; 0: no tournament)
        "max_game_plies": 200,  # longer games are draws
        "temperature": 0.05,  # softmax temperature of the engines over win probabilities in the opening
        "temperature_full_moves": 5,  # the opening: the first 5 full moves
    })


def get_config(preset: str) -> ml_collections.ConfigDict:
    config = distill.get_config(preset)
    config.predictors = ("action_value", "state_value", "behavioral_cloning")
    config.tournament = tournament_config(4 if preset == "tiny" else 400)
    if preset == "tiny":
        config.train.num_steps = 20_000  # a third of the distill run's steps for each of the 3 models
    return config
