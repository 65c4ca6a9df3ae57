"""Quickstart: AlphaGateau (the GATEAU graph network + Gumbel MuZero self-play) on Gardner chess.

``tiny`` trains on a 2-core CPU in about 12 minutes (710 s for the experiment, 506 s of it training, on an idle
2-core CPU: zerolab/README); ``paper`` uses the AlphaGateau paper's 5×5 settings.
``model.name=resnet`` runs the same with the AlphaZero ResNet baseline (the quickstart's network until
AlphaGateau was measured to train better here: see zerolab/README.md).
"""

from zerolab import default_config


def get_config(preset: str = "tiny"):
    config = default_config()
    config.game.name = "gardner_chess"
    config.model.name = "alphagateau.network:make_alphagateau"  # its width is model.channels, depth num_blocks
    # The AlphaGateau paper's architecture (pre-activation blocks, Figures 3-4 heads, equation 7 pooling); the
    # ResNet (model.name=resnet) ignores these keys.
    config.model.block = "pre_activation"
    config.model.heads = "paper"
    config.model.pooling = "paper"
    config.evaluation = {"games": 64, "search": {"num_simulations": 16}, "engine": "fairy-stockfish:skill=-20",
                         "engine_games": 16, "max_game_plies": 256}
    if preset == "tiny":
        config.iterations = 10
        config.checkpoint.keep_period = 5
        config.model.channels = 32
        config.model.num_blocks = 2
        config.search.num_simulations = 16
        config.search.max_num_considered_actions = 8
        config.selfplay.num_games = 64
        config.selfplay.plies_per_iteration = 64
        # A game's cap (games go on from call to call): at 64 plies the final network scored 0.449 ± 0.036 against
        # the quickstart made before games were carried, at 256 only 0.336 ± 0.033 (its self-play drew 30 % of its
        # games, long shuffles teaching the value head a draw; zerolab/README, issue 45)
        config.selfplay.max_game_plies = 64
        config.selfplay.temperature_plies = 4
        config.replay.window_size = 20_000
        config.train.batch_size = 128
        config.train.epochs_per_iteration = 1.0
    elif preset == "paper":
        config.iterations = 100
        config.checkpoint.keep_period = 10
        config.model.channels = 128
        config.model.num_blocks = 5
        config.model.dtype = "bfloat16"  # accelerators: the network computes in bfloat16, all else in float32
        config.search.num_simulations = 128
        config.selfplay.num_games = 256
        config.selfplay.plies_per_iteration = 256
        config.replay.window_size = 1_000_000
        config.train.batch_size = 256
        config.evaluation.games = 128
        config.evaluation.search.num_simulations = 128
    else:
        raise KeyError(preset)
    return config
