"""contempt-selfplay: decisiveness and diversity of self-play under search-contempt and under PUCT.

Each setting plays ``games`` self-play games with the base network through the core's jitted self-play (one lane per
game, the first game of each lane, so long games are not under-counted), with root noise off and the setting's
temperature schedule over full moves.  Each search roots at the side to move, so each side treats the other as the
opponent.  Per setting (``settings.jsonl``; a rerun plays only the missing ones): W/D/L from White's side, (w+l)/d and
the decisive fraction with bootstrap 95 % intervals, the mean game length, the fraction of distinct positions, the
repeat rate r(m) for m = 1..``repeat_moves`` and the search's ``sampled_visit_fraction``.  Figures: (w+l)/d against
N_scl and against τ, and r(m).
"""

from __future__ import annotations

import json
import logging
import math
import pathlib
import time

import jax
import numpy as np

from contempt_search.statistics import decisiveness, repeat_rate
from contempt_search.experiment import (
    append_row,
    arm_search,
    base_network,
    read_rows,
    temperature_settings,
)
from experiments.common.experiment import Experiment
from experiments.common.results import Quantity
from experiments.common.contempt import base_run_config, check_contempt_config
from experiments.configs.contempt_selfplay import ContemptSelfplayConfig, read_config
from zerolab import ProgramSection, SelfPlayConfig, check_at_least, make_mesh, replicate
from zerolab.evaluation import new_figure, save_figure
from zerolab.play import load_search_agent
from zerolab.selfplay import complete_games, make_selfplay_fn, summarize

logger = logging.getLogger(__name__)


def settings(config: ContemptSelfplayConfig) -> list[dict]:
    """Every setting: name, N_scl (None for PUCT) and temperature."""
    rows = [{"name": f"contempt{limit}-tau1", "sc_limit": limit, "temperature": "tau1"}
            for limit in config.sc_limits]
    rows += [{"name": f"puct-{temperature}", "sc_limit": None, "temperature": temperature}
             for temperature in config.puct_temperatures]
    return rows


def setting_selfplay(config: ContemptSelfplayConfig, base_search, setting: dict) -> tuple:
    """``(search, selfplay)`` configs of a setting: the base search with the experiment's ``search`` section (its
    simulations, kind and PUCT rule ``selection``), root noise off, the setting's rules; one lane per game for
    ``max_game_plies`` plies with its temperature schedule."""
    search = arm_search(base_search, config.search, sc_limit=setting["sc_limit"])
    selfplay = SelfPlayConfig(num_games=config.games, plies_per_iteration=config.max_game_plies,
                              max_game_plies=config.max_game_plies, temperature_schedule="moves",
                              **temperature_settings(config, setting["temperature"]))
    return search, selfplay


def setting_program(config: ContemptSelfplayConfig, agent, setting: dict, mesh) -> tuple:
    """``(play, search)``: a setting's jitted self-play over ``mesh`` with the base agent's network (``agent``: the
    run's; in a plan, on abstract variables), ``play(variables, key)``, and its search config: what the run calls and
    its plan compiles."""
    search, selfplay = setting_selfplay(config, agent.search_config, setting)
    return make_selfplay_fn(agent.game, agent.network, search, selfplay, mesh), search


def play_setting(config: ContemptSelfplayConfig, agent, setting: dict, key: jax.Array) -> dict:
    mesh = make_mesh(jax.devices()[:1])
    play, _ = setting_program(config, agent, setting, mesh)
    started = time.perf_counter()
    _, records = play(replicate(agent.variables, mesh), key)
    records = jax.device_get(records)
    seconds = time.perf_counter() - started
    games = [game for game in complete_games(records) if game[1] == 0]  # one per lane: its first game
    outcomes = [score for _, _, _, score in games]
    wins, draws, losses = (sum(score == value for score in outcomes) for value in (1.0, 0.5, 0.0))
    lengths = [len(actions) for _, _, actions, _ in games]
    move_lists = [[int(action) for action in actions] for _, _, actions, _ in games]
    statistics = summarize(records)
    return {
        **setting,
        "games": len(games), "white_wins": wins, "draws": draws, "white_losses": losses,
        "capped_games": sum(length >= config.max_game_plies for length in lengths),
        **decisiveness(outcomes, resamples=config.bootstrap_resamples, seed=config.seed),
        "mean_game_length": float(np.mean(lengths)) if lengths else math.nan,
        "distinct_position_fraction": statistics["distinct_position_fraction"],
        "sampled_visit_fraction": statistics.get("sampled_visit_fraction", 0.0),
        "repeat_rate": [repeat_rate(move_lists, moves) for moves in range(1, config.repeat_moves + 1)],
        "selfplay_s": seconds,
    }


def finite(value: float, cap: float) -> float:
    return cap if math.isinf(value) else value


