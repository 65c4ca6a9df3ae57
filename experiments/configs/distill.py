"""Config of ``python -m experiments run distill``: generate → annotate → build → train → evaluate.

``tiny`` fits a 2-core CPU in about 20 minutes: 200 generated games (about 19,000 boards, 15 % of the games held
out) annotated by Stockfish at 100 nodes per legal move, each training board also seen colour-mirrored, and a
2-layer action-value transformer of width 32 (``cpu-tiny``) whose board tokens carry markers on the action's origin
and destination squares (``mark_action_squares``; without them this model never learnt to value captures —
distill/README.md), trained for 90,000 steps of 16 examples (about 1.5 passes over the ~0.9M training action values;
the earlier 300 games and 60,000 steps were 0.67 of a pass and only level with the material count on fresh data)
with K = 128 value bins at Adam 3e-3 with a cosine decay (K = 128 beat 32 on the same
data: distill/README.md) — on 2 CPU cores this small model at small batches trains on 3.6 times the examples per
second of ``cpu-small`` at 128 (distill/README.md), and 3e-3 learnt faster than 1e-3 in short trials. ``paper`` is the
paper's recipe where it can be followed offline: the 9M model (``train.model_size='270M'`` for the largest), Adam
1e-4, gradient clipping 1, EMA 0.99, K = 128 bins, the paper's action tokens (no square markers), no mirrored boards
and Stockfish at 50 ms per legal move; the paper's data were 10M Lichess games, so at that scale point
``data.pgn_files`` at a Lichess dump instead of generating games.
"""

from __future__ import annotations

import ml_collections


def base_config() -> ml_collections.ConfigDict:
    """Every key of the distill experiments, with the tiny values."""
    return ml_collections.ConfigDict({
        "seed": 0,
        "engine": "stockfish",  # Stockfish name or path, for generating and annotating
        "workers": 2,  # processes for generating and annotating, one Stockfish each
        "generate": {
            "num_games": 200,
            "skill_levels": (0, 3, 6, 10, 20),
            "nodes_per_move": 1000,
            "max_random_opening_plies": 8,
            "random_move_probability": 0.05,
            "max_game_plies": 200,
            "games_per_chunk": 4,
        },
        "annotate": {
            "nodes_per_move": 100,
            "time_per_move": None,
            "hash_megabytes": 16,
            "positions_per_chunk": 64,
        },
        "data": {
            "pgn_files": "",  # a glob of PGN files to annotate instead of generating games
            "test_fraction": 0.15,
            "directory": "",  # where the data go; empty: WORKDIR/data (set it to share data between runs)
            "mirror_train": True,  # also train on each training board's colour mirror (not the paper's; see build)
        },
        "train": {
            "predictor": "action_value",
            "num_bins": 128,
            "model_size": "cpu-tiny",
            "action_embedding": "table",  # or "factored" / "square-tied" (see distill.model; not the paper's)
            "mark_action_squares": True,  # markers on the action's two board squares (distill.model; not the paper's)
            # LayerNorms: "post" is the paper's (the paper preset's); the tiny preset's results were measured with
            # "pre" (the released code's), kept so they stay reproducible.
            "normalization": "pre",
            "dtype": "float32",
            "batch_size": 16,
            "num_steps": 90_000,
            "learning_rate": 3e-3,
            "warmup_steps": 200,
            "schedule": "cosine",
            "gradient_clip": 1.0,
            "ema_decay": 0.99,
            "log_every": 500,
            "checkpoint_every": 5000,
            "keep_checkpoints": 2,
            "loader_workers": 0,
        },
        "evaluate": {
            "max_test_positions": 0,  # 0: every test board
            "decisive_engine": "",  # Stockfish spec for the decisiveness workaround in puzzles, empty: none
        },
        "puzzles": "",  # a Lichess-format puzzle CSV; empty: no puzzle accuracy
        "progress": True,  # progress bars (False for logs of queued runs)
    })


def get_config(preset: str) -> ml_collections.ConfigDict:
    config = base_config()
    if preset == "tiny":
        return config
    if preset == "paper":
        config.generate.num_games = 100_000
        config.generate.nodes_per_move = 20_000
        config.annotate.nodes_per_move = None
        config.annotate.time_per_move = 0.05
        config.annotate.positions_per_chunk = 256
        config.data.test_fraction = 0.01
        config.data.mirror_train = False
        config.train.mark_action_squares = False
        config.train.normalization = "post"
        config.train.dtype = "bfloat16"  # accelerators: the matrix products in bfloat16, all else in float32
        config.train.update({"model_size": "9M", "batch_size": 1024, "num_steps": 1_000_000,
                             "learning_rate": 1e-4, "warmup_steps": 0, "schedule": "constant",
                             "log_every": 1000, "checkpoint_every": 10_000, "loader_workers": 2})
        config.evaluate.max_test_positions = 10_000
        return config
    raise KeyError(preset)
