"""contempt-odds: does search-contempt turn more search into more wins when giving odds to a weaker opponent?

For each search size (``simulation_counts``: a cell's ``search.num_simulations``) and each arm (PUCT; search-contempt
with N_scl = ``sc_limit``), the network gives ``odds_piece`` odds to ``opponent``: half the games as White from the odds
opening without White's piece, half as Black without Black's (:mod:`contempt_search.odds`).  Both arms have the same
network, simulations and ``search`` section (its kind and PUCT rule ``search.selection``: mctx's, or lc0's in the
evidence and paper presets), with root noise off; only the rules differ.
The opponent is a UCI engine spec, or ``self:num_simulations=N,temperature=T``: the same network searching N simulations
with plain PUCT (the experiment's ``search`` section, root noise off), its move drawn from its root visits
∝ N(a)^(1/T) (:func:`self_opponent_settings`).  At T = 1 and N = N_scl that is the opponent search-contempt models:
an opponent node freezes its first N_scl selections and then draws from them.
Each cell is a pairing of :func:`zerolab.evaluation.pairings.play_pairings` (``<arm>-<simulations>`` against the
opponent, with a fresh opponent): ``matches.json`` keeps each finished cell (a rerun plays only the missing cells), its
games are in ``games/<arm>-<simulations>.pgn``.  Each cell's W/D/L (the network's
side) with 95 % Wilson intervals, the engine's fallback moves and contempt's ``sampled_visit_fraction`` go to
``summary.json``; ``figures/contempt-odds.png`` plots the win rate against simulations.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import pathlib
import time

import jax

from contempt_search.experiment import arm_search, base_network, temperature_schedule
from contempt_search.odds import odds_fen, odds_fens
from contempt_search.statistics import wdl_percentages
from experiments.common.experiment import Experiment
from experiments.common.contempt import base_run_config, check_contempt_config
from experiments.common.results import Quantity
from experiments.configs.contempt_odds import ContemptOddsConfig, read_config
from zerolab import (
    Agent, ProgramSection, SearchAgent, SearchChanges, SearchConfig, check_at_least, make_game, progress_bar,
)
from zerolab.evaluation import (
    Pairing, PairingRecord, check_game_count, new_figure, play_pairings, save_figure, score_standard_error,
)
from zerolab.play import (
    AgentPool, EngineAgent, Match, MatchResult, check_agent_spec, load_search_agent, play_games, split_spec,
)

logger = logging.getLogger(__name__)


def cell_search(config: ContemptOddsConfig, simulations: int) -> SearchChanges:
    """The ``search`` section of a cell searching ``simulations`` (one of ``simulation_counts``): the experiment's
    section with ``num_simulations`` set."""
    return SearchChanges.from_section({**dict(config.search.items), "num_simulations": simulations},
                                      "contempt-odds.search")


def arm_search_config(arm: str, simulations: int, config: ContemptOddsConfig, base: SearchConfig) -> SearchConfig:
    """The search of an arm (:func:`contempt_search.experiment.arm_search`): the experiment's ``search`` section (its
    kind and PUCT rule ``selection``) at ``simulations`` (:func:`cell_search`), no root noise, with the plain rules or
    contempt's at N_scl = ``sc_limit``."""
    return arm_search(base, cell_search(config, simulations),
                      sc_limit=config.sc_limit if arm.startswith("contempt") else None)


def arm_agent(base: SearchAgent, arm: str, simulations: int, config: ContemptOddsConfig, name: str = "",
              temperature: str = "") -> SearchAgent:
    """The arm's search on the base network (``base``: the run's agent; in a plan, on abstract variables); named
    ``<arm>-<simulations>`` unless ``name`` is given.  ``temperature`` (a constant τ as text; empty: none) samples
    its moves ∝ visits^(1/τ) instead of playing the search's choice."""
    schedule = temperature_schedule(config, temperature) if temperature else None
    return base.with_search(arm_search_config(arm, simulations, config, base.search_config),
                            name=name or f"{arm}-{simulations}", temperature=schedule)


SELF_OPPONENT = "self"
SELF_OPPONENT_KEYS = ("num_simulations", "temperature")