def plot(rows: list[dict], path: pathlib.Path) -> pathlib.Path:
    figure, axes = new_figure(columns=3)
    contempt = sorted((row for row in rows if row["sc_limit"] is not None), key=lambda row: row["sc_limit"])
    puct = [row for row in rows if row["sc_limit"] is None]
    cap = 2 * max([finite(row["ratio"], 0) for row in rows] + [1.0])
    axes[0, 0].plot([row["sc_limit"] for row in contempt], [finite(row["ratio"], cap) for row in contempt], "o-",
                    label="contempt, τ1")
    for row in puct:
        if row["temperature"] == "tau1":
            axes[0, 0].axhline(finite(row["ratio"], cap), color="grey", linestyle="--", label="PUCT, τ1")
    if contempt:  # a log axis with nothing on it cannot be laid out
        axes[0, 0].set_xscale("log")
    axes[0, 0].set(xlabel="N_scl", ylabel="(w + l) / d", title="decisiveness against N_scl")
    axes[0, 0].legend()
    constants = sorted((row for row in puct if row["temperature"] not in ("tau1", "tau2")),
                       key=lambda row: float(row["temperature"]))
    axes[0, 1].plot([float(row["temperature"]) for row in constants], [finite(row["ratio"], cap) for row in constants],
                    "o-", label="PUCT, constant τ")
    axes[0, 1].set(xlabel="τ", ylabel="(w + l) / d", title="decisiveness against τ")
    axes[0, 1].legend()
    for row in rows:
        axes[0, 2].plot(range(1, len(row["repeat_rate"]) + 1), row["repeat_rate"], label=row["name"])
    axes[0, 2].set(xlabel="full moves m", ylabel="repeat rate r(m)", title="shared openings")
    axes[0, 2].legend(fontsize=6)
    return save_figure(figure, path)


def check_config(config) -> None:
    """Every key, before the run directory is made: the keys all contempt launchers read, the games and the
    statistics' sizes."""
    config = read_config(config)
    check_contempt_config(config)
    check_at_least("games", config.games, 1)
    check_at_least("bootstrap_resamples", config.bootstrap_resamples, 0)
    check_at_least("repeat_moves", config.repeat_moves, 0)
    if not settings(config):
        raise ValueError("sc_limits and puct_temperatures are both empty: nothing to play")


def programs(config) -> list[ProgramSection]:
    """The sections of ``python -m experiments plan contempt-selfplay``, declared (the command formats them): a
    setting's jitted self-play (one search kind each: a search-contempt setting and a PUCT one), compiled with abstract
    inputs; the other settings compile the same shapes with other constants (N_scl, τ)."""
    from contempt_search.plan import experiment_network, memory_notes
    from zerolab import PlannedProgram, compile_cost
    from zerolab.training import evaluation_flops, evaluations_per_search

    config = read_config(config)
    planned = experiment_network(config, base_run_config(config))
    base = planned.base
    rows = settings(config)
    games, plies = config.games, config.max_game_plies
    simulations = arm_search(base.search_config, config.search, sc_limit=None).num_simulations
    programs = []
    for kind, group in (("search-contempt", [row for row in rows if row["sc_limit"] is not None]),
                        ("PUCT", [row for row in rows if row["sc_limit"] is None])):
        if not group:
            continue
        play, search = setting_program(config, base, group[0], make_mesh(jax.devices()[:1]))
        cost = compile_cost(f"self-play, {group[0]['name']}", play.lower(base.variables, jax.random.key(0)))
        programs.append(PlannedProgram.search(cost, len(group), f"{games} games × {plies} plies, {search.kind} "
                                              f"({search.selection}) {simulations} simulations a move",
                                              evaluation_flops(base.game, base.network, base.variables, games),
                                              simulations, searches=plies))
    notes = [
        f"{len(rows)} settings, one self-play call each ({', '.join(row['name'] for row in rows)}); each setting is "
        f"its own program (N_scl and τ are constants of it), compiled above once per search kind: the others have the "
        f"same shapes, FLOPs and memory",
        f"a call plays {plies} plies (the scan's length, whether games end or not) of "
        f"{evaluations_per_search(simulations)} network evaluations of {games} positions (XLA counts the scan's body "
        f"once)",
        f"network: {planned.source}",
    ]
    notes += memory_notes(programs)
    return [ProgramSection(f"contempt-selfplay: self-play decisiveness, {planned.config.game.name}", programs, notes)]


def run(config, workdir: pathlib.Path) -> dict:
    started = time.perf_counter()
    recorded = config.to_dict()  # as given: the summary's record
    check_config(config)
    config = read_config(config)
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    network = base_network(config, base_run_config(config))
    agent = load_search_agent(network, {"name": "base"})
    rows_path = workdir / "settings.jsonl"
    rows = read_rows(rows_path)
    done = {row["name"] for row in rows}
    key = jax.random.key(config.seed)
    for index, setting in enumerate(settings(config)):
        if setting["name"] in done:
            continue
        row = play_setting(config, agent, setting, jax.random.fold_in(key, index))
        append_row(rows_path, row)
        rows.append(row)
        logger.info("%s: %s", setting["name"], json.dumps({k: v for k, v in row.items() if k != "repeat_rate"}))
    figure_path = plot(rows, workdir / "figures" / "contempt-selfplay.png")
    summary = {"settings": recorded, "network": str(network), "rows": rows, "figure": str(figure_path),
               "wall_s": time.perf_counter() - started}
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def results(summary: dict, config) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): for each setting, the decisive fraction of its self-play games
    (± the binomial se over them) and (w + l) / d, its decisiveness (no ±: its bootstrap interval is in the summary's
    rows, ``ratio_interval``; infinite without a draw)."""
    del config
    quantities: dict[str, Quantity] = {}
    for row in summary["rows"]:
        games, fraction = row["games"], row["decisive_fraction"]
        quantities[f"{row['name']}_decisive_fraction"] = Quantity(
            f"{row['name']}: decisive fraction of its self-play games", fraction,
            math.sqrt(fraction * (1 - fraction) / games) if games else math.nan, "se", "games", games, unit="fraction")
        quantities[f"{row['name']}_ratio"] = Quantity(f"{row['name']}: (w + l) / d", row["ratio"], unit="ratio",
                                                      digits=2)
    return quantities


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, programs=programs, results=results)
