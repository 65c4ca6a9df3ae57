"""sai-go-panel (SAI Table I, Fig. 1): a panel evaluation of an SAI run's checkpoints.

The panel: the kept checkpoints of a fixed-komi AlphaZero run (trained here with the core trainer at the SAI run's
sizes, ``landmark_config`` + ``landmark_overrides``, unless ``landmark_run`` names one), GNU Go at
``gnugo_levels`` and a uniformly random player (legal moves, passing only when nothing else is legal).  Every kept SAI
checkpoint plays every member ``games`` games as **White at komi 9.5** (the paper's choice: 9.5 favours White, and its
nets' play as Black degraded once White was near perfect).  Its win-rate vector over the panel goes into a matrix
W [checkpoints × members]; the first component of a covariance PCA of W gives the members' weights (sign: positive
sum), and a checkpoint's **panel score** is its centred win rates projected on them.  All games also go into one Elo
book.  The cells are one schedule of :func:`zerolab.evaluation.pairings.play_pairings` (``matches.json``,
``elo.json``, games as SGF in ``games/``; finished cells are kept on a rerun).  ``panel.json`` holds W, the
weights, the scores, the ratings and each checkpoint's network evaluations ("nodes": frames × (simulations + 1) from
the SAI run's metrics); ``figures/sai-go-panel.png`` plots score and Elo against nodes.

The SAI checkpoints and the landmark ones search as their runs did, changed by the ``search`` section
(``search.num_simulations``): SAI's PUCT without root noise, the landmark's own search with it.
"""

from __future__ import annotations

import functools
import json
import pathlib
from typing import Any

import jax
import numpy as np

from zerolab import Agent, ProgramSection, SearchConfig, make_game, train
from experiments.common.experiment import Experiment
from experiments.common.results import Quantity
from experiments.configs import load_config
from zerolab.evaluation import Pairing, checkpoint_steps, new_figure, play_pairings, rated_steps, save_figure
from zerolab.play import check_agent_spec, load_search_agent, make_agent
from zerolab.training import MetricsLog, RunConfig, RunPlan, check_training_config, evaluations_per_search
from sai_go.agents import SaiAgent
from experiments.common.sai_go import check_play_keys, check_sai_network
from experiments.configs.sai_go_panel import SaiGoPanelConfig, read_config


class RandomAgent(Agent):
    """Uniformly random legal moves; passes only when no other move is legal."""

    name = "random"

    def select_actions(self, states, key, active=None) -> np.ndarray:
        legal = np.asarray(states.legal_action_mask).copy()
        stones = legal[:, :-1]
        legal[:, -1] = ~stones.any(axis=1)
        logits = np.where(legal, 0.0, -np.inf)
        return np.asarray(jax.random.categorical(key, logits))