def self_opponent_settings(spec: str) -> tuple[int, str] | None:
    """``(simulations, temperature)`` of a ``self:num_simulations=N,temperature=T`` opponent spec (T a positive
    constant, default 1); None for any other spec (a UCI engine's)."""
    head, options = split_spec(spec)
    if head != SELF_OPPONENT:
        return None
    if "simulations" in options:  # the search's own name for the count (SearchConfig.num_simulations), one name
        raise ValueError(f"opponent={spec!r}: the key is num_simulations (as the search's), not simulations")
    unknown = sorted(set(options) - set(SELF_OPPONENT_KEYS))
    if unknown or "num_simulations" not in options:
        raise ValueError(f"opponent={spec!r}: expected 'self:num_simulations=N[,temperature=T]' (keys "
                         f"{list(SELF_OPPONENT_KEYS)}, num_simulations required), got keys {sorted(options)}")
    try:
        simulations, temperature = int(options["num_simulations"]), float(options.get("temperature", "1"))
    except ValueError:
        raise ValueError(f"opponent={spec!r}: num_simulations must be an integer and temperature a number") from None
    if simulations < 1 or not temperature > 0:
        raise ValueError(f"opponent={spec!r}: expected num_simulations >= 1 and temperature > 0")
    return simulations, repr(temperature)


def opponent_agent(spec: str, base: SearchAgent, config: ContemptOddsConfig) -> Agent:
    """The cell's opponent: a fresh UCI engine, or for ``self:...`` the network itself with plain PUCT (the
    experiment's ``search`` section at the spec's ``num_simulations``: :func:`self_opponent_settings`), named
    ``spec``."""
    settings = self_opponent_settings(spec)
    if settings is None:
        return EngineAgent(spec, base.game, seed=config.seed)
    simulations, temperature = settings
    return arm_agent(base, "puct", simulations, config, name=spec, temperature=temperature)


def play_cell(game, agent: SearchAgent, opponent: Agent, config: ContemptOddsConfig, key: jax.Array) -> Match:
    """The agent gives odds as White in half the games and as Black in the other half, against ``opponent`` (closed
    at the end): the match from the agent's side, with the agent's arm, simulations and search statistics as its
    extras."""
    half = config.games_per_cell // 2
    try:
        with progress_bar(f"{agent.name} vs {opponent.name}", 2 * half, unit="game", enabled=config.progress) as bar:
            as_white = play_games(game, agent, opponent, half, jax.random.fold_in(key, 0), config.max_game_plies,
                                  bar, [odds_fen(game.name, config.odds_piece, "white")] * half)
            as_black = play_games(game, opponent, agent, half, jax.random.fold_in(key, 1), config.max_game_plies,
                                  bar, [odds_fen(game.name, config.odds_piece, "black")] * half)
    finally:
        opponent.close()
    scores = [record.first_player_score for record in as_white] + [1 - record.first_player_score for record in as_black]
    wins, draws, losses = (sum(score == value for score in scores) for value in (1.0, 0.5, 0.0))
    extras = {"arm": agent.name.rsplit("-", 1)[0], "simulations": agent.search_config.num_simulations,
              "search_statistics": agent.search_statistics()}
    return Match(MatchResult(agent.name, opponent.name, wins=wins, draws=draws, losses=losses), as_white + as_black,
                 {opponent.name: getattr(opponent, "fallback_moves", 0)}, extras)


def cell_row(record: PairingRecord) -> dict:
    """A cell of ``summary.json`` from its record: W/D/L (the network's side) with Wilson intervals, capped games,
    the engine's fallback moves, the search statistics and the cell's seconds."""
    result = record.result
    return {"arm": record.extras["arm"], "simulations": record.extras["simulations"],
            **wdl_percentages(result.wins, result.draws, result.losses), "capped_games": record.capped,
            "engine_fallback_moves": record.fallback_moves[result.player_b], **record.extras["search_statistics"],
            "wall_s": record.wall_s}


ARMS = ("puct", "contempt")


def arm_names(config: ContemptOddsConfig) -> list[str]:
    """The arms of ``config.arms`` as cells name them (``puct``, ``contempt<N_scl>``), in the order given."""
    arms = config.arms
    unknown = [arm for arm in arms if arm not in ARMS]
    if unknown or not arms or len(set(arms)) != len(arms):
        raise ValueError(f"arms={arms}: expected one or both of {list(ARMS)}, each once")
    return [arm if arm == "puct" else f"contempt{config.sc_limit}" for arm in arms]


