"""sai-go-positions (SAI Figs. 2–3): α against the exact final margin, the winrate curve against self-play results,
and λ's effect on the choice between two winning moves.

1. **α vs margin** — ``heldout_games`` self-play games of the last network from the empty board (komi sampled as in
   training, no branches, searched at λ = 0): the mean absolute error of the root network's α^B against the final
   area difference, by ply (Black's view; komi cancels).
2. **Winrate curve** — the fair komi k* = ⌊α_∅⌋ + ½ of the last network, then ``games_per_komi`` self-play games at
   each k* + offset: Black's observed winrate against the predicted σ(β_∅(α_∅ − k)) (Fig. 2's comparison, with our
   own network standing in for the reference).
3. **Two winning moves** — a real 7×7 endgame (tests/sai_go's: Black to move at komi −20.5 wins by 20.5 capturing
   at A5, by 13.5 filling the dame D4, by 12.5 passing, by exhaustive count of the position after each): for each
   checkpoint, the root's α, β and the two children's, and the share of ``endgame_seeds`` PUCT searches (root noise
   on) that choose the capture, for each λ.  Only one position (the paper used five, and 13 networks).

``results.json`` holds everything; ``figures/sai-go-positions.png`` the three panels.
"""

from __future__ import annotations

import functools
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

from zerolab.api import SearchConfig, SelfPlayConfig, complete_games
from zerolab.checkpoint import Checkpointer
from zerolab.plots import new_figure, save_figure
from sai_go.agents import SaiAgent
from sai_go.search import evaluate, sai_search
from sai_go.selfplay import SaiSelfPlayOptions, make_sai_play_fn
from sai_go.value import winrate

BLACK_STONES = ["C1", "C2", "C3", "C4", "C5", "C6", "C7", "A3", "B4"]
WHITE_STONES = ["E1", "E2", "E3", "E4", "E5", "E6", "E7", "A4", "F4"]
ENDGAME_KOMI, CAPTURE, DAME = -20.5, "A5", "D4"


def endgame_state(game):
    step = jax.jit(game.step)
    state = game.init(jax.random.key(0))
    for black, white in zip(BLACK_STONES, WHITE_STONES):
        state = step(step(state, game.gtp_to_action(black)), game.gtp_to_action(white))
    return state


def replay(game, actions):
    step = jax.jit(game.step)
    state = game.init(jax.random.key(0))
    for action in actions:
        state = step(state, int(action))
    return state


@functools.lru_cache(maxsize=4)
def compiled_selfplay(game, network, num_simulations: int):
    """Self-play from the empty board, one game per lane (at most 2·N² plies), no branches, λ = 0; jitted once (the
    komi of fresh games is an argument: NaN samples it as in training)."""
    config = SelfPlayConfig(num_games=1, plies_per_iteration=game.max_game_plies, max_game_plies=game.max_game_plies,
                            temperature_plies=8)
    search = SearchConfig(kind="muzero", num_simulations=num_simulations, dirichlet_alpha=0.03 * 361 / 49)
    play = make_sai_play_fn(game, network, search, config, SaiSelfPlayOptions(lam=0.0, branch_probability=0.0))
    return jax.jit(lambda variables, key, komi, num_games: play(variables, key, num_games, None, None, komi),
                   static_argnums=3)


def selfplay(agent: SaiAgent, num_games: int, key, fresh_komi=None):
    """Frames and records of ``num_games`` self-play games of ``agent``'s network (``fresh_komi``: None samples)."""
    play = compiled_selfplay(agent.game, agent.network, agent.search.num_simulations)
    return jax.device_get(play(agent.variables, key, jnp.float32(np.nan if fresh_komi is None else fresh_komi),
                               num_games))


