"""sai-go-positions (SAI Figs. 2–3): α against the exact final margin, the winrate curve against self-play results,
and λ's effect on the choice between two winning moves.

1. **α vs margin** — ``heldout_games`` self-play games of the last network from the empty board (komi sampled as in
   training, no branches, searched at λ = 0): the mean absolute error of the root network's α^B against the final
   area difference, by ply (Black's view; komi cancels).
2. **Winrate curve** — the fair komi k* = ⌊α_∅⌋ + ½ of the last network, then ``games_per_komi`` self-play games at
   each k* + offset: Black's observed winrate against the predicted σ(β_∅(α_∅ − k)) (Fig. 2's comparison, with our
   own network standing in for the reference).
3. **Two winning moves** — the five hand-made endgames of :mod:`sai_go.endgames` (each: a side to move, a komi, a
   move with the largest margin and another winning move with a smaller one, both checked here again by the exact
   solver): for each network, α and β at each endgame (mover's view; mean ± sd over the networks) and its winrate
   curve ρ(k) = σ(β(α + k̄)) over the komi; for each λ, the share of ``endgame_seeds`` PUCT searches (root noise on,
   so seeds differ) that choose the best move, the second one, or another (SAI Fig. 3: 5 positions, 13 networks,
   1000 searches each).

``sections`` picks which of the three parts run (``margin``, ``komi_curve``, ``endgames``).
Every search (self-play and endgames) is SAI's PUCT with root noise at ``search.num_simulations``, the one key
the ``search`` section may hold.
``positions.json`` holds everything; ``figures/sai-go-positions.png`` the three panels (the third: the best move's share
against λ, mean over the networks), ``figures/sai-go-endgames.png`` each endgame's winrate curves.
"""

from __future__ import annotations

import functools
import json
import math
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

from zerolab import Checkpointer, ProgramSection, SearchConfig, check_at_least
from zerolab.evaluation import new_figure, save_figure
from zerolab.selfplay import complete_games
from sai_go.agents import SaiAgent
from sai_go.calibration import compiled_selfplay, empty_board_value, selfplay
from sai_go.endgames import ENDGAMES
from sai_go.exact_solver import Rules, solve
from sai_go.search import evaluate, sai_search
from sai_go.value import signed_komi, winrate
from experiments.common.experiment import Experiment
from experiments.common.results import Quantity
from experiments.common.sai_go import check_play_keys, check_sai_network, checked_simulations
from experiments.configs.sai_go_positions import SaiGoPositionsConfig, read_config

SECTIONS = ("margin", "komi_curve", "endgames")


def replay(game, actions):
    step = game.jitted_step
    state = game.init(jax.random.key(0))
    for action in actions:
        state = step(state, int(action))
    return state


def endgame_states(game):
    """The pgx states of :data:`sai_go.endgames.ENDGAMES` (their setup moves from the empty board), stacked [E]."""
    rules = Rules(game.size)
    states = [replay(game, [game.gtp_to_action(vertex) for vertex in endgame.setup(rules)]) for endgame in ENDGAMES]
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)


@functools.lru_cache(maxsize=4)
def compiled_endgame_search(game, network, num_simulations: int):
    """``(variables, key, states [B], komi [B], lam) -> chosen actions [B]``: PUCT with root noise, compiled once for
    every network and λ."""
    config = SearchConfig(kind="muzero", num_simulations=num_simulations, dirichlet_alpha=0.03 * 361 / 49)
    return jax.jit(lambda variables, key, states, komi, lam: sai_search(config, game, network, variables, key, states,
                                                                         komi, lam).action)


def mean_sd(values) -> list[float]:
    values = np.asarray(values, np.float64)
    return [float(values.mean()), float(values.std())]


