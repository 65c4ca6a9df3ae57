"""AlphaGateau against the AlphaZero ResNet, head to head, over several seeds (evidence for the paper's Figure 5).

Both networks train with the same training keys (those of the quickstart: Gardner chess, Gumbel self-play); for each
seed in ``seeds`` each is trained from scratch, then the two final networks play ``match.games`` games with the same
search (half with each colour).  The summary gives each seed's score and the pooled score ± its standard error.

* ``tiny``: one seed, 32 games (a 2-core CPU in about 15 minutes);
* ``evidence``: three seeds × 128 games (about an hour on 2 cores);
* ``paper``: 8×8 chess at alphagateau-speed's paper sizes, one seed, 128 games (accelerators).
"""

from zerolab.train import default_config

ALPHAGATEAU = "alphagateau.network:make_alphagateau"
PAPER_ARCHITECTURE = {"block": "pre_activation", "heads": "paper", "pooling": "paper"}


def get_config(preset: str = "tiny"):
    config = default_config()
    del config["model"]  # two models instead of one
    del config["init_from"]
    config.models = {
        "alphagateau": {"name": ALPHAGATEAU, "embedding_size": 32, "num_blocks": 2, **PAPER_ARCHITECTURE},
        "resnet": {"name": "resnet", "channels": 32, "num_blocks": 2},
    }
    config.seeds = [0]
    config.match = {"games": 32, "num_simulations": 16, "max_game_plies": 256}
    config.compilation_cache = "~/.cache/zerolab/jax-compilation"
    # The quickstart's training (tiny and evidence): 10 iterations of 64 games × 64 plies, 16 simulations.
    config.game.name = "gardner_chess"
    config.iterations = 10
    config.checkpoint.keep_period = 10
    config.search.num_simulations = 16
    config.search.max_num_considered_actions = 8
    config.selfplay.num_games = 64
    config.selfplay.plies_per_iteration = 64
    config.selfplay.temperature_plies = 4
    config.replay.window_size = 20_000
    config.train.batch_size = 128
    if preset == "tiny":
        pass
    elif preset == "evidence":
        config.seeds = [0, 1, 2]
        config.match.games = 128
    elif preset == "paper":
        config.game.name = "chess"
        config.iterations = 500
        for name, width_key in (("alphagateau", "embedding_size"), ("resnet", "channels")):
            config.models[name][width_key] = 128
            config.models[name].num_blocks = 5
        config.search.num_simulations = 128
        config.search.max_num_considered_actions = 16
        config.selfplay.num_games = 256
        config.selfplay.plies_per_iteration = 512
        config.selfplay.max_game_plies = 512
        config.selfplay.temperature_plies = 0
        config.replay.window_size = 1_000_000
        config.train.batch_size = 256
        config.match.games = 128
        config.match.num_simulations = 128
        config.match.max_game_plies = 512
    else:
        raise KeyError(preset)
    return config
