"""Quickstart: train AlphaGateau (or, with ``model.name=resnet``, the AlphaZero ResNet) on Gardner chess, then
measure it honestly.

After training, the final network plays its own iteration-0 network with the same search on both sides, earlier kept
checkpoints play the iteration-0 network too, and the final network plays Fairy-Stockfish at its weakest setting.
The matches are one schedule of the "train then rate" recipe (:func:`zerolab.evaluation.train_then_rate`, its
:func:`~zerolab.evaluation.play_pairings`): all go into one Elo book
(``elo.json``, mean pinned at 1000; ``matches.json`` per match), plotted in ``figures/quickstart.png``;
``summary.json`` holds the headline numbers.  Rerunning on the same directory resumes training, then the matches.
"""

from __future__ import annotations

import pathlib

import jax

from zerolab import make_game
from zerolab.evaluation import EvaluationConfig, Pairing, checkpoint_loader, train_then_rate
from zerolab.play import EngineAgent
from experiments.common.experiment import Experiment
from experiments.common.results import Quantity, score_quantity


def checkpoint_name(step: int) -> str:
    return f"iteration-{step}"


NETWORK_LABELS = {"resnet": "AlphaZero ResNet", "alphagateau.network:make_alphagateau": "AlphaGateau"}


def check_config(config) -> None:
    """What only this launcher reads, checked before its run directory is made: the evaluation section, and at least
    one iteration (the matches rate trained checkpoints against iteration 0)."""
    EvaluationConfig.from_config(config.evaluation)
    if config.iterations < 1:
        raise ValueError(f"iterations must be at least 1 for quickstart (it rates the trained checkpoints), got "
                         f"{config.iterations}")


def schedule(config, workdir: pathlib.Path, game, steps: list[int]) -> tuple[list[Pairing], dict]:
    """The matches after training: each rated checkpoint against iteration 0 (the last over ``evaluation.games``
    games, the others over a quarter of that), then the last against ``evaluation.engine``; their agents."""
    evaluation = EvaluationConfig.from_config(config.evaluation)
    final_step = steps[-1]
    if final_step == 0:
        raise ValueError(f"{workdir} holds only the initial checkpoint: nothing to rate (iterations={config.iterations})")
    agents = {checkpoint_name(step): checkpoint_loader(workdir, step, game, evaluation, checkpoint_name(step))
              for step in steps}
    key = jax.random.key(config.seed + 1)
    pairings = [Pairing(checkpoint_name(step), checkpoint_name(0),
                        evaluation.games if step == final_step else max(2, (evaluation.games // 4) * 2),
                        key=jax.random.fold_in(key, step)) for step in steps[1:]]
    if evaluation.engine and evaluation.engine_games:
        agents[evaluation.engine] = lambda: EngineAgent(evaluation.engine, game)
        pairings.append(Pairing(checkpoint_name(final_step), evaluation.engine, evaluation.engine_games,
                                key=jax.random.fold_in(key, 2**31 - 1), label=f"{checkpoint_name(final_step)}-vs-engine"))
    return pairings, agents


def run(config, workdir: pathlib.Path) -> dict:
    evaluation = EvaluationConfig.from_config(config.evaluation)
    game = make_game(config.game.name, go_size=config.game.go_size, komi=config.game.komi)
    def rating_schedule(steps: list[int]) -> tuple[list[Pairing], dict]:
        return schedule(config, pathlib.Path(workdir), game, steps)

    rated = train_then_rate(config, workdir, game, rating_schedule, max_game_plies=evaluation.max_game_plies)
    ratings, final_step = rated.ratings, rated.steps[-1]
    final = rated.matches[f"{checkpoint_name(final_step)}-vs-{checkpoint_name(0)}"]
    engine = rated.matches.get(f"{checkpoint_name(final_step)}-vs-engine")
    references = {evaluation.engine: ratings[evaluation.engine]} if evaluation.engine in ratings else {}
    network_label = NETWORK_LABELS.get(config.model.name, config.model.name)
    figure_path = rated.plot("quickstart.png", {f"{network_label} (Gardner)": rated.curve(checkpoint_name)}, references,
                             title=f"score vs iteration 0: {final.score:.2f} over {final.result.games} games")
    engine_summary = {} if engine is None else {
        "score_vs_engine": engine.score, "games_vs_engine": engine.result.games, "engine_result": engine.summary(),
        "engine_fallback_moves": engine.fallback_moves[evaluation.engine]}
    return rated.write_summary({
        "score_vs_initial": final.score,
        "games_vs_initial": final.result.games,
        "result_vs_initial": final.summary(),
        "engine": evaluation.engine,
        **engine_summary,
    }, figure_path)


def match_score(label: str, result: dict) -> Quantity:
    """A match's score from its first player's side (``result``: a match summary, W/D/L) ± se over its games."""
    return score_quantity(label, result["wins"], result["draws"], result["losses"])


def results(summary: dict, config) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): the final network's score against its iteration 0 and, where it
    played one, against the evaluation engine (each ± se over its games), and the run's training wall time."""
    del config
    quantities = {"score_vs_initial": match_score("final network vs its iteration 0, score",
                                                  summary["result_vs_initial"])}
    if "engine_result" in summary:
        quantities["score_vs_engine"] = match_score(f"final network vs {summary['engine']}, score",
                                                    summary["engine_result"])
    quantities["wall_s"] = Quantity("the run's wall time", summary["wall_s"], unit="s", digits=0)
    return quantities


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, results=results)
