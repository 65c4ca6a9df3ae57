"""Who passes, at what komi, and whether it costs the game: passes by colour in held-out self-play from the empty
board (the games of sai-go-komi's calibration cells).

SAI's networks are trained at a komi drawn around their own α_∅.  A side that believes the komi already wins the game
may pass while the opponent still gains points; if that side is White and loses the games it passed in, Black wins at
komi above the fair one, the games' fair komi rises and α_∅ follows.  :func:`game_passes` reads, for each lane's first
game of a self-play call, the passes of each colour and the passer's own predicted winrate at each pass
(σ(β_s(α_s + k̄_s)), the network's at the searched position); :func:`pass_summary` groups them.

``python -m sai_go.passes RUN_DIR --steps 16 24 32 --seed 2 [--games 256 --simulations 16 --lam 0 --pass-rule
free]`` replays the
calibration cells of ``RUN_DIR`` (a sai-go-komi ``seed-<s>`` directory) with their own keys
(:func:`experiments.sai_go_komi.cell_key` is the same fold of ``jax.random.key(calibration seed)``) and prints one
:func:`pass_summary` per step as JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib

import jax
import numpy as np

from zerolab import SearchChanges
from sai_go.agents import SaiAgent
from sai_go.calibration import empty_board_value, fit_fair_komi, selfplay
from sai_go.value import signed_komi, winrate

#: A pass is "early" when more than this many plies of its game follow it.
EARLY_PASS_PLIES = 2


@dataclasses.dataclass(frozen=True)
class GamePasses:
    """Each lane's first game of a call from the empty board (numpy; ``G`` games, ``P`` passes).

    Attributes:
      komi: [G] the game's komi (to White).
      black_outcome: [G] 1 Black won, 0 Black lost, ½ a tie.
      length: [G] plies.
      black_passes, white_passes: [G] passes of each colour, the game's last two plies excluded (the closing passes).
      pass_game: [P] the game (index into ``komi``) of each early pass.
      pass_white: [P] the passer is White.
      pass_winrate: [P] the passer's own predicted winrate at the position it passed from.
    """

    komi: np.ndarray
    black_outcome: np.ndarray
    length: np.ndarray
    black_passes: np.ndarray
    white_passes: np.ndarray
    pass_game: np.ndarray
    pass_white: np.ndarray
    pass_winrate: np.ndarray


def game_passes(action, game_over, value_target, value_mask, alpha, beta, frame_komi, pass_action: int) -> GamePasses:
    """:class:`GamePasses` of a call's frames and records (every argument ``[T, B]``; ply 0 of each lane is Black's
    move on the empty board, so White moves at odd plies).  A lane whose first game did not end is left out; passes
    within the last :data:`EARLY_PASS_PLIES` plies of a game (the passes that end it) are not counted."""
    action, game_over, value_mask = np.asarray(action), np.asarray(game_over, bool), np.asarray(value_mask, bool)
    outcome = (np.asarray(value_target, np.float64) + 1.0) / 2.0
    white_to_move = (np.arange(action.shape[0]) % 2 == 1)[:, None] & np.ones(action.shape, bool)
    komi = np.asarray(frame_komi, np.float32)
    predicted = np.asarray(winrate(np.asarray(alpha, np.float32), np.asarray(beta, np.float32),
                                   signed_komi(komi, ~white_to_move)), np.float64)
    games = {name: [] for name in ("komi", "black_outcome", "length", "black_passes", "white_passes")}
    pass_game, pass_white, pass_winrate = [], [], []
    for lane in range(action.shape[1]):
        ends = np.flatnonzero(game_over[:, lane])
        if len(ends) == 0 or not value_mask[0, lane]:
            continue
        length = int(ends[0]) + 1
        early = np.flatnonzero(action[:max(length - EARLY_PASS_PLIES, 0), lane] == pass_action)
        white = early % 2 == 1
        index = len(games["komi"])
        for name, value in (("komi", float(komi[0, lane])), ("black_outcome", float(outcome[0, lane])),
                            ("length", length), ("black_passes", int((~white).sum())),
                            ("white_passes", int(white.sum()))):
            games[name].append(value)
        pass_game.extend([index] * len(early))
        pass_white.extend(white.tolist())
        pass_winrate.extend(predicted[early, lane].tolist())
    return GamePasses(**{name: np.asarray(values, np.float64 if name in ("komi", "black_outcome") else np.int64)
                         for name, values in games.items()},
                      pass_game=np.asarray(pass_game, np.int64), pass_white=np.asarray(pass_white, bool),
                      pass_winrate=np.asarray(pass_winrate, np.float64))


def mean_se(values) -> list[float]:
    """Mean and ``sd(ddof=1)/√n`` (NaN se below two values; NaN mean for none)."""
    values = np.asarray(values, np.float64)
    if values.size == 0:
        return [float("nan"), float("nan")]
    se = float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else float("nan")
    return [float(values.mean()), se]


def pass_summary(passes: GamePasses, fair_komi: float) -> dict:
    """Passes by colour against the komi: per game means ± se, split by the game's komi against ``fair_komi`` (the
    network's α_∅: above it the komi favours White by the network's own reckoning); for early passes, the share
    made by a passer that predicted a win (winrate > ½), and Black's win rate in games where White passed early
    against games where it did not (± binomial se); the games' own fair komi (:func:`fit_fair_komi`)."""
    high = passes.komi > fair_komi
    white_passed = passes.white_passes > 0
    winning = passes.pass_winrate > 0.5
    summary = {"games": int(passes.komi.size), "fair_komi": float(fair_komi),
               "mean_length": mean_se(passes.length),
               "fair_komi_fit": fit_fair_komi(passes.komi, passes.black_outcome)["fair_komi"]}
    for name, mask in (("all", np.ones_like(high)), ("komi_above_fair", high), ("komi_below_fair", ~high)):
        summary[name] = {"games": int(mask.sum()), "black_passes": mean_se(passes.black_passes[mask]),
                         "white_passes": mean_se(passes.white_passes[mask]),
                         "black_wins": mean_se(passes.black_outcome[mask])}
    for colour, mask in (("white", passes.pass_white), ("black", ~passes.pass_white)):
        summary[f"{colour}_early_passes"] = int(mask.sum())
        summary[f"{colour}_passes_predicting_a_win"] = mean_se(winning[mask].astype(np.float64))
    summary["black_wins_when_white_passed_early"] = mean_se(passes.black_outcome[white_passed])
    summary["black_wins_when_white_did_not"] = mean_se(passes.black_outcome[~white_passed])
    summary["komi_when_white_passed_early"] = mean_se(passes.komi[white_passed])
    summary["komi_when_white_did_not"] = mean_se(passes.komi[~white_passed])
    return summary


