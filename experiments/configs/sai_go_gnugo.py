"""sai-go-gnugo: an SAI network at λ ∈ {0, 0.5, 1} against GNU Go, both colours at komi 9.5, with the margins.

``network`` is an SAI run directory (default: the sai-go tiny run).  Margins against weaker opponents are an
extension (the paper could not assess them on 7×7).
"""

import ml_collections


def get_config(preset: str = "tiny"):
    config = ml_collections.ConfigDict({
        "seed": 0,
        "network": "runs/sai-go-tiny",
        "step": -1,  # -1: the newest checkpoint
        "lambdas": [0.0, 0.5, 1.0],
        "gnugo_levels": [1],
        "games": 8,  # per (λ, level): half with each colour
        "komi": 9.5,
        "simulations": 16,
        "temperature_plies": 4,  # the first plies are drawn from the visits: games differ
        "max_game_plies": 98,
        "progress": True,
    })
    if preset == "tiny":
        return config
    if preset == "paper":
        config.network = "runs/sai-go-paper"
        config.gnugo_levels = [1, 5, 10]
        config.games = 100
        config.simulations = 250
        return config
    raise KeyError(preset)