def check_config(config) -> None:
    """Every key, before the run directory is made (and again when :func:`run` is called directly): the keys all
    contempt launchers read, the search sizes (``simulation_counts``, which the ``search`` section may not name), the
    games a cell (even: half giving odds as White), the arms, N_scl, the game and odds piece, and the opponent (a
    ``self:...`` spec, or an engine that is installed)."""
    config = read_config(config)
    check_contempt_config(config)
    if config.search.get("num_simulations") is not None:
        raise ValueError("search.num_simulations: contempt-odds searches each cell at one of simulation_counts; "
                         "give the sizes there (simulation_counts=[N, ...])")
    if not config.simulation_counts:
        raise ValueError("simulation_counts is empty: no cell to play")
    for simulations in config.simulation_counts:
        check_at_least("simulation_counts", simulations, 1)
    check_game_count("games_per_cell", config.games_per_cell, "half giving odds as White, half as Black")
    arms = arm_names(config)
    if any(arm.startswith("contempt") for arm in arms):
        check_at_least("sc_limit", config.sc_limit, 1)
    odds_fens(make_game(config.game).name, config.odds_piece)
    if self_opponent_settings(config.opponent) is None:
        check_agent_spec("opponent", config.opponent)


def programs(config) -> list[ProgramSection]:
    """The sections of ``python -m experiments plan contempt-odds``, declared (the command formats them): each
    (simulations, arm) search and the arena's referee, compiled with abstract inputs; calls are upper bounds (every game
    lasting ``max_game_plies``)."""
    from contempt_search.plan import experiment_network, memory_notes
    from zerolab import PlannedProgram, abstract_states, compile_cost

    config = read_config(config)
    planned = experiment_network(config, base_run_config(config))
    game = make_game(config.game)
    if game != planned.base.game:
        raise ValueError(f"game={config.game!r}: the network ({planned.source}) plays {planned.config.game.name!r}")
    half, plies = config.games_per_cell // 2, config.max_game_plies
    moves = (plies + 1) // 2  # the most moves one side makes in a game of `plies` plies
    arms = arm_names(config)
    programs = [arm_agent(planned.base, arm, simulations, config).planned_program(half, 2 * moves)
                for simulations in config.simulation_counts for arm in arms]
    cells = len(config.simulation_counts) * len(arms)
    self_opponent = self_opponent_settings(config.opponent) is not None  # an engine is not a JAX program
    if self_opponent:
        programs.append(opponent_agent(config.opponent, planned.base, config).planned_program(half, cells * 2 * moves))
    cost = compile_cost("arena step (pgx)", game.batched_step.lower(abstract_states(game, half),
                                                                    jax.ShapeDtypeStruct((half,), jax.numpy.int32)))
    programs.append(PlannedProgram(cost, cells * 2 * plies, f"one ply of {half} games"))
    notes = [
        f"{cells} cells = {len(config.simulation_counts)} search sizes × {len(arms)} arms; each {2 * half} games "
        f"giving {config.odds_piece} odds in two lock-step batches of {half} (as White, then as Black); the network "
        f"moves on every other ply: ≤ {2 * moves} searches a cell (upper bounds: every game lasting {plies} plies)",
        f"network: {planned.source}",
        (f"the opponent {config.opponent}: the network itself, ≤ {2 * moves} searches a cell" if self_opponent
         else f"not planned: the opponent {config.opponent}, ≤ {cells * 2 * half * (plies // 2)} moves")
        + "; the odds start positions are built on the host",
    ]
    notes += memory_notes(programs)
    return [ProgramSection(f"contempt-odds: {config.odds_piece} odds against {config.opponent}, "
                           f"{planned.config.game.name}", programs, notes)]


