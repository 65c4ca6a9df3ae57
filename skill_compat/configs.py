"""The skill-compat experiments' configs (one place for both frameworks' keys; ``experiments/configs/`` picks).

``tiny`` (2 CPU cores): 16 bitstrings (HB: seeds) × 2 colours = 32 games per matchup, S 2,000 nodes, E 5,000, tree
32 simulations, expector evaluations 400 (HB 100), cap 200 plies, 8 plain-chess games.  ``paper`` (GPU + ≥ 16
cores): 5,000 × 2 games, S 50,000 nodes, E 200,000, tree 1,500 simulations, evaluations 10,000 (HB 1,700).
``evidence`` (2 CPU cores, the two rows the tiny runs did not reproduce, 256 games each, no plain chess): in HB the
expector with the paper's 1,700 evaluation nodes (tiny: 100); in STT the tree with PUCT (lc0's search, the paper's)
at 128 simulations (tiny: Gumbel at 32).  Otherwise tiny.

HB's expector (``expector.evaluation``, ``expector.moves``; HB configs only): every preset values a type by the
paper's cptowl of E's centipawns, ties broken by centipawns (``wdl``: Stockfish's W/D/L, the runs recorded before
2026-11-27), over the hand's ``top`` moves of the type (``moves=all``: all of them, an arm beyond the paper).
"""

from __future__ import annotations

import ml_collections

PRESETS = ("tiny", "evidence", "paper")


def framework_config(framework: str, preset: str) -> ml_collections.ConfigDict:
    if framework not in ("stt", "hb"):
        raise ValueError(f"framework must be 'stt' or 'hb', got {framework!r}")
    if preset not in PRESETS:
        raise KeyError(preset)
    hb = framework == "hb"
    config = ml_collections.ConfigDict({
        # batch_games: games played in one lock-step batch; a batch's games are saved when it ends (resume unit)
        "framework": {"name": framework, "seed": 0, "num_bitstrings": 16, "max_game_plies": 200,
                      "batch_games": 8},
        "seniors": ["tree", "expector", "junior"] + (["hand"] if hb else []),
        "senior": {"engine": "stockfish", "nodes": 2000, "threads": 1},
        "evaluator": {"nodes": 5000},
        "junior": {"weights": "", "mode": "sample" if hb else "argmax"},
        "tree": {"num_simulations": 32, "kind": "gumbel", "max_num_considered_actions": 16},
        "expector": {"eval_nodes": 100 if hb else 400, "candidates": 5, "top": 3, "reference_00_quirk": False,
                     # HB only: cptowl | wdl (how E's line becomes a win probability), top | all (moves of a type)
                     **({"evaluation": "cptowl", "moves": "top"} if hb else {})},
        # the attuned senior: a trained run to play (attuned.run), and how skill-compat-attuned trains it
        "attuned": {"run": "", "policy_target": "played", "train_on": "all"},
        "plain_chess": {"games": 8, "seniors": ["tree", "junior"] + ([] if hb else ["expector"])},
        "progress": True,
    })
    if preset == "evidence":
        config.framework.num_bitstrings = 128
        config.seniors = ["expector"] if hb else ["tree"]
        config.plain_chess.seniors = []
        if hb:
            config.expector.eval_nodes = 1700
        else:
            config.tree.num_simulations = 128
            config.tree.kind = "muzero"
    if preset == "paper":
        config.framework.num_bitstrings = 5000
        config.framework.batch_games = 256
        config.senior.nodes = 50_000
        config.evaluator.nodes = 200_000
        config.tree.num_simulations = 1500
        config.tree.kind = "muzero"  # PUCT, as lc0
        config.expector.eval_nodes = 1700 if hb else 10_000
        config.plain_chess.games = 200
    return config


def attuned_config(preset: str, framework: str = "stt") -> ml_collections.ConfigDict:
    """skill-compat-attuned: the framework keys plus ``training`` (and ``seed``).  ``tiny``: 4 iterations × 32 games
    × 48 plies (games capped at 48 plies in training: a capped game's value target is a draw), 16 simulations, Adam
    3e-4.  ``paper``: one iteration of 10,000 games, then about 10,000 steps × 1,024 (7 epochs) at 1e-5 with L2
    5e-5 and SGD with Nesterov momentum 0.9 (the paper's: lc0's training code; the core's ``train.optimizer``)."""
    if preset == "evidence":
        raise KeyError(f"{preset!r}: skill-compat-attuned has no evidence preset yet (tiny, paper)")
    config = framework_config(framework, preset)
    config.seed = 0
    config.seniors = ["attuned"]
    config.plain_chess.seniors = ["attuned"]
    config.training = ml_collections.ConfigDict({
        "base_run": "", "iterations": 4, "num_games": 32, "plies_per_iteration": 48, "max_game_plies": 48,
        "num_simulations": 16, "learning_rate": 3e-4, "batch_size": 256, "epochs_per_iteration": 1.0,
        "l2_weight": 0.0, "optimizer": "adam", "momentum": 0.9})
    if preset == "paper":
        config.training.update({"iterations": 1, "num_games": 10_000, "plies_per_iteration": 512,
                                "max_game_plies": 512, "num_simulations": 1500, "learning_rate": 1e-5,
                                "batch_size": 1024, "epochs_per_iteration": 7.0, "l2_weight": 5e-5,
                                "optimizer": "sgd_nesterov"})
    return config


__all__ = ["attuned_config", "framework_config", "PRESETS"]