def measure(run_directory: pathlib.Path, step: int, games: int, simulations: int, lam: float, seed: int,
            calibration_seed: int = 1234, pass_rule: str = "free") -> dict:
    """The calibration cell of ``run_directory`` at ``step`` replayed with its own key, as :func:`pass_summary`."""
    agent = SaiAgent.from_checkpoint(run_directory, step, lam=lam, search=SearchChanges.of(num_simulations=simulations))
    alpha, beta = empty_board_value(agent.network, agent.variables, agent.game)
    key = jax.random.fold_in(jax.random.fold_in(jax.random.key(calibration_seed), seed), step)
    frames, records = selfplay(agent, games, key, pass_rule=pass_rule)
    passes = game_passes(records.action, records.game_over, frames.value_target, frames.value_mask,
                         frames.extras["alpha"], records.summary["mean_beta"], frames.extras["komi"],
                         agent.game.pass_action)
    return {"step": step, "alpha": alpha, "beta": beta, **pass_summary(passes, alpha)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_directory", type=pathlib.Path)
    parser.add_argument("--steps", type=int, nargs="+", required=True)
    parser.add_argument("--games", type=int, default=256)
    parser.add_argument("--simulations", type=int, default=16)
    parser.add_argument("--lam", type=float, default=0.0)
    parser.add_argument("--seed", type=int, required=True, help="the run's training seed (the cell key's fold)")
    parser.add_argument("--pass-rule", default="free", help="the self-play pass rule (free | no_losing_pass)")
    args = parser.parse_args(argv)
    for step in args.steps:
        print(json.dumps(measure(args.run_directory, step, args.games, args.simulations, args.lam, args.seed,
                                 pass_rule=args.pass_rule)), flush=True)


if __name__ == "__main__":
    main()
