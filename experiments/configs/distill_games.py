"""Config of ``python -m experiments run distill-games``: AV vs SV vs BC at an equal number of games — the paper's
Table 2 setting (its Appendix A.3 ablation protocol and Table A2's middle column).

All three predictors train on the targets of the same games (so the action-value set holds about 28 times the
state-value one: one example per legal move), for the same number of steps, as many as pass
``action_value_epochs`` times over the action values (the paper's ablations: 5M steps of 1024, 3.19 epochs of the
action values; its state-value and behavioural-cloning models see their boards ~90 times).  ``distill-targets``
instead trains every predictor ``train.num_steps`` steps, whatever the data — there the action-value model saw 0.18
of its data (distill/README.md).  The keys are ``distill-targets``' plus ``action_value_epochs``.

* ``tiny``: 100 games, half a pass over the action values (about 14,000 steps of 16 for each predictor), 4 games a
  pair (a 2-core CPU in about 15 minutes);
* ``evidence``: 300 games (15 % held out: about 4,000 test boards), one pass over the action values (about 5,300
  of them a training game with its colour mirror, so about 84,000 steps of 16 for each predictor), then 48 games a
  pair — sized for under 2 hours on 2 cores from the distill-targets evidence run's measured 15.8 ms a step at
  load 4–8 (about 67 minutes of training, 6 of data, 10 of evaluation and games);
* ``paper``: ``distill-targets``' paper preset at the paper's 3.19 passes.
"""

from __future__ import annotations

import ml_collections

from experiments.configs import distill_targets


def get_config(preset: str) -> ml_collections.ConfigDict:
    config = distill_targets.get_config("paper" if preset == "paper" else "tiny")
    config.ablations = ml_collections.ConfigDict()
    if preset == "tiny":
        config.generate.num_games = 100
        config.action_value_epochs = 0.5
        return config
    if preset == "evidence":
        config.generate.num_games = 300
        config.data.test_fraction = 0.15
        config.action_value_epochs = 1.0
        config.tournament.games_per_pair = 48
        config.tournament.players = config.predictors
        return config
    if preset == "paper":
        config.action_value_epochs = 3.19
        return config
    raise KeyError(preset)
