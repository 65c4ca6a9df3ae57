"""contempt-match (search-contempt, Table 2): at equal self-play decisiveness, which setting plays better chess?

From a contempt-selfplay run's settings (``selfplay_run``/settings.jsonl), the PUCT setting and the search-contempt
setting (τ1) whose (w+l)/d is nearest ``target_ratio`` on a log scale are chosen (``puct_temperature`` and
``sc_limit`` pick them by hand instead); with ``equal_decisiveness`` the PUCT setting is the one nearest the chosen
contempt setting's own (w+l)/d (:func:`choose_settings`).  The two then play each other at equal simulations with the same network and
search kind, root noise off, each keeping its own temperature schedule (moves sampled from the root visits, counted
from each game's start: :class:`zerolab.play.search_agents.SearchAgent`'s ``temperature``).  ``summary.json``: the chosen
settings with their self-play ratios, W/D/L from search-contempt's side with 95 % Wilson intervals, the Elo
difference ± 2σ (the project's estimator, one virtual draw), ``sampled_visit_fraction`` and ``wall_s``.  The games
are played in ``blocks`` equal blocks (each half with either side first), each a pairing of
:func:`zerolab.evaluation.pairings.play_pairings` with fresh agents (so each block's search statistics are its own):
``matches.json`` keeps each finished block with contempt's moves and search statistics, so a rerun plays only the
missing blocks; the games are in ``games/<contempt>-vs-<puct>[-block<b>].pgn``.  One block keeps the seed's key;
with more, block ``b`` plays with ``fold_in(key, b)``.
"""

from __future__ import annotations

import functools
import json
import logging
import pathlib
import time
from collections.abc import Callable

import jax

from contempt_search.experiment import (
    arm_search,
    base_network,
    nearest_setting,
    network_game,
    read_rows,
    temperature_schedule,
    temperature_settings,
)
from contempt_search.statistics import wdl_percentages
from experiments.common.experiment import Experiment
from experiments.common.contempt import base_run_config, check_contempt_config
from experiments.common.results import Quantity, score_quantity
from experiments.configs.contempt_match import ContemptMatchConfig, read_config
from zerolab import ProgramSection, SearchAgent, SearchConfig
from zerolab.evaluation import EloBook, Pairing, PairingRecord, play_pairings
from zerolab.play import AgentPool, Match, MatchResult, load_search_agent, play_match

logger = logging.getLogger(__name__)


def selfplay_row_fields(row: dict) -> dict:
    """What a chosen setting keeps of its contempt-selfplay row: its (w+l)/d with interval and sampled fraction."""
    return {"selfplay_ratio": row["ratio"], "selfplay_ratio_interval": row["ratio_interval"],
            "selfplay_sampled_visit_fraction": row.get("sampled_visit_fraction")}


def choose_settings(config: ContemptMatchConfig) -> dict[str, dict]:
    """``{"contempt": {sc_limit, temperature: "tau1", ...}, "puct": {temperature, ...}}``: by hand when
    ``sc_limit`` / ``puct_temperature`` are set, else the contempt-selfplay rows nearest ``target_ratio``.  With
    ``equal_decisiveness`` the PUCT setting's target is the chosen contempt setting's own self-play (w+l)/d instead (the
    paper's pairing: both settings equally decisive), read from its row."""
    rows = read_rows(pathlib.Path(config.selfplay_run) / "settings.jsonl") if config.selfplay_run else []
    chosen = {}
    if config.sc_limit > 0:
        chosen["contempt"] = {"name": f"contempt{config.sc_limit}-tau1", "sc_limit": config.sc_limit,
                              "temperature": "tau1", "chosen_by": "config"}
    if config.puct_temperature:
        chosen["puct"] = {"name": f"puct-{config.puct_temperature}", "sc_limit": None,
                          "temperature": config.puct_temperature, "chosen_by": "config"}
    wanted = {"contempt": lambda row: row["sc_limit"] is not None and row["temperature"] == "tau1",
              "puct": lambda row: row["sc_limit"] is None}
    target, target_text = config.target_ratio, f"(w+l)/d nearest {config.target_ratio}"
    for arm in ("contempt", "puct"):
        if arm not in chosen:
            candidates = [row for row in rows if wanted[arm](row)]
            if not candidates:
                raise FileNotFoundError(
                    f"selfplay_run={config.selfplay_run!r} holds no {arm} setting in settings.jsonl: run "
                    f"`python -m experiments run contempt-selfplay --workdir {config.selfplay_run or 'DIR'}` first, "
                    f"or give {'puct_temperature' if arm == 'puct' else 'sc_limit'}")
            row = nearest_setting(candidates, target)
            chosen[arm] = {"name": row["name"], "sc_limit": row["sc_limit"], "temperature": row["temperature"],
                           "chosen_by": target_text, **selfplay_row_fields(row)}
        if arm == "contempt" and config.equal_decisiveness:
            name = chosen["contempt"]["name"]
            row = next((row for row in rows if row["name"] == name), None)
            if row is None:
                raise FileNotFoundError(f"equal_decisiveness: selfplay_run={config.selfplay_run!r} has no row "
                                        f"{name!r} in settings.jsonl, whose (w+l)/d the PUCT setting must match")
            chosen["contempt"].update(selfplay_row_fields(row))
            target, target_text = float(row["ratio"]), f"(w+l)/d nearest {name}'s {float(row['ratio']):.3g}"
    return chosen