def panel_scores(win_rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(member weights [M], scores [C])``: the first covariance-PCA component of ``win_rates`` [C, M]."""
    centred = win_rates - win_rates.mean(axis=0, keepdims=True)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    weights = components[0]
    if weights.sum() < 0:
        weights = -weights
    return weights, centred @ weights


def programs(config) -> list[RunPlan | ProgramSection]:
    """The sections of ``python -m experiments plan sai-go-panel``, declared (the command formats them): the landmark
    run's training plan where this experiment trains it, then the panel's searches (the SAI checkpoints' λ search, the
    landmark checkpoints' search) and the arena's referee, compiled with abstract inputs; calls are upper bounds
    (every game lasting ``max_game_plies``)."""
    from zerolab.play import make_search_agent
    from zerolab.training import plan_training_run
    from experiments.common.sai_go import run_model
    from sai_go.plan import abstract_model, kept_steps, pgx_step_program

    config = read_config(config)
    sai, sai_source = run_model(config.sai_run)
    landmark_config = load_config(config.landmark_config, config.landmark_preset, config.landmark_overrides)
    sections = []
    if config.landmark_run:
        landmark, landmark_source = run_model(config.landmark_run, config.landmark_config, config.landmark_overrides)
        landmark_steps = kept_steps(landmark.run_config)
    else:
        sections.append(plan_training_run(landmark_config, "landmark (AlphaZero, trained by this experiment)"))
        landmark = abstract_model(landmark_config)
        landmark_source = (f"trained here from {config.landmark_config} at its {config.landmark_preset} preset with "
                           f"{config.landmark_overrides}")
        landmark_steps = kept_steps(landmark_config)
    az_members = rated_steps(landmark_steps, RunConfig.from_config(landmark.run_config).checkpoint.keep_period)
    sai_steps, sai_checkpoints = kept_steps(sai.run_config), RunConfig.from_config(sai.run_config).checkpoint
    members = len(az_members) + len(config.gnugo_levels) + config.random_player
    cells = len(sai_steps) * members
    games, plies = config.games, config.max_game_plies
    game = sai.game(config.komi)
    sai_moves, member_moves = plies // 2, (plies + 1) // 2  # the member moves first (Black), SAI second (White)
    # the run's agents on abstract variables: an SAI checkpoint, and a landmark one (its run's own search, root noise
    # included, changed by the panel's search section)
    sai_player = panel_sai_agent(sai.sai_agent(config.search), config, sai_steps[-1])
    member = make_search_agent(landmark.run_config, landmark.variables, member_options(az_members[-1]),
                               search=config.search)
    programs = [
        sai_player.planned_program(games, cells * sai_moves, name="SAI λ search (White)"),
        member.planned_program(games, len(sai_steps) * len(az_members) * member_moves,
                               name="landmark search (Black)"),
        pgx_step_program("arena step (pgx)", game, games, cells * plies, f"one ply of {games} games"),
    ]
    notes = [
        f"{cells} cells = {len(sai_steps)} SAI checkpoints (steps {sai_steps[0]}..{sai_steps[-1]}: every "
        f"{sai_checkpoints.keep_period}th and the last {sai_checkpoints.keep}) × "
        f"{members} members ({len(az_members)} landmark checkpoints {az_members}, GNU Go {config.gnugo_levels}"
        + (", random" if config.random_player else "") + f"); {games} games a cell in one lock-step batch, SAI as "
        f"White: ≤ {sai_moves} SAI searches and ≤ {member_moves} member moves a cell (upper bounds: every game "
        f"lasting {plies} plies)",
        f"SAI network: {sai_source} ({sai.run_config.model.num_blocks} blocks × {sai.run_config.model.channels} "
        f"channels), abstract variables; each checkpoint is an argument of the one compiled search",
        f"landmark network: {landmark_source} ({landmark.run_config.model.name}, "
        f"{landmark.run_config.model.num_blocks} blocks × {landmark.run_config.model.channels} channels)",
        "not planned: GNU Go (not a JAX program); the random player (one jax.random.categorical a move, op by op)",
    ]
    sections.append(ProgramSection(f"sai-go-panel: SAI checkpoints against the panel, 7x7 Go at komi {config.komi:g}",
                                   programs, notes))
    return sections


def gnugo_member(level: int, game) -> Agent:
    """GNU Go at ``level``, named ``gnugo-<level>`` in the panel."""
    agent = make_agent(f"gnugo:level={level}", game)
    agent.name = f"gnugo-{level}"
    return agent


def check_config(config) -> None:
    """Every key, before the run directory is made: the SAI run, the landmark (its run, or the training config that
    makes it), the play keys, and GNU Go."""
    config = read_config(config)
    check_sai_network("sai_run", config.sai_run)
    if not config.landmark_run:
        check_training_config(load_config(config.landmark_config, config.landmark_preset, config.landmark_overrides))
    check_play_keys(config)
    check_agent_spec("gnugo", "gnugo")


def run(config, workdir: pathlib.Path) -> dict:
    config = read_config(config)
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    landmark = pathlib.Path(config.landmark_run or workdir / "landmark")
    landmark_config = load_config(config.landmark_config, config.landmark_preset, config.landmark_overrides)
    if not config.landmark_run:
        landmark_config.progress = config.progress
        train.run(landmark_config, landmark)
    game = make_game("go", go_size=7, komi=config.komi)
    key = jax.random.key(config.seed)

    members = {}
    for step in rated_steps(checkpoint_steps(landmark), RunConfig.from_config(landmark_config).checkpoint.keep_period):
        members[f"az-{step}"] = functools.partial(load_search_agent, landmark, member_options(step),
                                                  search=config.search)
    for level in config.gnugo_levels:
        members[f"gnugo-{level}"] = functools.partial(gnugo_member, level, game)
    if config.random_player:
        members["random"] = RandomAgent
    sai_steps = checkpoint_steps(config.sai_run)
    sai_agents = {f"sai-{step}": functools.partial(sai_checkpoint_agent, config, step) for step in sai_steps}
    # every cell: the member as Black (moving first in every game), SAI as White; member by member
    pairings = [Pairing(member, f"sai-{step}", config.games, key=jax.random.fold_in(key, step),
                        alternate_colours=False) for member in members for step in sai_steps]
    book, matches = play_pairings(pairings, {**members, **sai_agents}, game, workdir,
                                  max_game_plies=config.max_game_plies, show_progress=config.progress)

    cells = {f"sai-{step} vs {member}": {"step": step, "member": member,
                                         "games": matches[f"{member}-vs-sai-{step}"].result.games,
                                         "sai_white_wins": matches[f"{member}-vs-sai-{step}"].result.losses}
             for member in members for step in sai_steps}
    names = list(members)
    win_rates = np.array([[cells[f"sai-{step} vs {name}"]["sai_white_wins"] / cells[f"sai-{step} vs {name}"]["games"]
                           for name in names] for step in sai_steps])
    weights, scores = panel_scores(win_rates)
    ratings = book.ratings()
    records = MetricsLog(pathlib.Path(config.sai_run)).records()
    run_config = json.loads((pathlib.Path(config.sai_run) / "config.json").read_text())
    per_frame = evaluations_per_search(SearchConfig.from_config(run_config["search"]).num_simulations)
    nodes = {0: 0, **{record["iteration"]: record["frames"] * per_frame for record in records}}
    results = {"cells": cells, "members": names, "sai_steps": sai_steps, "win_rates": win_rates.tolist(),
               "weights": dict(zip(names, weights.tolist())), "panel_scores": dict(zip(map(str, sai_steps), scores.tolist())),
               "nodes": {str(step): nodes.get(step) for step in sai_steps},
               "elo": {name: {"rating": r, "sigma": s} for name, (r, s) in ratings.items()}}

    figure, axes = new_figure(columns=2)
    x = [nodes.get(step, 0) / 1e6 for step in sai_steps]
    axes[0, 0].plot(x, scores, marker="o")
    axes[0, 0].set(xlabel="network evaluations (millions)", ylabel="panel score (PCA)", title="SAI as White at 9.5")
    elo = [ratings[f"sai-{step}"] for step in sai_steps]
    axes[0, 1].errorbar(x, [r for r, _ in elo], yerr=[2 * s for _, s in elo], marker="o")
    axes[0, 1].set(xlabel="network evaluations (millions)", ylabel="Elo (±2σ)")
    results["figure"] = str(save_figure(figure, workdir / "figures" / "sai-go-panel.png"))
    (workdir / "panel.json").write_text(json.dumps(results, indent=2))
    return {k: v for k, v in results.items() if k != "cells"}


def member_options(step: int) -> dict[str, Any]:
    """A landmark checkpoint's agent options: checkpoint ``step``, named ``az-<step>`` (its search is its run's own,
    root noise included, changed by the panel's ``search`` section)."""
    return {"step": step, "name": f"az-{step}"}


def panel_sai_agent(base: SaiAgent, config: SaiGoPanelConfig, step: int) -> SaiAgent:
    """SAI checkpoint ``step`` (its network in ``base``) with the panel's komi and temperature, named ``sai-<step>``."""
    return base.with_options(komi=config.komi, temperature_plies=config.temperature_plies, name=f"sai-{step}")


def sai_checkpoint_agent(config: SaiGoPanelConfig, step: int) -> SaiAgent:
    """SAI checkpoint ``step`` of ``config.sai_run`` with the panel's search, komi and temperature."""
    base = SaiAgent.from_checkpoint(config.sai_run, step, search=config.search)
    return panel_sai_agent(base, config, step)


def results(summary: dict, config) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): each SAI checkpoint's panel score (the first principal component
    of its win rates against the panel; no ±: one fit over the panel) and its rating in the one Algorithm 2 pool
    (± 2σ)."""
    del config
    quantities: dict[str, Quantity] = {}
    for step in summary["sai_steps"]:
        quantities[f"panel_score_{step}"] = Quantity(f"SAI step {step}, panel score (PCA)",
                                                     summary["panel_scores"][str(step)], digits=2)
        rating, sigma = summary["elo"][f"sai-{step}"]["rating"], summary["elo"][f"sai-{step}"]["sigma"]
        quantities[f"rating_{step}"] = Quantity(f"SAI step {step}, rating (one pool)", rating, 2 * sigma, "2σ",
                                                "panel members", len(summary["members"]), unit="rating", digits=0)
    return quantities


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, programs=programs, results=results)
