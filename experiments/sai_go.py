"""sai-go: SAI training on 7×7 Go, then its checkpoints against GNU Go and against its own first network.

Training is the core loop with SAI's method (``sai_go.train``): each iteration's line in ``metrics.jsonl`` has the
losses, the mean β of the searched roots, the mean absolute error of the score estimate α^B − k against the final
margin of counted games, the fresh games' komi (mean and spread), and the branches started, pushed and dropped.
After training, checkpoint 0, every ``checkpoint.keep_period``-th and the last play GNU Go at each of
``evaluation.gnugo_levels`` (both colours at ``evaluation.komi``; the paper rated White only against its panel) and
the last plays checkpoint 0: one schedule of the "train then rate" recipe (:func:`zerolab.evaluation.train_then_rate`),
all results in one Elo book (``elo.json``; ``matches.json`` per match, games as SGF in ``games/``).
``figures/sai-go.png`` shows the training curves and the ratings; ``summary.json`` holds the numbers.  Rerunning on
the same directory resumes training, then the matches.
"""

from __future__ import annotations

import functools
import pathlib

import jax

from zerolab import make_game
from zerolab.evaluation import Pairing, PairingRecord, train_then_rate
from zerolab.play import make_agent
from sai_go.agents import SaiAgent
from experiments.common.experiment import Experiment
from experiments.common.results import Quantity, score_quantity
from experiments.common.sai_go import check_play_keys
from experiments.configs.sai_go import SaiGoEvaluationConfig, read_config
from zerolab.training import RunConfig


def checkpoint_name(step: int) -> str:
    return f"sai-{step}"


def colour_scores(record: PairingRecord) -> dict:
    """Player A's score as Black (moving first) and as White (komi favours White), for the colours it played."""
    scores = {"black_score": record.first_mover_score, "white_score": record.second_mover_score}
    return {name: score for name, score in scores.items() if score is not None}


def schedule(evaluation: SaiGoEvaluationConfig, seed: int, workdir: pathlib.Path, game,
             steps: list[int]) -> tuple[list[Pairing], dict]:
    """Checkpoint 0, every ``checkpoint.keep_period``-th and the last against GNU Go at each level, then the last
    against checkpoint 0; their agents (the run's ``seed`` keys the matches)."""
    final_step = steps[-1]
    key = jax.random.key(seed + 1)

    def agent(step: int) -> SaiAgent:
        loaded = SaiAgent.from_checkpoint(workdir, step, lam=evaluation.lam, search=evaluation.search,
                                          name=checkpoint_name(step))
        return loaded.with_options(komi=evaluation.komi, temperature_plies=evaluation.temperature_plies)

    agents = {checkpoint_name(step): functools.partial(agent, step) for step in steps}
    engines = {level: f"gnugo:level={level}" for level in evaluation.gnugo_levels}
    agents.update({spec: functools.partial(make_agent, spec, game) for spec in engines.values()})
    games = evaluation.games
    pairings = [Pairing(checkpoint_name(step), engines[level], games, key=jax.random.fold_in(key, step * 16 + level),
                        label=f"{checkpoint_name(step)}-vs-gnugo-{level}")
                for step in steps for level in evaluation.gnugo_levels]
    if final_step != 0:
        pairings.append(Pairing(checkpoint_name(final_step), checkpoint_name(0), games,
                                key=jax.random.fold_in(key, 2**20)))
    return pairings, agents


def check_config(config) -> None:
    """The evaluation section (only this launcher reads it), before the run directory is made."""
    check_play_keys(read_config(config).evaluation, "evaluation.")


def run(config, workdir: pathlib.Path) -> dict:
    evaluation, seed = read_config(config).evaluation, RunConfig.from_config(config).seed
    game = make_game("go", go_size=config.game.go_size, komi=evaluation.komi)

    def rating_schedule(steps: list[int]) -> tuple[list[Pairing], dict]:
        return schedule(evaluation, seed, pathlib.Path(workdir), game, steps)

    # the training itself reads the whole config (the core's readers)
    rated = train_then_rate(config, workdir, game, rating_schedule, max_game_plies=evaluation.max_game_plies)
    ratings = rated.ratings
    references = {f"gnugo-{level}": ratings[f"gnugo:level={level}"] for level in evaluation.gnugo_levels
                  if f"gnugo:level={level}" in ratings}
    figure_path = rated.plot("sai-go.png", {"SAI (7×7)": rated.curve(checkpoint_name)}, references, training=[
        (("loss", "policy_loss", "value_loss"), "loss"),
        (("mean_beta", "score_estimate_mae", "fresh_komi_mean", "fresh_komi_std"), "value")])
    return rated.write_summary({
        "scores": {label.replace("-vs-", " vs "): {**record.summary(), **colour_scores(record)}
                   for label, record in rated.matches.items()},
        "last_record": rated.records[-1] if rated.records else {},
    }, figure_path)


def results(summary: dict, config) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): each rating match's score from its first player's side (± se over
    its games: the checkpoints against GNU Go at each level and the last against checkpoint 0), and the run's
    training wall time."""
    del config
    quantities: dict[str, Quantity] = {}
    for label, match in summary["scores"].items():
        if "wins" not in match:  # a summary written before the matches' W/D/L were kept
            continue
        quantities[f"score_{label.replace(' vs ', '_vs_')}"] = score_quantity(
            f"{label}, score", match["wins"], match["draws"], match["losses"])
    quantities["training_wall_s"] = Quantity("training wall time", summary["training_wall_s"], unit="s", digits=0)
    return quantities


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, results=results)
