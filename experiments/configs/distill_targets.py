"""Config of ``python -m experiments run distill-targets``: action-value, state-value and behavioural-cloning
predictors trained on the same data (the paper's Table 2, first rows), compared board by board, then rated against
each other.

The keys are those of ``distill`` (``experiments/configs/distill.py``) plus ``predictors``, ``ablations`` (extra
action-value variants on the same data: name → ``config.train`` overrides) and ``tournament``.  Each predictor sees
the same number of steps of the same batch size; one AV example is one (board, move) pair while an SV or BC example
is a whole board, so all three see the same number of data points — the paper's control for dataset size
(its appendix B.2, Table A2's right column).

* ``tiny``: 20,000 steps a predictor, 4 games a pair (a 2-core CPU in about 20 minutes);
* ``evidence``: AV vs SV vs BC and the AV-vs-material margin with paired standard errors near 0.004 — 400 games
  (about 5,600 test boards at ``test_fraction`` 0.15), 20,000 steps each, and on the same data two action-value
  ablations for the "why": K = 32 bins, and 60,000 steps (the ``distill`` tiny preset's own run); a 48-game-a-pair
  tournament between the three predictors.  Sized for about 45 minutes on an idle 2-core CPU (distill/README.md);
* ``paper``: the paper's recipe (``distill``'s paper preset), 400 games a pair.
"""

from __future__ import annotations

import ml_collections

from experiments.configs import distill


def tournament_config(games_per_pair: int) -> ml_collections.ConfigDict:
    return ml_collections.ConfigDict({
        "games_per_pair": games_per_pair,  # games between each pair of engines (even; 0: no tournament)
        "players": (),  # the variants that play (empty: all)
        "max_game_plies": 200,  # longer games are draws
        "temperature": 0.05,  # softmax temperature of the engines over win probabilities in the opening
        "temperature_full_moves": 5,  # the opening: the first 5 full moves
    })


def get_config(preset: str) -> ml_collections.ConfigDict:
    config = distill.get_config("paper" if preset == "paper" else "tiny")
    config.predictors = ("action_value", "state_value", "behavioral_cloning")
    config.ablations = ml_collections.ConfigDict()
    config.tournament = tournament_config(400 if preset == "paper" else 4)
    if preset == "paper":
        return config
    config.train.num_steps = 20_000  # a third of the distill run's steps for each of the 3 models
    if preset == "tiny":
        return config
    if preset == "evidence":
        config.generate.num_games = 400
        config.data.test_fraction = 0.15
        config.ablations = ml_collections.ConfigDict({
            "bins_32": {"num_bins": 32},
            "steps_x3": {"num_steps": 3 * config.train.num_steps},  # 60,000: the distill tiny preset's AV run
        })
        config.tournament.games_per_pair = 48
        config.tournament.players = config.predictors
        return config
    raise KeyError(preset)