def run(config, workdir: pathlib.Path) -> dict:
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    steps = list(config.steps) or [s for s in Checkpointer(pathlib.Path(config.network) / "checkpoints").steps() if s]
    agents = [SaiAgent.from_checkpoint(config.network, step, simulations=int(config.simulations)) for step in steps]
    last = agents[-1]
    game = last.game
    key = jax.random.key(int(config.seed))
    results: dict = {"network": str(config.network), "steps": steps}

    # 1. α against the final margin, by ply.
    frames, records = selfplay(last, int(config.heldout_games), jax.random.fold_in(key, 1))
    errors_by_ply: dict[int, list[float]] = {}
    alpha = np.asarray(frames.extras["alpha"])
    for lane, start, actions, _ in complete_games(records):
        if start != 0:
            continue
        final = replay(game, actions)
        if bool(game.ended_by_rule_violation(final)):
            continue
        area = float(game.area_difference(final))
        for ply in range(len(actions)):
            black_alpha = alpha[ply, lane] if ply % 2 == 0 else -alpha[ply, lane]
            errors_by_ply.setdefault(ply, []).append(abs(black_alpha - area))
    results["alpha_mae_by_ply"] = {ply: float(np.mean(values)) for ply, values in sorted(errors_by_ply.items())}
    results["alpha_mae"] = float(np.mean([v for values in errors_by_ply.values() for v in values]))

    # 2. The empty board's winrate curve against self-play results around the fair komi.
    empty = jax.vmap(game.init)(jax.random.key(0)[None])
    _, value = evaluate(last.network, last.variables, empty)
    empty_alpha, empty_beta = float(value.alpha[0]), float(value.beta[0])
    fair = float(np.floor(empty_alpha) + 0.5)
    curve = []
    for index, offset in enumerate(config.komi_offsets):
        komi = fair + float(offset)
        _, records = selfplay(last, int(config.games_per_komi), jax.random.fold_in(key, 100 + index), komi)
        games = [(lane, actions, score) for lane, start, actions, score in complete_games(records) if start == 0]
        black_wins = sum(score for _, _, score in games)  # the first player is Black
        curve.append({"komi": komi, "games": len(games), "black_winrate": black_wins / max(len(games), 1),
                      "predicted": float(winrate(empty_alpha, empty_beta, -komi))})
    results.update({"empty_alpha": empty_alpha, "empty_beta": empty_beta, "fair_komi": fair, "komi_curve": curve})

    # 3. Two winning moves: α, β over the networks and the capture's share for each λ.
    state = endgame_state(game)
    children = jax.tree.map(lambda *leaves: jnp.stack(leaves), *[jax.jit(game.step)(state, game.gtp_to_action(move))
                                                                 for move in (CAPTURE, DAME)])
    seeds = int(config.endgame_seeds)
    batch = jax.tree.map(lambda leaf: jnp.stack([leaf] * seeds), state)
    capture, dame = game.gtp_to_action(CAPTURE), game.gtp_to_action(DAME)
    endgame = {"root": [], "capture_child": [], "dame_child": [], "capture_share": {f"{lam:g}": [] for lam in config.lambdas}}
    search_config = SearchConfig(kind="muzero", num_simulations=int(config.simulations), dirichlet_alpha=0.03 * 361 / 49)
    endgame_search = jax.jit(lambda variables, k, lam: sai_search(search_config, game, last.network, variables, k, batch,
                                                                  jnp.full(seeds, ENDGAME_KOMI), lam).action)
    for agent in agents:
        _, root = evaluate(agent.network, agent.variables, jax.tree.map(lambda leaf: leaf[None], state))
        _, child = evaluate(agent.network, agent.variables, children)
        endgame["root"].append([float(root.alpha[0]), float(root.beta[0])])
        endgame["capture_child"].append([float(child.alpha[0]), float(child.beta[0])])
        endgame["dame_child"].append([float(child.alpha[1]), float(child.beta[1])])
        for lam in config.lambdas:
            actions = np.asarray(endgame_search(agent.variables, jax.random.fold_in(key, 7), jnp.float32(lam)))
            chosen = actions[(actions == capture) | (actions == dame)]
            endgame["capture_share"][f"{lam:g}"].append(float(np.mean(actions == capture)))
            endgame.setdefault("two_move_share", {}).setdefault(f"{lam:g}", []).append(len(chosen) / seeds)
    for name in ("root", "capture_child", "dame_child"):
        values = np.array(endgame[name])
        endgame[f"{name}_mean_sd"] = {"alpha": [float(values[:, 0].mean()), float(values[:, 0].std())],
                                      "beta": [float(values[:, 1].mean()), float(values[:, 1].std())]}
    results["endgame"] = endgame
    (workdir / "results.json").write_text(json.dumps(results, indent=2))

    figure, axes = new_figure(columns=3)
    plies = sorted(results["alpha_mae_by_ply"])
    axes[0, 0].plot(plies, [results["alpha_mae_by_ply"][p] for p in plies])
    axes[0, 0].set(xlabel="ply", ylabel="|α^B − final area difference|", title="α vs the final margin")
    komis = [row["komi"] for row in curve]
    axes[0, 1].plot(komis, [row["black_winrate"] for row in curve], "o", label="self-play (Black)")
    grid = np.linspace(min(komis), max(komis), 100)
    axes[0, 1].plot(grid, [float(winrate(empty_alpha, empty_beta, -k)) for k in grid], label="σ(β∅(α∅ − k))")
    axes[0, 1].set(xlabel="komi", ylabel="Black's winrate", title="empty board")
    axes[0, 1].legend(fontsize=8)
    for lam, shares in endgame["capture_share"].items():
        axes[0, 2].plot(steps, shares, marker="o", label=f"λ = {lam}")
    axes[0, 2].set(xlabel="checkpoint", ylabel="P(capture: the larger margin)", title="two winning moves")
    axes[0, 2].legend(fontsize=8)
    results["figure"] = str(save_figure(figure, workdir / "figures" / "sai-go-positions.png"))
    return {key: value for key, value in results.items() if key not in ("alpha_mae_by_ply",)}
