"""sai-go-gnugo: an SAI network at several λ against GNU Go levels, both colours at one komi, with margins.

For each (λ, level) the network (PUCT, no root noise, ``simulations`` per move) plays ``games`` games, half as
Black; pgx referees at ``komi``.  Each game is replayed to count its Tromp–Taylor margin for SAI (area margin at the
komi, from SAI's side).  ``results.json`` has a row per (λ, level): score, wins/losses, the mean margin of all games
and of SAI's wins; ``summary.json`` the table.  Rows already in ``results.json`` are kept on a rerun.
"""

from __future__ import annotations

import json
import pathlib

import jax
import numpy as np

from zerolab.agents import make_agent
from zerolab.arena import play_match, write_pgn
from zerolab.games import make_game
from sai_go.agents import SaiAgent


def game_margin(game, moves: list[str]) -> float:
    """Black's area margin at the game's komi after ``moves`` (GTP vertices from the empty board)."""
    step = jax.jit(game.step)
    state = game.init(jax.random.key(0))
    for move in moves:
        state = step(state, game.gtp_to_action(move))
    return float(game.area_difference(state)) - game.komi


def run(config, workdir: pathlib.Path) -> dict:
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    results_path = workdir / "results.json"
    rows = json.loads(results_path.read_text()) if results_path.exists() else {}
    game = make_game("go", go_size=7, komi=float(config.komi))
    step = None if int(config.step) < 0 else int(config.step)
    base = SaiAgent.from_checkpoint(config.network, step, simulations=int(config.simulations))
    if base.game.size != game.size:
        raise ValueError(f"network={config.network!r} plays {base.game.size}x{base.game.size}, not 7x7")
    key = jax.random.key(int(config.seed))
    for level in config.gnugo_levels:
        engine = make_agent(f"gnugo:level={level}", game)
        try:
            for lam in config.lambdas:
                row_key = f"lambda={lam:g} gnugo-{level}"
                if row_key in rows:
                    continue
                agent = base.with_options(lam=float(lam), komi=float(config.komi), name=f"sai-lambda-{lam:g}",
                                          temperature_plies=int(config.temperature_plies))
                match = play_match(game, agent, engine, int(config.games), jax.random.fold_in(key, int(level)),
                                   max_game_plies=int(config.max_game_plies), show_progress=bool(config.progress))
                write_pgn(game, match, workdir / "games" / f"{agent.name}-vs-gnugo-{level}.sgf")
                margins = []
                for record in match.games:
                    black_margin = game_margin(game, record.moves)
                    margins.append(black_margin if record.first_player == agent.name else -black_margin)
                margins = np.array(margins)
                rows[row_key] = {"lambda": float(lam), "level": int(level), "games": match.result.games,
                                 "score": match.score, "wins": match.result.wins, "losses": match.result.losses,
                                 "mean_margin": float(margins.mean()),
                                 "mean_winning_margin": float(margins[margins > 0].mean()) if (margins > 0).any()
                                 else None, "margins": margins.tolist()}
                results_path.write_text(json.dumps(rows, indent=2))
        finally:
            engine.close()
    summary = {"network": str(config.network), "komi": float(config.komi), "simulations": int(config.simulations),
               "rows": {name: {k: v for k, v in row.items() if k != "margins"} for name, row in rows.items()}}
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