def run(config, workdir: pathlib.Path) -> dict:
    started = time.perf_counter()
    recorded = config.to_dict()  # as given: the summary's record
    check_config(config)
    config = read_config(config)
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    games = config.games_per_cell
    arms = arm_names(config)
    network = base_network(config, base_run_config(config))
    game = make_game(config.game)
    base = functools.cache(functools.partial(load_search_agent, network, {"name": "base"}, game))  # once, if played
    key = jax.random.key(config.seed)
    settings = {f"{arm}-{simulations}": (arm, simulations) for simulations in config.simulation_counts for arm in arms}
    pairings = [Pairing(label, config.opponent, games, key=jax.random.fold_in(key, simulations), label=label)
                for label, (arm, simulations) in settings.items()]

    def play(pairing: Pairing, key: jax.Array, pool: AgentPool) -> Match:
        arm, simulations = settings[pairing.name]
        return play_cell(game, arm_agent(base(), arm, simulations, config),
                         opponent_agent(config.opponent, base(), config), config, key)

    _, records = play_pairings(pairings, {}, game, workdir, max_game_plies=config.max_game_plies, play=play,
                               event="contempt-odds")
    cells = [cell_row(record) for record in records.values()]

    figure, axes = new_figure()
    plot = axes[0, 0]
    for arm in arms:
        rows = sorted((cell for cell in cells if cell["arm"] == arm), key=lambda cell: cell["simulations"])
        x = [row["simulations"] for row in rows]
        y = [row["win_percent"] for row in rows]
        errors = [[row["win_percent"] - row["win_interval"][0] for row in rows],
                  [row["win_interval"][1] - row["win_percent"] for row in rows]]
        plot.errorbar(x, y, yerr=errors, marker="o", capsize=3, label=arm)
    plot.set_xscale("log")
    plot.set_xlabel("simulations per move")
    plot.set_ylabel(f"win % giving {config.odds_piece} odds (95 % Wilson)")
    plot.set_title(f"{config.game}: vs {config.opponent}")
    plot.legend()
    figure_path = save_figure(figure, workdir / "figures" / "contempt-odds.png")
    summary = {
        "settings": recorded,
        "network": str(network),
        "cells": cells,
        "figure": str(figure_path),
        "wall_s": time.perf_counter() - started,
    }
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def win_se(cell: dict) -> float:
    """The se of a cell's win rate over its games, in percent: √(p(1 − p)/n)."""
    p = cell["wins"] / cell["games"]
    return 100 * math.sqrt(p * (1 - p) / cell["games"])


def results(summary: dict, config) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): at each search size, each arm's win % (se over its games) and,
    when both arms played, contempt − PUCT in win points and in score.  The arms' games are not paired (each cell
    draws its own engine moves and keys), so a difference's se is √(se₁² + se₂²) over both cells' games."""
    config = read_config(config)
    cells = {(cell["arm"], cell["simulations"]): cell for cell in summary["cells"]}
    against = f"giving {config.odds_piece} odds to {config.opponent}"
    quantities: dict[str, Quantity] = {}
    for (arm, simulations), cell in sorted(cells.items(), key=lambda item: (item[0][1], item[0][0])):
        name = "contempt" if arm.startswith("contempt") else arm
        quantities[f"{name}_win_{simulations}"] = Quantity(
            f"{arm} at {simulations} simulations, win % {against}", cell["win_percent"], win_se(cell), "se", "games",
            cell["games"], unit="%", digits=1)
    for simulations in sorted({simulations for _, simulations in cells}):
        puct = cells.get(("puct", simulations))
        contempt = next((cell for (arm, size), cell in cells.items()
                         if size == simulations and arm.startswith("contempt")), None)
        if puct is None or contempt is None:
            continue
        games = puct["games"] + contempt["games"]
        label = f"contempt N_scl {config.sc_limit} − PUCT at {simulations} simulations, {against}"
        quantities[f"difference_win_points_{simulations}"] = Quantity(
            f"{label}: win points", contempt["win_percent"] - puct["win_percent"],
            math.hypot(win_se(puct), win_se(contempt)), "se", "games", games, unit="win points", digits=1)
        score_errors = [score_standard_error(cell["wins"], cell["draws"], cell["losses"]) for cell in (puct, contempt)]
        quantities[f"difference_score_{simulations}"] = Quantity(
            f"{label}: score", contempt["score"] - puct["score"], math.hypot(*score_errors), "se", "games", games,
            unit="score difference")
    return quantities


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, programs=programs, results=results)
