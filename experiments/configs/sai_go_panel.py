"""sai-go-panel (SAI Table I, Fig. 1): SAI checkpoints rated by a panel — a fixed-komi AlphaZero run (the stand-in
for the paper's 7×7 Leela Zero nets, trained here with the core trainer at komi 9.5 and the same budget as the SAI
run), GNU Go at several levels and a uniformly random player."""

import ml_collections


def get_config(preset: str = "tiny"):
    config = ml_collections.ConfigDict({
        "seed": 0,
        "sai_run": "runs/sai-go-tiny",
        "landmark_run": "",  # empty: WORKDIR/landmark, trained here
        "landmark_config": "sai-go",
        "landmark_preset": "tiny",  # the preset of landmark_config the landmark run trains at (the SAI run's)
        "landmark_overrides": ["model.name=resnet", "method="],  # AlphaZero, same sizes and search as SAI's tiny run
        "gnugo_levels": [1, 5, 10],
        "random_player": True,
        "games": 8,  # per (SAI checkpoint, panel member): SAI plays White at `komi`, as in the paper
        "komi": 9.5,
        "num_simulations": 16,
        "temperature_plies": 4,
        "max_game_plies": 98,
        "progress": True,
    })
    if preset == "tiny":
        return config
    if preset == "paper":
        config.sai_run = "runs/sai-go-paper"
        config.landmark_preset = "paper"
        config.games = 100
        config.num_simulations = 250
        return config
    raise KeyError(preset)
