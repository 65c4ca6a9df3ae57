"""sai-go-gnugo: an SAI network at several λ against GNU Go levels, both colours at one komi, with margins; and, as
extensions the paper could not assess on 7×7, games at other komi and handicap games.

For each (λ, level) the network (PUCT, no root noise, the run's search changed by the ``search`` section:
``search.num_simulations`` per move; its first ``temperature_plies`` plies drawn from the visits) plays ``games``
games, half as Black; pgx referees at ``komi``.  Each game is replayed to count its Tromp–Taylor margin for SAI (area
margin at the game's komi, from SAI's side).

Extensions (rows marked ``"extension": true``), each (λ, level) again, ``games`` games, both colours:

* ``komi_values`` — the same match at other komi (GNU Go is told the komi too);
* ``handicaps`` — ``1``: no stones, Black moves first at ``handicap_komi`` (the usual one-stone handicap);
  ``n`` ≥ 2: the fixed handicap stones (:mod:`sai_go.handicap`, C3 and E5 for two) as the arena's start position,
  White to move, at ``handicap_komi``.  Half the games SAI takes the handicap (Black), half it gives it (White).

Every row is one pairing of :func:`zerolab.evaluation.pairings.play_pairings` (in the setting's game: pgx and GNU Go
at its komi), whose record in ``matches.json`` keeps the row: score, wins/losses, the score and margins as Black and
as White, the mean margin of all games and of SAI's wins, and GNU Go's fallback moves (a resignation or a move pgx
refuses, replaced by a random legal move by the core's GTP agent: the arena has no resignation); a rerun plays only
the rows not there.  ``elo.json`` books every row; the players of an extension row carry its setting in their names
(``sai-lambda-0 handicap 2``), so the main komi's ratings are its own.  ``summary.json`` holds the table; games go to
``games/*.sgf``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pathlib
import zlib

import jax
import numpy as np

from zerolab import ProgramSection, check_at_least, make_game
from zerolab.evaluation import Pairing, play_pairings
from zerolab.play import Match, check_agent_spec, make_agent, play_match
from sai_go.agents import SaiAgent
from sai_go.handicap import handicap_start
from experiments.common.experiment import Experiment
from experiments.common.results import Quantity, score_quantity
from experiments.common.sai_go import check_play_keys, check_sai_network
from experiments.configs.sai_go_gnugo import SaiGoGnugoConfig, read_config


def game_margin(game, moves: list[str]) -> float:
    """Black's area margin at the game's komi after ``moves`` (GTP vertices from the empty board)."""
    step = game.jitted_step
    state = game.init(jax.random.key(0))
    for move in moves:
        state = step(state, game.gtp_to_action(move))
    return float(game.area_difference(state)) - game.komi


def settings(config: SaiGoGnugoConfig) -> list[dict]:
    """Every (komi, start position) the match is played at: the main komi, then the extensions."""
    rows = [{"setting": f"komi {config.komi:g}", "komi": config.komi, "start": None, "extension": False}]
    rows += [{"setting": f"komi {komi:g}", "komi": komi, "start": None, "extension": True}
             for komi in config.komi_values if komi != config.komi]
    for stones in config.handicaps:
        start = None if stones == 1 else handicap_start(7, stones)
        rows.append({"setting": f"handicap {stones}", "komi": config.handicap_komi, "start": start,
                     "extension": True})
    return rows


def play_row(game, agent: SaiAgent, engine, setting: dict, config: SaiGoGnugoConfig, key) -> tuple[dict, Match]:
    """``config.games`` games of ``agent`` against ``engine`` in one setting, half with each colour."""
    start_fens = None if setting["start"] is None else [setting["start"]] * (config.games // 2)
    match = play_match(game, agent, engine, config.games, key, max_game_plies=config.max_game_plies,
                       show_progress=config.progress, start_fens=start_fens)
    by_colour: dict[str, list[tuple[float, float]]] = {"black": [], "white": []}
    for record in match.games:
        start = record.start_fen.split() if record.start_fen else []
        black = record.first_player if len(start) % 2 == 0 else record.second_player
        black_margin = game_margin(game, start + record.moves)
        score = record.first_player_score if record.first_player == agent.name else 1 - record.first_player_score
        colour = "black" if black == agent.name else "white"
        by_colour[colour].append((score, black_margin if colour == "black" else -black_margin))
    margins = np.array([margin for rows in by_colour.values() for _, margin in rows])
    row = {"games": match.result.games, "score": match.score, "wins": match.result.wins,
           "losses": match.result.losses, "mean_margin": float(margins.mean()),
           "margin_se": float(margins.std(ddof=1) / np.sqrt(len(margins))) if len(margins) > 1 else None,
           "mean_winning_margin": float(margins[margins > 0].mean()) if (margins > 0).any() else None}
    for colour, rows in by_colour.items():
        row[f"{colour}_score"] = float(np.mean([score for score, _ in rows]))
        row[f"{colour}_margins"] = [margin for _, margin in rows]
    return row, match


def programs(config) -> list[ProgramSection]:
    """The sections of ``python -m experiments plan sai-go-gnugo``, declared (the command formats them): the SAI agent's
    λ search, the arena's referee and the margin replay, compiled with abstract inputs; calls are upper bounds (every
    game lasting ``max_game_plies``)."""
    config = read_config(config)
    programs, notes = planned_programs(config)
    return [ProgramSection(f"sai-go-gnugo: SAI at λ {config.lambdas} against GNU Go, 7x7 Go", programs, notes)]


def planned_programs(config: SaiGoGnugoConfig) -> tuple[list, list[str]]:
    """``(programs, notes)`` of :func:`programs`: each :class:`zerolab.PlannedProgram` with its calls."""
    from experiments.common.sai_go import run_model
    from sai_go.plan import pgx_step_program

    model, source = run_model(config.network)
    rows = settings(config)
    start_moves = max(len(row["start"].split()) if row["start"] else 0 for row in rows)
    komis = sorted({row["komi"] for row in rows})
    matches = len(rows) * len(config.gnugo_levels) * len(config.lambdas)
    games, plies = config.games, config.max_game_plies
    batch = games // 2  # play_match: two lock-step batches, one with each colour moving first
    game = model.game(config.komi)
    pairings, agents, _ = schedule(config, model.sai_agent(config.search))
    sai = agents[pairings[0].player_a]()  # the run's first SAI agent, on abstract variables: λ and komi are arguments
    programs = [
        sai.planned_program(batch, matches * plies, name="SAI λ search"),
        pgx_step_program("arena step (pgx)", game, batch, matches * 2 * plies, f"one ply of {batch} games"),
        pgx_step_program("margin replay step (pgx)", game, None, matches * games * (plies + start_moves),
                         "one move of one game, replayed to count its margin"),
    ]
    notes = [
        f"{matches} matches = {len(rows)} settings ({', '.join(row['setting'] for row in rows)}) × "
        f"{len(config.gnugo_levels)} GNU Go levels × {len(config.lambdas)} λ; each {games} games in two lock-step "
        f"batches of {batch}; SAI moves on every other ply of each batch: ≤ {plies} searches a match "
        f"(calls: upper bounds, every game lasting {plies} plies)",
        f"the search is compiled once per komi ({', '.join(f'{komi:g}' for komi in komis)}: the komi is part of the "
        f"game): {len(komis)} compilations of the program above, λ and the komi of each game are arguments",
        f"network: {source} ({model.run_config.model.num_blocks} blocks × {model.run_config.model.channels} "
        f"channels), abstract variables",
        f"not planned (not JAX programs): GNU Go at levels {config.gnugo_levels}, {matches * games} games "
        f"≤ {(plies + 1) // 2} moves each",
    ]
    return programs, notes


def schedule(config: SaiGoGnugoConfig, base: SaiAgent) -> tuple[list[Pairing], dict, dict[str, dict]]:
    """Every row as a pairing (setting → level → λ, the order the rows were always played in): the pairings, their
    agents' loaders and each row's setting by label."""
    key = jax.random.key(config.seed)
    pairings, agents, rows = [], {}, {}
    for setting in settings(config):
        game = make_game("go", go_size=7, komi=setting["komi"])
        suffix = f" {setting['setting']}" if setting["extension"] else ""
        for level in config.gnugo_levels:
            engine = f"gnugo:level={level}"
            agents[engine + suffix] = functools.partial(named_engine, engine, game, engine + suffix)  # told the komi
            row_seed = jax.random.fold_in(key, level)  # the main rows' seed, as before the extensions
            if setting["extension"]:
                row_seed = jax.random.fold_in(row_seed, zlib.crc32(setting["setting"].encode()))
            for lam in config.lambdas:
                name = f"sai-lambda-{lam:g}"
                agents[name + suffix] = functools.partial(
                    base.with_options, lam=lam, komi=setting["komi"], name=name + suffix,
                    temperature_plies=config.temperature_plies)
                label = f"{name}-vs-gnugo-{level}" + (f"-{setting['setting'].replace(' ', '-')}"
                                                      if setting["extension"] else "")
                pairings.append(Pairing(name + suffix, engine + suffix, config.games, key=row_seed, game=game,
                                        label=label))
                rows[label] = {"row": f"lambda={lam:g} gnugo-{level}{suffix}", "lambda": lam, "level": level, **{k: setting[k] for k in ("setting", "komi", "start",
                                                                                 "extension")}}
    return pairings, agents, rows


def named_engine(spec: str, game, name: str):
    """GNU Go from ``spec`` at ``game``'s komi, booked under ``name``."""
    engine = make_agent(spec, game)
    engine.name = name
    return engine