def setting_search(setting: dict, config: ContemptMatchConfig, base: SearchConfig) -> SearchConfig:
    """The search of a setting (:func:`contempt_search.experiment.arm_search`): the experiment's ``search`` section
    (its simulations, kind and PUCT rule ``selection``), no root noise, with the plain rules or contempt's at the
    setting's N_scl."""
    return arm_search(base, config.search, sc_limit=setting["sc_limit"])


def setting_agent(base: SearchAgent, setting: dict, config: ContemptMatchConfig) -> SearchAgent:
    """The base network (``base``: the run's agent; in a plan, on abstract variables) with the setting's search and
    temperature schedule, named by the setting: what the match plays, and what its plan compiles."""
    return base.with_search(setting_search(setting, config, base.search_config), name=setting["name"],
                            temperature=temperature_schedule(config, setting["temperature"]))


def match_summary(contempt_name: str, puct_name: str, result: MatchResult, contempt_statistics: dict) -> dict:
    """W/D/L from search-contempt's side with Wilson intervals, and the Elo difference ± 2σ."""
    book = EloBook()
    book.add_result(result)
    difference, sigma = book.fit().difference(contempt_name, puct_name)
    return {
        "players": [contempt_name, puct_name], **wdl_percentages(result.wins, result.draws, result.losses),
        "elo_difference": difference, "elo_two_sigma": 2 * sigma,
        "contempt_search_statistics": contempt_statistics,
    }


def check_config(config) -> None:
    """Every key, before the run directory is made: :func:`check_match_keys`, then the settings' choice (which reads
    ``selfplay_run``'s rows unless both settings are given)."""
    config = read_config(config)
    check_match_keys(config)
    choose_settings(config)


def check_match_keys(config: ContemptMatchConfig) -> None:
    """The keys all contempt launchers read, the games and blocks, the decisiveness target and the PUCT temperature."""
    check_contempt_config(config)
    games, blocks = config.games, config.blocks
    if blocks < 1 or games < 2 or games % (2 * blocks):
        raise ValueError(f"games={games} must split into blocks={blocks} blocks of an even number of games")
    if not config.target_ratio > 0:
        raise ValueError(f"target_ratio must be positive ((w+l)/d of self-play), got {config.target_ratio!r}")
    if config.puct_temperature:
        temperature_settings(config, config.puct_temperature)


def programs(config) -> list[ProgramSection]:
    """The sections of ``python -m experiments plan contempt-match``, declared (the command formats them): the two arms'
    searches (each SearchAgent's jitted search with its temperature schedule) and the arena's referee, compiled with
    abstract inputs; calls are upper bounds."""
    from contempt_search.plan import experiment_network, memory_notes
    from zerolab import PlannedProgram, abstract_states, compile_cost

    config = read_config(config)
    planned = experiment_network(config, base_run_config(config))
    try:
        chosen, how = choose_settings(config), "chosen as the run would choose them"
    except (FileNotFoundError, ValueError) as error:  # no contempt-selfplay rows yet: the choice is made at run time
        chosen = {"puct": {"name": "puct-tau1", "sc_limit": None, "temperature": "tau1"},
                  "contempt": {"name": f"contempt{config.sc_limit or 5}-tau1", "sc_limit": config.sc_limit or 5,
                               "temperature": "tau1"}}
        how = (f"chosen at run time from contempt-selfplay's rows ({error.__class__.__name__}: none at plan time); "
               f"planned as PUCT τ1 and contempt N_scl {chosen['contempt']['sc_limit']} τ1: any other choice compiles "
               f"the same shapes (τ and N_scl are constants of the program)")
    games, plies = config.games, config.max_game_plies
    simulations = setting_search(chosen["puct"], config, planned.base.search_config).num_simulations
    batch = games // 2  # play_match: two lock-step batches, one with each arm moving first
    programs = [setting_agent(planned.base, chosen[arm], config).planned_program(batch, plies)
                for arm in ("contempt", "puct")]
    game = planned.base.game
    cost = compile_cost("arena step (pgx)", game.batched_step.lower(abstract_states(game, batch),
                                                                    jax.ShapeDtypeStruct((batch,), jax.numpy.int32)))
    programs.append(PlannedProgram(cost, 2 * plies, f"one ply of {batch} games"))
    notes = [
        f"{games} games in two lock-step batches of {batch}; each arm moves on every other ply of each batch: ≤ "
        f"{plies} searches an arm (upper bounds: every game lasting {plies} plies)",
        f"settings: {how}",
        f"network: {planned.source}",
    ]
    notes += memory_notes(programs)
    return [ProgramSection(f"contempt-match: search-contempt against PUCT at {simulations} simulations, "
                           f"{planned.config.game.name}", programs, notes)]


