"""Fresh games against branches in one self-play call, beside the paper's proportion.

The paper follows each finished standard game by its own branches: each position after the first move branches with
probability p, at most ``max_branches`` a game (SAI's code: 3), so a fresh game of L plies brings
E[min(3, Bin(L − 1, p))] branches (:func:`expected_branches`).  One call of SAI's self-play with a run's network
(:func:`measure`) reports the fresh and branch games it finished, the branch points handed in and the paper's expected
count for the fresh games that finished.

``python -m sai_go.branch_proportion RUN_DIR --step 16 [--lanes 64 --plies 128 --queue 64 --simulations 16
--pass-rule free --keys 1 2 --branch-from-branches true false]`` prints one line per (key, setting).
"""

from __future__ import annotations

import argparse
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from zerolab import SearchConfig, SelfPlayConfig
from sai_go.agents import SaiAgent
from sai_go.selfplay import SaiSelfPlayOptions, make_sai_play_fn


def expected_branches(length: int, probability: float = 0.025, max_branches: int = 3) -> float:
    """E[min(max_branches, Bin(length − 1, probability))]: the branches the paper plays after a game of ``length``
    plies (its start position excluded)."""
    trials = max(int(length) - 1, 0)
    below = np.arange(max_branches)
    return float(np.sum(below * stats.binom.pmf(below, trials, probability))
                 + max_branches * stats.binom.sf(max_branches - 1, trials, probability))


def measure(run_directory: pathlib.Path, step: int, lanes: int, plies: int, queue: int, simulations: int,
            pass_rule: str, keys: list[int], settings: list[bool]) -> list[str]:
    """One line per (key, ``branch_from_branches`` setting): games finished, branches started / handed in /
    pending, the paper's expected branches for the finished fresh games, frames with value targets."""
    agent = SaiAgent.from_checkpoint(run_directory, step)
    config = SelfPlayConfig(num_games=lanes, plies_per_iteration=plies, max_game_plies=98, temperature_plies=8)
    search = SearchConfig(kind="muzero", num_simulations=simulations, dirichlet_alpha=0.03 * 361 / 49,
                          dirichlet_fraction=0.25)
    options = SaiSelfPlayOptions(lam=0.5, branch_probability=0.025, max_branches=3, queue_size=queue,
                                 pass_rule=pass_rule)
    play = jax.jit(make_sai_play_fn(agent.game, agent.network, search, config, options), static_argnums=2)
    lines = []
    for key in keys:
        for setting in settings:
            packed, records = jax.device_get(play(agent.variables, jax.random.key(key), lanes, None, None, None,
                                                  jnp.array(setting)))
            frames = packed.to_frames()
            over, branch = np.asarray(records.game_over), np.asarray(frames.extras["branch"])
            targets = np.asarray(frames.value_mask)
            lengths = np.asarray(records.game_length)[over & ~branch]
            total = {name: int(values[0, 0]) for name, values in records.summary.items()
                     if name.startswith(("branch", "fresh_games"))}
            lines.append(
                f"key {key}, branch_from_branches={setting}, {lanes} lanes x {plies} plies, queue {queue}, "
                f"pass_rule {pass_rule}: fresh games finished {total['fresh_games_finished']} (started "
                f"{total['fresh_games_started']}), branch games finished {total['branch_games_finished']} (started "
                f"{total['branches_started']}), branch points handed in "
                f"{total['branches_pushed'] + total['branches_dropped']} (dropped {total['branches_dropped']}, left "
                f"pending {total['branches_left_pending']}); the paper's expected branches for the finished fresh "
                f"games {sum(expected_branches(length) for length in lengths):.1f} (mean length "
                f"{lengths.mean():.1f}); frames with targets: fresh {int((targets & ~branch).sum())}, branch "
                f"{int((targets & branch).sum())}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_directory", type=pathlib.Path)
    parser.add_argument("--step", type=int, required=True)
    parser.add_argument("--lanes", type=int, default=64)
    parser.add_argument("--plies", type=int, default=128)
    parser.add_argument("--queue", type=int, default=64)
    parser.add_argument("--simulations", type=int, default=16)
    parser.add_argument("--pass-rule", default="free")
    parser.add_argument("--keys", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--branch-from-branches", nargs="+", default=["true", "false"], choices=["true", "false"])
    args = parser.parse_args(argv)
    settings = [value == "true" for value in args.branch_from_branches]
    for line in measure(args.run_directory, args.step, args.lanes, args.plies, args.queue, args.simulations,
                        args.pass_rule, args.keys, settings):
        print(line, flush=True)


if __name__ == "__main__":
    main()