def check_config(config) -> None:
    """Every key, before the run directory is made: the network run (7×7 Go, the step), the play keys, and GNU Go."""
    config = read_config(config)
    check_sai_network("network", config.network, [config.step])
    check_play_keys(config)
    for handicap in config.handicaps:
        check_at_least("handicaps", handicap, 1)
    check_agent_spec("gnugo", "gnugo")


def run(config, workdir: pathlib.Path) -> dict:
    config = read_config(config)
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    step = None if config.step < 0 else config.step
    base = SaiAgent.from_checkpoint(config.network, step, search=config.search)
    if base.game.size != 7:
        raise ValueError(f"network={config.network!r} plays {base.game.size}x{base.game.size}, not 7x7")
    pairings, agents, rows = schedule(config, base)

    def play(pairing: Pairing, key, pool) -> Match:
        row = rows[pairing.name]
        engine = pool[pairing.player_b]
        measured, match = play_row(pairing.game, pool[pairing.player_a], engine, row, config, key)
        # GNU Go's resignations and moves pgx refuses, each replaced by a random legal move (the core's GTP agent:
        # the arena has no resignation), so SAI's margins in such games are flattered
        measured["gnugo_fallback_moves"] = match.fallback_moves.get(engine.name, 0)
        return dataclasses.replace(match, extras={**row, **measured})

    _, records = play_pairings(pairings, agents, base.game, workdir, max_game_plies=config.max_game_plies,
                               play=play)
    table = {record.extras["row"]: {k: v for k, v in record.extras.items() if k != "row"}
             for record in records.values()}
    summary = {"network": config.network, "komi": config.komi, "simulations": base.search.num_simulations,
               "note": "rows marked extension (other komi, handicap) go beyond the paper, which could not assess "
                       "handicap or margins against weaker opponents on 7x7",
               "rows": {name: {k: v for k, v in row.items() if not k.endswith("margins")}
                        for name, row in table.items()}}
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def results(summary: dict, config) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): for each setting (a λ against a GNU Go level, at a komi or with a
    handicap), SAI's score and its mean final margin from its side in points, each ± se over the setting's games."""
    del config
    quantities: dict[str, Quantity] = {}
    for name, row in summary["rows"].items():
        key = name.replace("=", "").replace(" ", "_")
        draws = row["games"] - row["wins"] - row["losses"]
        quantities[f"score_{key}"] = score_quantity(f"{name}: SAI's score", row["wins"], draws, row["losses"])
        quantities[f"margin_{key}"] = Quantity(f"{name}: SAI's mean final margin (points)", row["mean_margin"],
                                               row.get("margin_se"), "se", "games", row["games"], unit="points",
                                               digits=1)
    return quantities


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, programs=programs, results=results)
