"""sai-go-gnugo: an SAI network at λ ∈ {0, 0.5, 1} against GNU Go, both colours at komi 9.5, with the margins; as
extensions, games at other komi (``komi_values``) and handicap games (``handicaps``: 1 = Black first at
``handicap_komi``, 2 = two fixed stones), both colours.

``network`` is an SAI run directory (default: the sai-go tiny run).  Margins against weaker opponents, other komi and
handicaps are extensions (the paper could not assess them on 7×7).
"""

import ml_collections


def get_config(preset: str = "tiny"):
    config = ml_collections.ConfigDict({
        "seed": 0,
        "network": "runs/sai-go-tiny",
        "step": -1,  # -1: the newest checkpoint
        "lambdas": [0.0, 0.5, 1.0],
        "gnugo_levels": [1, 5, 10],
        "games": 8,  # per (λ, level): half with each colour
        "komi": 9.5,
        "komi_values": [5.5, 13.5],  # extension: the same match at these komi
        "handicaps": [1, 2],  # extension: 1 = Black first at handicap_komi, n >= 2 = n fixed stones (sai_go.handicap)
        "handicap_komi": 0.5,
        "num_simulations": 16,
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
        config.num_simulations = 250
        return config
    raise KeyError(preset)