def endgame_choices(agents: list[SaiAgent], steps: list[int], config: SaiGoPositionsConfig, key) -> dict:
    """Section 3: each endgame's exact margins, each network's α, β (mover's view) and winrate curve, and the share
    of searches choosing the best, the second or another move, for each λ."""
    game = agents[-1].game
    rules = Rules(game.size)
    states = endgame_states(game)
    seeds = config.endgame_seeds
    count = len(ENDGAMES)
    batch = jax.tree.map(lambda leaf: jnp.repeat(leaf, seeds, axis=0), states)  # [E·seeds], endgame-major
    komi = jnp.repeat(jnp.asarray([endgame.komi for endgame in ENDGAMES], jnp.float32), seeds)
    simulations = checked_simulations(config.search, "search")
    search = compiled_endgame_search(game, agents[-1].network, simulations)
    komi_grid = np.linspace(-30.0, 30.0, 121)
    results = {}
    for endgame in ENDGAMES:
        margins = endgame.margins(solve(rules, endgame.position(rules)))
        signed = endgame.komi if endgame.to_move == "white" else -endgame.komi
        results[endgame.name] = {
            "to_move": endgame.to_move, "komi": endgame.komi, "best": endgame.best, "second": endgame.second,
            "note": endgame.note, "exact_margins": margins,
            "exact_alpha": margins[endgame.best] - signed,  # the mover's final area difference under best play
            "alpha": [], "beta": [], "curves": [],
            "choices": {f"{lam:g}": {"best": [], "second": [], "other": []} for lam in config.lambdas}}
    black_to_move = np.asarray(game.black_to_move(states))
    for agent in agents:
        _, value = evaluate(agent.network, agent.variables, states)
        alpha, beta = np.asarray(value.alpha), np.asarray(value.beta)
        for index, endgame in enumerate(ENDGAMES):
            row = results[endgame.name]
            row["alpha"].append(float(alpha[index]))
            row["beta"].append(float(beta[index]))
            grid_komi = np.asarray(signed_komi(jnp.asarray(komi_grid), bool(black_to_move[index])))
            row["curves"].append(np.asarray(winrate(alpha[index], beta[index], grid_komi)).round(4).tolist())
        for lam in config.lambdas:
            actions = np.asarray(search(agent.variables, jax.random.fold_in(key, 7), batch, komi,
                                        jnp.float32(lam))).reshape(count, seeds)
            for index, endgame in enumerate(ENDGAMES):
                best, second = game.gtp_to_action(endgame.best), game.gtp_to_action(endgame.second)
                shares = results[endgame.name]["choices"][f"{lam:g}"]
                shares["best"].append(float(np.mean(actions[index] == best)))
                shares["second"].append(float(np.mean(actions[index] == second)))
                shares["other"].append(float(np.mean((actions[index] != best) & (actions[index] != second))))
    for row in results.values():
        row["alpha_mean_sd"], row["beta_mean_sd"] = mean_sd(row["alpha"]), mean_sd(row["beta"])
        row["best_share_mean_sd"] = {lam: mean_sd(shares["best"]) for lam, shares in row["choices"].items()}
    return {"steps": steps, "seeds": seeds, "simulations": simulations, "komi_grid": komi_grid.tolist(),
            "positions": results}