def block_pairings(chosen: dict, config: ContemptMatchConfig) -> list[Pairing]:
    """The match's blocks as pairings, search-contempt's setting first: ``games / blocks`` games each, labelled
    ``<contempt>-vs-<puct>`` (one block) or ``...-block<b>``, under the seed's key (folded with ``b`` when there are
    several blocks)."""
    blocks, games = config.blocks, config.games // config.blocks
    contempt, puct = chosen["contempt"]["name"], chosen["puct"]["name"]
    key = jax.random.key(config.seed)
    return [Pairing(contempt, puct, games, key=jax.random.fold_in(key, block) if blocks > 1 else key,
                    label=f"{contempt}-vs-{puct}" + (f"-block{block}" if blocks > 1 else ""))
            for block in range(blocks)]


def play_block(base: Callable[[], SearchAgent], chosen: dict, config: ContemptMatchConfig, pairing: Pairing,
               key: jax.Array, pool: AgentPool) -> Match:
    """One block of the match with fresh agents on the base network (``base()`` loads it) so that each block's
    search statistics are its own (the pool is not used): its games, with contempt's moves and search statistics as
    the match's extras."""
    del pool
    contempt = setting_agent(base(), chosen["contempt"], config)
    puct = setting_agent(base(), chosen["puct"], config)
    played = play_match(contempt.game, contempt, puct, pairing.games, key, max_game_plies=config.max_game_plies,
                        show_progress=config.progress)
    contempt_moves = sum((record.plies + (record.first_player == contempt.name)) // 2 for record in played.games)
    played.extras = {"contempt_moves": contempt_moves, "contempt_search_statistics": contempt.search_statistics()}
    return played


def combine_blocks(records: list[PairingRecord]) -> dict:
    """The match from its blocks' records: W/D/L with Wilson intervals and the Elo difference over every game;
    contempt's search statistics averaged over the blocks weighted by its moves in each."""
    contempt_name, puct_name = records[0].result.players
    result = MatchResult(contempt_name, puct_name, wins=sum(record.result.wins for record in records),
                         draws=sum(record.result.draws for record in records),
                         losses=sum(record.result.losses for record in records))
    rows = [record.extras for record in records]
    moves = sum(row["contempt_moves"] for row in rows)
    names = sorted({name for row in rows for name in row["contempt_search_statistics"]})
    statistics = rows[0]["contempt_search_statistics"] if len(rows) == 1 else {
        name: sum(row["contempt_search_statistics"][name] * row["contempt_moves"] for row in rows) / max(moves, 1)
        for name in names}
    return {**match_summary(contempt_name, puct_name, result, statistics),
            "capped_games": sum(record.capped for record in records), "blocks": len(records),
            "match_s": sum(record.wall_s for record in records)}


def run(config, workdir: pathlib.Path) -> dict:
    started = time.perf_counter()
    settings = config.to_dict()  # as given: the summary's record
    config = read_config(config)
    workdir = pathlib.Path(workdir)
    check_match_keys(config)  # the door's check but the rows, which the choice below reads once
    workdir.mkdir(parents=True, exist_ok=True)
    chosen = choose_settings(config)
    network = base_network(config, base_run_config(config))
    base = functools.cache(functools.partial(load_search_agent, network, {"name": "base"}))  # loaded once, if played
    _, records = play_pairings(block_pairings(chosen, config), {}, network_game(network), workdir,
                               max_game_plies=config.max_game_plies,
                               play=functools.partial(play_block, base, chosen, config), event="contempt-match")
    match = combine_blocks(list(records.values()))
    logger.info("contempt-match: %s", json.dumps(match))
    summary = {"settings": settings, "network": str(network), "chosen": chosen, "match": match,
               "sampled_visit_fraction": match["contempt_search_statistics"].get("sampled_visit_fraction"),
               "wall_s": time.perf_counter() - started}
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def results(summary: dict, config) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): search-contempt's score against PUCT at equal decisiveness (se
    over games) and the Elo difference (2σ of the Elo fit)."""
    del config
    match = summary["match"]
    contempt, puct = match["players"]
    return {
        "score": score_quantity(f"score, {contempt} vs {puct}", match["wins"], match["draws"], match["losses"]),
        "elo": Quantity(f"Elo, {contempt} − {puct}", match["elo_difference"], match["elo_two_sigma"], "2σ", "games",
                        match["games"], unit="Elo", digits=0),
    }


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, programs=programs, results=results)
