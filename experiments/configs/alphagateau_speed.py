"""AlphaGateau against the AlphaZero ResNet under identical training budgets (the paper's Figure 5).

Every training key (game, search, self-play, frame window, optimiser, checkpoints) is shared by the two sub-runs;
only ``models.<name>`` differs.  ``evaluation`` sets the rating matches (Algorithm 2 matchmaking).

* ``tiny``: Gardner chess (5×5) on a 2-core CPU in about 15 minutes for training and rating together. AlphaGateau
  with embedding 32 and 2 blocks, the ResNet with 32 channels and 2 blocks: the paper's rule of the same width and
  depth for both (128 and 5 there), at a size a CPU can train.
* ``paper``: 8×8 chess with the paper's hyper-parameters (hidden size 128, 5 blocks, Adam 1e-3, 256 games × 512
  plies per iteration, 128 simulations, gumbel scale 1.0, 1M-frame window, batch 256, 500 iterations), for
  accelerators.
"""

from zerolab import default_config

ALPHAGATEAU = "alphagateau.network:make_alphagateau"


def get_config(preset: str = "tiny"):
    config = default_config()
    del config["model"]  # two models instead of one
    del config["init_from"]  # both networks start from scratch
    config.models = {
        # The paper's architecture: pre-activation blocks, Figures 3-4 heads, equation 7 pooling.
        "alphagateau": {"name": ALPHAGATEAU, "channels": 128, "num_blocks": 5, "block": "pre_activation",
                        "heads": "paper", "pooling": "paper", "dtype": "float32"},
        "resnet": {"name": "resnet", "channels": 128, "num_blocks": 5, "dtype": "float32"},
    }
    config.evaluation = {
        "games": 64,  # per match, half with each colour
        "search": {"num_simulations": 128},
        "max_game_plies": 512,  # a game this long is a draw
        "num_opponents": 5,  # Algorithm 2
    }
    # Where JAX keeps compiled programs between processes and matches ("" leaves JAX's own setting alone).
    config.compilation_cache = "~/.cache/zerolab/jax-compilation"
    if preset == "tiny":
        config.game.name = "gardner_chess"
        config.iterations = 12
        config.checkpoint.keep_period = 3  # rated: iterations 0, 3, 6, 9, 12
        config.models.alphagateau.channels = 32
        config.models.alphagateau.num_blocks = 2
        config.models.resnet.channels = 32
        config.models.resnet.num_blocks = 2
        config.search.num_simulations = 16
        config.search.max_num_considered_actions = 8
        config.selfplay.num_games = 32
        config.selfplay.plies_per_iteration = 48  # a call; games (up to the 256-ply cap) go on in the next call
        config.selfplay.max_game_plies = 256
        config.selfplay.temperature_plies = 4
        config.replay.window_size = 6144  # four iterations of frames
        config.train.batch_size = 128
        config.train.epochs_per_iteration = 1 / 3  # 16 updates per iteration once the window is full
        config.evaluation.games = 16
        config.evaluation.search.num_simulations = 8
        config.evaluation.max_game_plies = 60
    elif preset == "paper":
        config.game.name = "chess"
        config.models.alphagateau.dtype = config.models.resnet.dtype = "bfloat16"  # accelerators
        config.iterations = 500
        config.checkpoint.keep_period = 10
        config.search.num_simulations = 128
        config.search.max_num_considered_actions = 16
        config.search.gumbel_scale = 1.0
        config.selfplay.num_games = 256
        config.selfplay.plies_per_iteration = 512
        config.selfplay.max_game_plies = 512
        config.replay.window_size = 1_000_000
        config.train.learning_rate = 1e-3
        config.train.batch_size = 256
    else:
        raise KeyError(preset)
    return config