def programs(config) -> list[ProgramSection]:
    """The sections of ``python -m experiments plan sai-go-positions``, declared (the command formats them): the
    self-play programs (one per batch of games: the batch is static), the endgame searches, the network evaluations and
    the replays, compiled with abstract inputs."""
    from zerolab import PlannedProgram, abstract_states, compile_cost
    from zerolab.training import evaluation_flops, evaluations_per_search
    from experiments.common.sai_go import run_model
    from sai_go.plan import kept_steps, pgx_step_program

    config = read_config(config)
    sections = config.sections
    model, source = run_model(config.network)
    steps = config.steps or [step for step in kept_steps(model.run_config) if step > 0]
    game = model.game()
    simulations = checked_simulations(config.search, "search")
    plies = game.max_game_plies
    programs, notes = [], []
    selfplay_calls = {}
    if "margin" in sections:
        selfplay_calls[config.heldout_games] = selfplay_calls.get(config.heldout_games, 0) + 1
    if "komi_curve" in sections:
        games = config.games_per_komi
        selfplay_calls[games] = selfplay_calls.get(games, 0) + len(config.komi_offsets)
    play = compiled_selfplay(game, model.network, simulations)

    def evaluation(name: str, batch: int, calls: int = 1, what: str = "") -> PlannedProgram:
        return PlannedProgram.evaluation(name, game, model.network, model.variables, batch, calls, what)

    def flops_of(batch: int) -> float:
        return evaluation_flops(game, model.network, model.variables, batch)

    for games, calls in selfplay_calls.items():
        cost = compile_cost(f"self-play, {games} games", play.lower(
            model.variables, jax.random.key(0), jax.ShapeDtypeStruct((), jnp.float32), games))
        what = f"{games} games × {plies} plies, {simulations} simulations a move, λ = 0, no branches"
        program = PlannedProgram.search(cost, calls, what, flops_of(games), simulations,
                                        searches=plies)
        program.flops_per_call += flops_of(1)  # the empty board's α and β, once a call
        programs.append(program)
    if selfplay_calls:
        notes.append(f"self-play: {plies} plies (2·N², the most a 7x7 game lasts) of "
                     f"{evaluations_per_search(simulations)} evaluations each, plus the empty board's (XLA counts the scan's body once); "
                     + (f"{config.heldout_games} held-out games (margin), " if "margin" in sections else "")
                     + (f"{config.games_per_komi} games at each of {len(config.komi_offsets)} komi (komi curve)"
                        if "komi_curve" in sections else ""))
    if "endgames" in sections:
        batch = len(ENDGAMES) * config.endgame_seeds
        search = compiled_endgame_search(game, model.network, simulations)
        komi = jax.ShapeDtypeStruct((batch,), jnp.float32)
        cost = compile_cost("endgame search", search.lower(model.variables, jax.random.key(0),
                                                           abstract_states(game, batch), komi,
                                                           jax.ShapeDtypeStruct((), jnp.float32)))
        programs.append(PlannedProgram.search(cost, len(steps) * len(config.lambdas),
                                              f"{len(ENDGAMES)} endgames × {config.endgame_seeds} seeds, "
                                              f"{simulations} simulations with root noise",
                                              flops_of(batch), simulations))
        programs.append(evaluation("endgame evaluation", len(ENDGAMES), len(steps),
                                   f"α, β of the {len(ENDGAMES)} endgames"))
        notes.append(f"endgames: {len(steps)} networks × {len(config.lambdas)} λ searches; the evaluation runs op by "
                     f"op in the runner (compiled here for its figures)")
    if "komi_curve" in sections:
        programs.append(evaluation("empty-board evaluation", 1, 1, "α, β of the empty board (op by op in the runner)"))
    setup_moves = sum(len(endgame.setup(Rules(game.size))) for endgame in ENDGAMES) if "endgames" in sections else 0
    replays = (config.heldout_games * plies if "margin" in sections else 0) + setup_moves
    if replays:
        programs.append(pgx_step_program("replay step (pgx)", game, None, replays,
                                         "one move of one game (held-out games' final boards, endgame setups)"))
    notes.append(f"networks: {len(steps)} checkpoints (steps {steps[0]}..{steps[-1]}); {source} "
                 f"({model.run_config.model.num_blocks} blocks × {model.run_config.model.channels} channels), abstract "
                 f"variables; each is an argument of the compiled programs; calls are upper bounds where games end "
                 f"early")
    return [ProgramSection(f"sai-go-positions: {', '.join(sections)}", programs, notes)]

def check_config(config) -> None:
    """Every key, before the run directory is made: the sections, the network run and its steps, the play keys and
    the sizes."""
    check_keys(read_config(config))


