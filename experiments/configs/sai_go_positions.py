"""sai-go-positions (SAI Figs. 2–3): what an SAI network's α and β know.

``network`` is an SAI run directory; ``steps`` its checkpoints to use (empty: every kept step but 0, the untrained
network: the tiny run keeps 2, 4, 6, 7 and 8, five trained networks); ``sections`` the parts to run (margin,
komi_curve, endgames).
"""

import ml_collections


def get_config(preset: str = "tiny"):
    config = ml_collections.ConfigDict({
        "seed": 0,
        "network": "runs/sai-go-tiny",
        "steps": [],
        "num_simulations": 16,
        "heldout_games": 64,  # self-play games from the empty board (sampled komi, no branches): α vs final margin
        "komi_offsets": [-6.0, -4.0, -2.0, 0.0, 2.0, 4.0, 6.0],  # around the fair komi ⌊α_∅⌋ + ½
        "games_per_komi": 64,
        "endgame_seeds": 128,  # searches (root noise on) per (endgame, network, λ); five endgames
        "sections": ["margin", "komi_curve", "endgames"],
        "lambdas": [0.0, 0.5, 1.0],
        "progress": True,
    })
    if preset == "tiny":
        return config
    if preset == "paper":
        config.network = "runs/sai-go-paper"
        config.num_simulations = 250
        config.heldout_games = 1024
        config.games_per_komi = 512
        config.endgame_seeds = 1000
        return config
    raise KeyError(preset)
