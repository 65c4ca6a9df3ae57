"""sai-go-panel (SAI Table I, Fig. 1): a panel evaluation of an SAI run's checkpoints.

The panel: the kept checkpoints of a fixed-komi AlphaZero run (trained here with the core trainer at the SAI run's
sizes, ``landmark_config`` + ``landmark_overrides``, unless ``landmark_run`` names one), GNU Go at
``gnugo_levels`` and a uniformly random player (legal moves, passing only when nothing else is legal).  Every kept SAI
checkpoint plays every member ``games`` games as **White at komi 9.5** (the paper's choice: 9.5 favours White, and its
nets' play as Black degraded once White was near perfect).  Its win-rate vector over the panel goes into a matrix
W [checkpoints × members]; the first component of a covariance PCA of W gives the members' weights (sign: positive
sum), and a checkpoint's **panel score** is its centred win rates projected on them.  All games also go into one Elo
book.  ``results.json`` holds W, the weights, the scores, the ratings and each checkpoint's network evaluations
("nodes": frames × (simulations + 1) from the SAI run's metrics); ``figures/sai-go-panel.png`` plots score and Elo
against nodes.  Finished (checkpoint, member) cells are kept on a rerun.
"""

from __future__ import annotations

import json
import pathlib

import jax
import numpy as np

from zerolab import train
from zerolab.agents import load_search_agent, make_agent
from zerolab.arena import play_games
from zerolab.checkpoint import Checkpointer
from zerolab.config import load_config
from zerolab.elo import EloBook, MatchResult
from zerolab.games import make_game
from zerolab.metrics import MetricsLog
from zerolab.plots import new_figure, save_figure
from zerolab.rating import rated_steps
from sai_go.agents import SaiAgent


class RandomAgent:
    """Uniformly random legal moves; passes only when no other move is legal."""

    name = "random"

    def select_actions(self, states, key) -> np.ndarray:
        legal = np.asarray(states.legal_action_mask).copy()
        stones = legal[:, :-1]
        legal[:, -1] = ~stones.any(axis=1)
        logits = np.where(legal, 0.0, -np.inf)
        return np.asarray(jax.random.categorical(key, logits))

    def new_game(self) -> None:
        pass


def panel_scores(win_rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(member weights [M], scores [C])``: the first covariance-PCA component of ``win_rates`` [C, M]."""
    centred = win_rates - win_rates.mean(axis=0, keepdims=True)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    weights = components[0]
    if weights.sum() < 0:
        weights = -weights
    return weights, centred @ weights


def run(config, workdir: pathlib.Path) -> dict:
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    landmark = pathlib.Path(config.landmark_run or workdir / "landmark")
    if not config.landmark_run:
        landmark_config = load_config(config.landmark_config, "tiny", list(config.landmark_overrides))
        landmark_config.progress = bool(config.progress)
        train.run(landmark_config, landmark)
    game = make_game("go", go_size=7, komi=float(config.komi))
    results_path = workdir / "results.json"
    cells = json.loads(results_path.read_text())["cells"] if results_path.exists() else {}
    key = jax.random.key(int(config.seed))

    members = {}
    landmark_config = load_config(config.landmark_config, "tiny", list(config.landmark_overrides))
    for step in rated_steps(Checkpointer(landmark / "checkpoints").steps(), int(landmark_config.checkpoint.keep_period)):
        members[f"az-{step}"] = lambda step=step: load_search_agent(
            landmark, {"step": str(step), "simulations": str(config.simulations), "name": f"az-{step}"})
    for level in config.gnugo_levels:
        members[f"gnugo-{level}"] = lambda level=level: make_agent(f"gnugo:level={level}", game)
    if config.random_player:
        members["random"] = RandomAgent
    sai_steps = Checkpointer(pathlib.Path(config.sai_run) / "checkpoints").steps()

    for member_name, build in members.items():
        member = None
        try:
            for step in sai_steps:
                cell = f"sai-{step} vs {member_name}"
                if cell in cells:
                    continue
                member = member or build()
                sai = SaiAgent.from_checkpoint(config.sai_run, step, simulations=int(config.simulations),
                                               name=f"sai-{step}").with_options(
                    komi=float(config.komi), temperature_plies=int(config.temperature_plies))
                records = play_games(game, member, sai, int(config.games), jax.random.fold_in(key, step),
                                     int(config.max_game_plies))
                wins = sum(record.first_player_score == 0 for record in records)  # SAI moved second: White
                cells[cell] = {"step": step, "member": member_name, "games": len(records), "sai_white_wins": wins}
                results_path.write_text(json.dumps({"cells": cells}, indent=2))
        finally:
            if member is not None and hasattr(member, "close"):
                member.close()

    names = list(members)
    win_rates = np.array([[cells[f"sai-{step} vs {name}"]["sai_white_wins"] / cells[f"sai-{step} vs {name}"]["games"]
                           for name in names] for step in sai_steps])
    weights, scores = panel_scores(win_rates)
    book = EloBook()
    for cell in cells.values():
        wins = cell["sai_white_wins"]
        book.add_result(MatchResult(f"sai-{cell['step']}", cell["member"], wins=wins, draws=0,
                                    losses=cell["games"] - wins))
    ratings = book.ratings()
    records = MetricsLog(pathlib.Path(config.sai_run)).records()
    run_config = json.loads((pathlib.Path(config.sai_run) / "config.json").read_text())
    per_frame = int(run_config["search"]["num_simulations"]) + 1
    nodes = {0: 0, **{record["iteration"]: record["frames"] * per_frame for record in records}}
    results = {"cells": cells, "members": names, "sai_steps": sai_steps, "win_rates": win_rates.tolist(),
               "weights": dict(zip(names, weights.tolist())), "panel_scores": dict(zip(map(str, sai_steps), scores.tolist())),
               "nodes": {str(step): nodes.get(step) for step in sai_steps},
               "elo": {name: {"rating": r, "sigma": s} for name, (r, s) in ratings.items()}}
    results_path.write_text(json.dumps(results, indent=2))

    figure, axes = new_figure(columns=2)
    x = [nodes.get(step, 0) / 1e6 for step in sai_steps]
    axes[0, 0].plot(x, scores, marker="o")
    axes[0, 0].set(xlabel="network evaluations (millions)", ylabel="panel score (PCA)", title="SAI as White at 9.5")
    elo = [ratings[f"sai-{step}"] for step in sai_steps]
    axes[0, 1].errorbar(x, [r for r, _ in elo], yerr=[2 * s for _, s in elo], marker="o")
    axes[0, 1].set(xlabel="network evaluations (millions)", ylabel="Elo (±2σ)")
    results["figure"] = str(save_figure(figure, workdir / "figures" / "sai-go-panel.png"))
    results_path.write_text(json.dumps(results, indent=2))
    return {k: v for k, v in results.items() if k != "cells"}