def check_keys(config: SaiGoPositionsConfig) -> None:
    """:func:`check_config` of the typed config."""
    unknown = sorted(set(config.sections) - set(SECTIONS))
    if unknown:
        raise ValueError(f"sections: unknown {unknown}; valid: {list(SECTIONS)}")
    check_sai_network("network", config.network, config.steps)
    check_play_keys(config)
    checked_simulations(config.search, "search")
    for key in ("endgame_seeds", "games_per_komi", "heldout_games"):
        check_at_least(key, getattr(config, key), 1)


def run(config, workdir: pathlib.Path) -> dict:
    config = read_config(config)
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    check_keys(config)
    sections = config.sections
    steps = config.steps or [step for step in Checkpointer(pathlib.Path(config.network) / "checkpoints").steps()
                                    if step > 0]  # the untrained network is not an SAI network
    agents = [SaiAgent.from_checkpoint(config.network, step, search=config.search) for step in steps]
    last = agents[-1]
    game = last.game
    key = jax.random.key(config.seed)
    results: dict = {"network": config.network, "steps": steps, "sections": sections}
    figure, axes = new_figure(columns=3)

    if "margin" in sections:  # 1. α against the final margin, by ply.
        frames, records = selfplay(last, config.heldout_games, jax.random.fold_in(key, 1))
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
        plies = sorted(results["alpha_mae_by_ply"])
        axes[0, 0].plot(plies, [results["alpha_mae_by_ply"][p] for p in plies])
        axes[0, 0].set(xlabel="ply", ylabel="|α^B − final area difference|", title="α vs the final margin")

    if "komi_curve" in sections:  # 2. The empty board's winrate curve against self-play results around the fair komi.
        empty_alpha, empty_beta = empty_board_value(last.network, last.variables, game)
        fair = float(np.floor(empty_alpha) + 0.5)
        curve = []
        for index, offset in enumerate(config.komi_offsets):
            komi = fair + offset
            _, records = selfplay(last, config.games_per_komi, jax.random.fold_in(key, 100 + index), komi)
            games = [(lane, actions, score) for lane, start, actions, score in complete_games(records) if start == 0]
            black_wins = sum(score for _, _, score in games)  # the first player is Black
            curve.append({"komi": komi, "games": len(games), "black_winrate": black_wins / max(len(games), 1),
                          "predicted": float(winrate(empty_alpha, empty_beta, -komi))})
        results.update({"empty_alpha": empty_alpha, "empty_beta": empty_beta, "fair_komi": fair, "komi_curve": curve})
        komis = [row["komi"] for row in curve]
        axes[0, 1].plot(komis, [row["black_winrate"] for row in curve], "o", label="self-play (Black)")
        grid = np.linspace(min(komis), max(komis), 100)
        axes[0, 1].plot(grid, [float(winrate(empty_alpha, empty_beta, -k)) for k in grid], label="σ(β∅(α∅ − k))")
        axes[0, 1].set(xlabel="komi", ylabel="Black's winrate", title="empty board")
        axes[0, 1].legend(fontsize=8)

    if "endgames" in sections:  # 3. Two winning moves: α, β over the networks and the best move's share for each λ.
        endgame = endgame_choices(agents, steps, config, key)
        results["endgames"] = endgame
        lambdas = config.lambdas
        for name, row in endgame["positions"].items():
            shares = [row["best_share_mean_sd"][f"{lam:g}"] for lam in lambdas]
            axes[0, 2].errorbar(lambdas, [m for m, _ in shares], yerr=[sd for _, sd in shares], marker="o",
                                capsize=3, label=name)
        axes[0, 2].set(xlabel="λ", ylabel="P(best move)", ylim=(-0.05, 1.05),
                       title=f"two winning moves ({len(steps)} networks)")
        axes[0, 2].legend(fontsize=7)
        curves, curve_axes = new_figure(columns=len(endgame["positions"]), width=4.0)
        for axis, (name, row) in zip(curve_axes[0], endgame["positions"].items()):
            for step, curve in zip(steps, row["curves"]):
                axis.plot(endgame["komi_grid"], curve, label=f"step {step}")
            axis.axvline(row["komi"], color="grey", linestyle=":")
            (alpha_mean, alpha_sd), (beta_mean, beta_sd) = row["alpha_mean_sd"], row["beta_mean_sd"]
            axis.set(xlabel="komi", ylabel=f"{row['to_move'].capitalize()}'s winrate", ylim=(-0.02, 1.02),
                     title=f"{name}\nα {alpha_mean:.1f} ± {alpha_sd:.1f}, β {beta_mean:.2f} ± {beta_sd:.2f}")
            axis.title.set_fontsize(8)
        curve_axes[0, 0].legend(fontsize=7)
        results["endgame_figure"] = str(save_figure(curves, workdir / "figures" / "sai-go-endgames.png"))

    (workdir / "positions.json").write_text(json.dumps(results, indent=2))
    results["figure"] = str(save_figure(figure, workdir / "figures" / "sai-go-positions.png"))
    (workdir / "positions.json").write_text(json.dumps(results, indent=2))
    summary = {key: value for key, value in results.items() if key not in ("alpha_mae_by_ply", "endgames")}
    if "endgames" in results:
        keys = ("to_move", "komi", "best", "second", "exact_alpha", "alpha_mean_sd", "beta_mean_sd",
                "best_share_mean_sd")
        summary["endgames"] = {name: {k: row[k] for k in keys}
                               | {"exact_margins": {m: row["exact_margins"][m] for m in (row["best"], row["second"])}}
                               for name, row in results["endgames"]["positions"].items()}
    return summary


