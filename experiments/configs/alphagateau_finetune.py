"""AlphaGateau trained on 5×5 Gardner chess, then fine-tuned on 8×8 chess from the same parameters (Figure 6).

``model`` and ``search`` are shared by the two stages (the parameters must fit both boards, and do: nothing in
AlphaGateau depends on the board size).  ``pretrain`` (5×5) and ``finetune`` (8×8) each hold the training keys of
one zerolab run: ``iterations``, ``selfplay``, ``replay``, ``train``, ``checkpoint``.  The fine-tune run starts from
the last 5×5 checkpoint with a fresh optimiser (``init_from``).  ``evaluation`` sets the 8×8 rating matches.

* ``tiny``: a 2-core CPU in about 15 minutes.  8×8 is slow here, so the 8×8 stage plays few, short games (a game
  that reaches ``max_game_plies`` is a draw) and the rating matches are short too.
* ``evidence``: the transfer measured on a 2-core CPU in under 2 hours: the 5×5 stage is the quickstart's (10
  iterations of 64 games × 64 plies), the 8×8 stage plays games long enough to finish (32 games of up to 200 plies
  an iteration, the cap = the plies of an iteration) for 8 iterations, and two head-to-head matches of 128
  games on 8×8 at 16 simulations measure the transfer (the last 5×5 network against the untrained one) and the
  fine-tuning (the last 8×8 network against that 5×5 one); the Algorithm 2 rating is kept small (16-game matches).
  The control (``scratch``): the same 8×8 stage trained from the untrained network, played against the fine-tuned
  one at equal 8×8 iterations (128 games): does pre-training on 5×5 beat training 8×8 from scratch?
* ``paper``: the paper's fine-tuning experiment (hidden size 128, 10 blocks, Adam 1e-3, 1024 games of 256 plies per
  iteration on 5×5 and 256 games of 512 plies on 8×8, 128 simulations, 1M-frame window, batch 256, 100 + 100
  iterations).

Both presets use the paper's architecture (``model.block``, ``model.heads``, ``model.pooling``; see
``alphagateau.network``).
"""

import ml_collections

from zerolab import default_config

STAGE_KEYS = ("iterations", "selfplay", "replay", "train", "checkpoint")


def stage_config(iterations: int, num_games: int, plies: int, window_size: int, batch_size: int,
                 epochs_per_iteration: float, keep_period: int, temperature_plies: int,
                 max_game_plies: int | None = None) -> ml_collections.ConfigDict:
    """The training keys of one stage, starting from zerolab's defaults; ``plies`` a game and an iteration unless
    ``max_game_plies`` is given (then a game may span iterations)."""
    base = default_config()
    stage = ml_collections.ConfigDict({key: base[key] for key in STAGE_KEYS})
    stage.iterations = iterations
    stage.selfplay.num_games = num_games
    stage.selfplay.plies_per_iteration = plies
    stage.selfplay.max_game_plies = plies if max_game_plies is None else max_game_plies
    stage.selfplay.temperature_plies = temperature_plies
    stage.replay.window_size = window_size
    stage.train.batch_size = batch_size
    stage.train.epochs_per_iteration = epochs_per_iteration
    stage.checkpoint.keep_period = keep_period
    return stage


def get_config(preset: str = "tiny"):
    base = default_config()
    config = ml_collections.ConfigDict(
        {
            "seed": base.seed,
            # The paper's architecture (pre-activation blocks, Figures 3-4 heads, equation 7 pooling).
            "model": {"name": "alphagateau.network:make_alphagateau", "channels": 128, "num_blocks": 5,
                      "block": "pre_activation", "heads": "paper", "pooling": "paper", "dtype": "float32"},
            "search": base.search,
            "progress": True,
            "evaluation": {"games": 64, "search": {"num_simulations": 128}, "max_game_plies": 512, "num_opponents": 5},
            # Head to head on 8×8 (0 games: none): the last 5×5 network against the untrained one, and the last
            # fine-tuned network against that 5×5 one.
            "match": {"games": 0, "search": {"num_simulations": 128}, "max_game_plies": 512},
            # The control for the transfer claim: the 8×8 stage trained again from the untrained network (the same
            # ``finetune`` keys and seed, in ``workdir/scratch``), rated beside the fine-tuned run and, when
            # ``match.games`` > 0, played against it at equal 8×8 iterations.
            "scratch": False,
            # Where JAX keeps compiled programs between processes and matches ("" leaves JAX's setting alone).
            "compilation_cache": "~/.cache/zerolab/jax-compilation",
        }
    )
    if preset in ("tiny", "evidence"):
        config.model.channels = 32
        config.model.num_blocks = 2
        config.search.num_simulations = 16
        config.search.max_num_considered_actions = 8
    if preset == "tiny":
        config.pretrain = stage_config(iterations=12, num_games=32, plies=48, window_size=6144, batch_size=128,
                                       epochs_per_iteration=1 / 3, keep_period=6, temperature_plies=4)
        config.pretrain.selfplay.max_game_plies = 256  # a game may span calls (lanes are carried): any cap works
        config.finetune = stage_config(iterations=4, num_games=16, plies=48, window_size=2304, batch_size=64,
                                       epochs_per_iteration=0.25, keep_period=2, temperature_plies=4)
        config.evaluation.games = 8
        config.evaluation.search.num_simulations = 8
        config.evaluation.max_game_plies = 80
    elif preset == "evidence":
        # 5×5: the quickstart's training keys (its tiny preset, 64-ply game cap included: zerolab README).
        config.pretrain = stage_config(iterations=10, num_games=64, plies=64, window_size=20_000, batch_size=128,
                                       epochs_per_iteration=1.0, keep_period=10, temperature_plies=4,
                                       max_game_plies=64)
        # 8×8: games of up to 200 plies (the tiny preset's 48 made nearly every value target a draw): 32 games ×
        # 200 plies an iteration, 8 iterations (51,200 positions), a window of two iterations' frames, half of it
        # trained on an iteration (each frame about once).  Calls as long as the cap are the measured run's
        # (alphagateau/README.md, made when a call dropped its unfinished games); lanes are now carried from call to
        # call, so shorter calls would also give every frame its game's value.
        config.finetune = stage_config(iterations=8, num_games=32, plies=200, window_size=12_800, batch_size=128,
                                       epochs_per_iteration=0.5, keep_period=8, temperature_plies=4)
        config.evaluation.update({"games": 16, "max_game_plies": 200})
        config.evaluation.search.num_simulations = 8
        config.match.update({"games": 128, "max_game_plies": 200})
        config.match.search.num_simulations = 16
        config.scratch = True
    elif preset == "paper":
        config.model.num_blocks = 10  # the paper's fine-tuning model: 10 residual layers, 1.7M parameters
        config.model.dtype = "bfloat16"  # accelerators: the network computes in bfloat16, all else in float32
        config.search.num_simulations = 128
        config.search.max_num_considered_actions = 16
        config.search.gumbel_scale = 1.0
        config.pretrain = stage_config(iterations=100, num_games=1024, plies=256, window_size=1_000_000,
                                       batch_size=256, epochs_per_iteration=1.0, keep_period=10, temperature_plies=0)
        config.finetune = stage_config(iterations=100, num_games=256, plies=512, window_size=1_000_000,
                                       batch_size=256, epochs_per_iteration=1.0, keep_period=10, temperature_plies=0)
        config.match.games = 128
        config.scratch = True
    else:
        raise KeyError(preset)
    return config
