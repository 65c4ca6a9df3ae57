"""contempt-selfplay (search-contempt, Figures 2–4): how decisive and how varied self-play is under search-contempt
(N_scl 1, 2, 5, 10, 32 with the τ1 schedule) and under PUCT (τ1, τ2, constant τ 0.3, 0.6, 1).

``tiny``: Gardner chess with the contempt-odds base network, 64 simulations, 64 games per setting (the first game of
each of 64 self-play lanes, capped at 100 plies: a capped game is a draw, and counted).  ``paper``: 8×8 from a
converted maia-1900 run (``network=RUN``), 1000 simulations, 100 games.
"""

import ml_collections

from contempt_search import TEMPERATURE_SCHEDULES


def get_config(preset: str = "tiny"):
    config = ml_collections.ConfigDict({
        "seed": 0,
        "network": "runs/contempt-base",
        "base_config": "quickstart",
        "base_overrides": ["model.name=resnet"],
        "simulations": 64,
        "kind": "muzero",
        "sc_limits": [1, 2, 5, 10, 32],
        "puct_temperatures": ["tau1", "tau2", "0.3", "0.6", "1.0"],  # a schedule's name or a constant τ
        # τ schedules over full moves: (start, delay, decay, end, cutoff), zerolab.selfplay.SelfPlayConfig's fields
        **{name: list(schedule) for name, schedule in TEMPERATURE_SCHEDULES.items()},
        "games": 64,
        "max_game_plies": 100,
        "repeat_moves": 40,
        "bootstrap_resamples": 2000,
        "progress": True,
    })
    if preset == "tiny":
        return config
    if preset == "paper":
        config.network = ""
        config.base_config = ""
        config.base_overrides = []
        config.simulations = 1000
        config.games = 100
        config.max_game_plies = 512
        return config
    raise KeyError(preset)