def results(summary: dict, config) -> dict[str, Quantity]:
    """The headline quantities (``results.json``) of the sections that ran: α's mean absolute error against the final
    margin (no ±: the plies of one game are not independent), the empty board's α_∅, β_∅ and the fair komi they give
    (one network: no ±), Black's self-play winrate at each komi of the curve (± binomial se over its games) beside
    the sigmoid's prediction, and, for each two-winning-moves position, the best move's share at each λ (± se over
    the networks: their sd / √n)."""
    quantities: dict[str, Quantity] = {}
    if "alpha_mae" in summary:
        quantities["alpha_mae"] = Quantity("|α^B − final area difference|, mean over held-out plies",
                                           summary["alpha_mae"], unit="points", digits=2)
    if "empty_alpha" in summary:
        quantities["empty_alpha"] = Quantity("α_∅ of the last network", summary["empty_alpha"], unit="points",
                                             digits=2)
        quantities["empty_beta"] = Quantity("β_∅ of the last network", summary["empty_beta"], digits=3)
        quantities["fair_komi"] = Quantity("fair komi from α_∅", summary["fair_komi"], unit="points", digits=1)
        for row in summary["komi_curve"]:
            games, rate = row["games"], row["black_winrate"]
            key = f"{row['komi']:g}".replace("-", "minus_").replace(".", "_")
            quantities[f"black_winrate_komi_{key}"] = Quantity(
                f"Black's self-play winrate at komi {row['komi']:g} (predicted {row['predicted']:.3f})", rate,
                math.sqrt(rate * (1 - rate) / games) if games else math.nan, "se", "games", games, unit="fraction")
    networks = len(summary.get("steps", ()))
    for name, row in summary.get("endgames", {}).items():
        for lam, (mean, sd) in row["best_share_mean_sd"].items():
            quantities[f"best_share_{name}_lambda_{lam}"] = Quantity(
                f"{name}: the best move's share at λ {lam}", mean, sd / math.sqrt(networks) if networks else math.nan,
                "se", "networks", networks, unit="fraction")
    del config
    return quantities


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, programs=programs, results=results)
