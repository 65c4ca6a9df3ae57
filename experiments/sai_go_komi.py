"""sai-go-komi: does SAI's fair komi α_∅ move toward 7×7's 9 over training, and does the sigmoid σ(β(α − k))
predict games at their komi? (``experiments/configs/sai_go_komi.py``; statistics in :mod:`sai_go.calibration`.)

``run(config, workdir)``:

1. for each seed of ``config.seeds``, trains sai-go's config with that seed in ``workdir/seed-<s>`` (the core's
   loop: rerunning resumes);
2. for each seed and checkpoint 0, every ``checkpoint.keep_period``-th and the last (a *cell*): the network's α_∅, β_∅ at the empty board and
   ``calibration.games`` held-out self-play games from the empty board at komi drawn as in training, at λ
   ``calibration.lam`` (None: the training λ, ``method_options.lam``) and the training's
   ``method_options.pass_rule`` (:func:`sai_go.calibration.selfplay`), kept in
   ``workdir/seed-<s>/calibration/step-<n>.npz``; a rerun measures only the missing cells (or those measured with
   other settings; a cell stored without λ was measured at λ 0), and a cell's keys depend on (seed, step) alone, so
   a lost cell is replayed identically;
3. ``summary.json``: for each step, α_∅ and β_∅ of each seed and their mean ± se over seeds; the empirical fair komi
   (where Black's observed winrate is ½: a logistic fit over the step's games, each seed's ± its se, and the mean ±
   se over seeds); the komi calibration of the seeds' games pooled (Black's predicted winrate at the empty board at
   each game's komi, and the mover's at every position: Brier score, log-loss and bias ± se, against a komi-blind
   baseline, the leave-one-game-out win rate; reliability bins); and the trend: each seed's least-squares slope of
   α_∅ over the iterations and its last α_∅ − 9, mean ± se over seeds.  ``table.md`` is the README's table,
   ``figures/sai-go-komi.png`` the trend, the last step's reliability and the Brier scores by step.

Standard errors between seeds use ``sd(ddof=1)/√seeds``; those of pooled games are clustered by game.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import os
import pathlib
import time

import jax
import ml_collections
import numpy as np

from experiments.common.experiment import Experiment
from experiments.common.results import Quantity
from experiments.common.sai_go import check_play_keys, checked_simulations
from experiments.configs.sai_go_komi import read_config
from zerolab import Checkpointer, SearchChanges, check_at_least, section_dataclass, train
from zerolab.evaluation import new_figure, rated_steps, save_figure
from zerolab.frontends import prepare_experiment, training_config
from zerolab.training import RunConfig
from sai_go.agents import SaiAgent
from sai_go.calibration import (HeldoutGames, calibration, cluster_mean_se, concatenate, empty_board_value,
                                first_games, fit_fair_komi, ols_slope, selfplay)
from sai_go.selfplay import SaiSelfPlayOptions

logger = logging.getLogger(__name__)

#: The fields of :class:`HeldoutGames`, stored beside α_∅ and β_∅ in a cell's file.
GAME_FIELDS = tuple(field.name for field in dataclasses.fields(HeldoutGames))
#: 7×7 Go's fair komi under perfect play (SAI paper, note 3): where α_∅ should go.
TRUE_FAIR_KOMI = 9.0


def training_configs(config: ml_collections.ConfigDict, seed: int | None = None) -> dict[str, ml_collections.ConfigDict]:
    """The training config of ``seed`` (default: the first of ``config.seeds``)."""
    seeds = read_config(config).seeds
    if not seeds:
        raise ValueError("seeds must list at least one seed, got []")
    seed = seeds[0] if seed is None else seed
    return {f"seed-{seed}": training_config(config, config.model, seed=seed)}


def check_config(config: ml_collections.ConfigDict) -> None:
    """The calibration section, before the run directory is made; the training runs are the core's to check."""
    calibration_section = read_config(config).calibration
    check_play_keys(calibration_section, "calibration.")
    checked_simulations(calibration_section.search, "calibration.search")
    check_at_least("calibration.bins", calibration_section.bins, 1)
    calibration_lambda(config)


def training_options(config: ml_collections.ConfigDict) -> SaiSelfPlayOptions:
    """The training's SAI self-play options (``method_options``, read as :class:`sai_go.selfplay.SaiSelfPlayOptions`;
    ``value_loss`` is the loss's)."""
    return section_dataclass(SaiSelfPlayOptions, config.method_options, "method_options",
                             read_elsewhere=("value_loss",))


def calibration_lambda(config: ml_collections.ConfigDict) -> float:
    """λ of the held-out games: ``calibration.lam``, or the training λ (``method_options.lam``) when None."""
    lam = read_config(config).calibration.lam
    return training_options(config).lam if lam is None else lam


def cell_key(base_seed: int, seed: int, step: int) -> jax.Array:
    return jax.random.fold_in(jax.random.fold_in(jax.random.key(base_seed), seed), step)


def measure_cell(run_directory: pathlib.Path, step: int, settings: dict, key: jax.Array) -> dict:
    """α_∅, β_∅ and the held-out games (:class:`HeldoutGames` fields) of the run's checkpoint ``step``;
    ``settings`` as :func:`run` makes them, typed (``games``, ``simulations``: int, ``lam``: float, ``pass_rule``:
    str; ``simulations`` is ``calibration.search.num_simulations``)."""
    agent = SaiAgent.from_checkpoint(run_directory, step, lam=settings["lam"],
                                     search=SearchChanges.of(num_simulations=settings["simulations"]))
    alpha, beta = empty_board_value(agent.network, agent.variables, agent.game)
    frames, records = selfplay(agent, settings["games"], key, pass_rule=settings["pass_rule"])
    games = first_games(records.game_over, frames.value_target, frames.value_mask, frames.extras["alpha"],
                        records.summary["mean_beta"], frames.extras["signed_komi"], frames.extras["komi"])
    return {"alpha": alpha, "beta": beta, **dataclasses.asdict(games)}


def load_or_measure_cell(run_directory: pathlib.Path, step: int, settings: dict, key: jax.Array) -> dict:
    """The cell stored in ``calibration/step-<n>.npz`` if it was measured with ``settings``, else measured and
    stored (written to a temporary file, then renamed: a killed run leaves no half cell)."""
    path = run_directory / "calibration" / f"step-{step:04d}.npz"
    if path.exists():
        with np.load(path) as stored:
            # cells stored before λ and the pass rule: λ 0, free passes
            if {"lam": 0.0, "pass_rule": "free", **json.loads(str(stored["settings"]))} == settings:
                return {name: stored[name] for name in stored.files if name != "settings"}
    started = time.perf_counter()
    cell = measure_cell(run_directory, step, settings, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.savez(buffer, settings=json.dumps(settings), **cell)
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(buffer.getvalue())
    os.replace(temporary, path)
    logger.info("%s step %d: α_∅ %.2f, β_∅ %.3f, %d games (%.0f s)", run_directory.name, step, cell["alpha"],
                cell["beta"], len(cell["komi"]), time.perf_counter() - started)
    return {name: np.asarray(value) for name, value in cell.items()}


def games_of(cell: dict) -> HeldoutGames:
    return HeldoutGames(**{field: cell[field] for field in GAME_FIELDS})


def mean_se(values) -> list[float]:
    """Mean and standard error over independent values (seeds), leaving out NaN (a seed without a fit)."""
    values = np.asarray(values, np.float64)
    return list(cluster_mean_se(values[np.isfinite(values)]))


def step_summary(step: int, cells: dict[int, dict], bins: int) -> dict:
    """One step's row: each seed's α_∅, β_∅ and fair-komi fit, their means ± se over seeds, and the pooled
    calibration of the seeds' games (each game predicted from its own network's empty board)."""
    seeds = sorted(cells)
    alpha = {seed: float(cells[seed]["alpha"]) for seed in seeds}
    beta = {seed: float(cells[seed]["beta"]) for seed in seeds}
    fits = {seed: fit_fair_komi(cells[seed]["komi"], cells[seed]["black_outcome"]) for seed in seeds}
    games = [games_of(cells[seed]) for seed in seeds]
    per_game_alpha = np.concatenate([np.full(part.komi.size, alpha[seed]) for seed, part in zip(seeds, games)])
    per_game_beta = np.concatenate([np.full(part.komi.size, beta[seed]) for seed, part in zip(seeds, games)])
    return {
        "step": step, "alpha": alpha, "beta": beta, "alpha_mean_se": mean_se(list(alpha.values())),
        "beta_mean_se": mean_se(list(beta.values())), "fair_komi_fit": fits,
        "fair_komi_fit_mean_se": mean_se([fit["fair_komi"][0] for fit in fits.values()]),
        "calibration": calibration(concatenate(games), per_game_alpha, per_game_beta, bins),
    }


def trend(rows: list[dict]) -> dict:
    """Each seed's least-squares slope of α_∅ over the iterations (points per iteration) and its last α_∅ minus 9,
    with their means ± se over seeds."""
    steps = [row["step"] for row in rows]
    slopes = {seed: ols_slope(steps, [row["alpha"][seed] for row in rows]) for seed in rows[0]["alpha"]}
    distance = {seed: rows[-1]["alpha"][seed] - TRUE_FAIR_KOMI for seed in rows[0]["alpha"]}
    return {"steps": steps, "alpha_slope": slopes, "alpha_slope_mean_se": mean_se(list(slopes.values())),
            "last_alpha_minus_9": distance, "last_alpha_minus_9_mean_se": mean_se(list(distance.values()))}


def tracking(rows: list[dict]) -> dict:
    """Whether α_∅ follows its own self-play's fair komi, checkpoint by checkpoint: at each step, α_∅ − the komi
    fitted to that checkpoint's held-out games, per seed and mean ± se over seeds; and per seed over the steps whose
    fit exists, the least-squares slope of α_∅ on the fitted komi (1: α_∅ moves with it; 0: it does not) and the mean
    gap α_∅ − fit, each with its mean ± se over seeds (the seed is the unit of replication)."""
    seeds = list(rows[0]["alpha"]) if rows else []
    fitted = {seed: [(row["fair_komi_fit"][seed]["fair_komi"][0], row["alpha"][seed]) for row in rows] for seed in seeds}
    per_step = []
    for row in rows:
        gaps = {seed: row["alpha"][seed] - row["fair_komi_fit"][seed]["fair_komi"][0] for seed in seeds}
        per_step.append({"step": row["step"], "gap": gaps, "gap_mean_se": mean_se(list(gaps.values()))})
    slopes, gaps = {}, {}
    for seed, pairs in fitted.items():
        points = np.array([pair for pair in pairs if np.isfinite(pair[0])], np.float64).reshape(-1, 2)
        slopes[seed] = ols_slope(points[:, 0], points[:, 1]) if len(points) > 1 and np.ptp(points[:, 0]) > 0 \
            else float("nan")
        gaps[seed] = float(np.mean(points[:, 1] - points[:, 0])) if len(points) else float("nan")
    return {"per_step": per_step, "slope_alpha_on_fit": slopes, "slope_mean_se": mean_se(list(slopes.values())),
            "gap": gaps, "gap_mean_se": mean_se(list(gaps.values())),
            "fitted_steps": {seed: int(np.isfinite([fit for fit, _ in pairs]).sum()) for seed, pairs in fitted.items()}}


def results(summary: dict, config: ml_collections.ConfigDict) -> dict[str, Quantity]:
    """The headline quantities (``results.json``): the last checkpoint's α_∅ and the komi fitted to its games, and
    whether α_∅ follows that fit over the checkpoints (its slope on the fit and the mean gap), each a mean ± se over
    the seeds; and how much better the sigmoid predicts the last checkpoint's held-out games than a komi-blind
    baseline (the Brier difference, ± se over the games of all seeds, paired by game)."""
    del config
    seeds, last, follows = len(summary["seeds"]), summary["per_step"][-1], summary["tracking"]
    games = last["calibration"]["games"]
    return {
        "brier_difference_last": Quantity(
            f"held-out games of iteration {last['step']}: Brier score of the winrate-vs-komi sigmoid − a komi-blind "
            "baseline's", *games["brier_difference"], "se", "games", games["count"], paired=True, unit="difference"),
        "last_alpha": Quantity(f"α_∅ at iteration {last['step']}", *last["alpha_mean_se"], "se", "seeds", seeds,
                               digits=1),
        "last_fair_komi_fit": Quantity(f"fair komi fitted to iteration {last['step']}'s held-out games",
                                       *last["fair_komi_fit_mean_se"], "se", "seeds", seeds, digits=1),
        "slope_alpha_on_fit": Quantity("slope of α_∅ on its self-play's fitted fair komi, over checkpoints",
                                       *follows["slope_mean_se"], "se", "seeds", seeds, digits=2),
        "gap_alpha_minus_fit": Quantity("α_∅ − its self-play's fitted fair komi, mean over checkpoints",
                                        *follows["gap_mean_se"], "se", "seeds", seeds, digits=1),
    }


def pm(pair, digits: int = 2) -> str:
    mean, se = pair
    return f"{mean:.{digits}f}" if not np.isfinite(se) else f"{mean:.{digits}f} ± {se:.{digits}f}"


def format_table(summary: dict) -> str:
    """The README's table: one row per step (Brier differences: net − komi-blind, paired by game)."""
    lines = ["| iteration | α_∅ (fair komi estimate) | β_∅ | fair komi from the games (fit) | games: Brier | games: "
             "Brier − komi-blind | games: bias | positions: Brier | positions: Brier − komi-blind |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in summary["per_step"]:
        games, positions = row["calibration"]["games"], row["calibration"]["positions"]
        lines.append(f"| {row['step']} | {pm(row['alpha_mean_se'])} | {pm(row['beta_mean_se'], 3)} | "
                     f"{pm(row['fair_komi_fit_mean_se'])} | {pm(games['brier'], 3)} | "
                     f"{pm(games['brier_difference'], 3)} | {pm(games['bias'], 3)} | {pm(positions['brier'], 3)} | "
                     f"{pm(positions['brier_difference'], 3)} |")
    return "\n".join(lines) + "\n"


def plot(summary: dict, path: pathlib.Path) -> str:
    figure, axes = new_figure(columns=3)
    rows = summary["per_step"]
    steps = [row["step"] for row in rows]
    for seed in rows[0]["alpha"]:
        axes[0, 0].plot(steps, [row["alpha"][seed] for row in rows], color="grey", alpha=0.5, linewidth=0.8)
    axes[0, 0].errorbar(steps, [row["alpha_mean_se"][0] for row in rows],
                        yerr=[np.nan_to_num(row["alpha_mean_se"][1]) for row in rows], marker="o", capsize=3,
                        label="α_∅ (mean ± se over seeds)")
    axes[0, 0].errorbar(steps, [row["fair_komi_fit_mean_se"][0] for row in rows],
                        yerr=[np.nan_to_num(row["fair_komi_fit_mean_se"][1]) for row in rows], marker="s", capsize=3,
                        label="komi where Black wins ½ (fit)")
    axes[0, 0].axhline(TRUE_FAIR_KOMI, color="black", linestyle=":", label="7×7 fair komi 9")
    axes[0, 0].set(xlabel="iteration", ylabel="komi", title="fair komi")
    axes[0, 0].legend(fontsize=7)
    last = rows[-1]["calibration"]
    for level, colour, marker in (("games", "C0", "o"), ("positions", "C1", "s")):
        bins = last[level]["bins"]
        axes[0, 1].errorbar([b["predicted"] for b in bins], [b["observed"][0] for b in bins],
                            yerr=[np.nan_to_num(b["observed"][1]) for b in bins], color=colour, marker=marker,
                            capsize=3, label=level)
    axes[0, 1].plot([0, 1], [0, 1], color="black", linestyle=":")
    axes[0, 1].set(xlabel="predicted winrate", ylabel="observed", title=f"reliability, iteration {steps[-1]}")
    axes[0, 1].legend(fontsize=7)
    for level, colour in (("games", "C0"), ("positions", "C1")):
        for name, style in (("brier", "-"), ("baseline_brier", ":")):
            axes[0, 2].errorbar(steps, [row["calibration"][level][name][0] for row in rows],
                                yerr=[np.nan_to_num(row["calibration"][level][name][1]) for row in rows],
                                color=colour, linestyle=style, capsize=3,
                                label=f"{level}: {'net' if name == 'brier' else 'komi-blind'}")
    axes[0, 2].set(xlabel="iteration", ylabel="Brier score", title="net vs komi-blind baseline")
    axes[0, 2].legend(fontsize=7)
    return str(save_figure(figure, path))


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict:
    started = time.perf_counter()
    own, training = read_config(config), RunConfig.from_config(config)
    workdir = prepare_experiment(config, workdir)
    calibration_settings = own.calibration
    simulations = checked_simulations(calibration_settings.search, "calibration.search")
    settings = {"games": calibration_settings.games, "simulations": simulations,
                "lam": calibration_lambda(config), "pass_rule": training_options(config).pass_rule}
    cells: dict[int, dict[int, dict]] = {}  # step -> seed -> cell
    for seed in own.seeds:
        directory = workdir / f"seed-{seed}"
        (run_config,) = training_configs(config, seed).values()
        logger.info("seed %d: training in %s", seed, directory)
        train.run(run_config, directory)
        for step in rated_steps(Checkpointer(directory / "checkpoints").steps(), training.checkpoint.keep_period):
            key = cell_key(calibration_settings.seed, seed, step)
            cells.setdefault(step, {})[seed] = load_or_measure_cell(directory, step, settings, key)
    rows = [step_summary(step, cells[step], calibration_settings.bins) for step in sorted(cells)
            if len(cells[step]) == len(own.seeds)]
    summary = {"seeds": own.seeds, "iterations": training.iterations,
               "calibration": config.calibration.to_dict(), "per_step": rows, "trend": trend(rows),
               "tracking": tracking(rows),
               "device": f"{jax.devices()[0].platform} × {jax.device_count()}"}
    (workdir / "table.md").write_text(format_table(summary))
    summary["figure"] = plot(summary, workdir / "figures" / "sai-go-komi.png")
    summary["wall_s"] = time.perf_counter() - started
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


#: ``python -m experiments``' hooks (:class:`experiments.common.experiment.Experiment`).
EXPERIMENT = Experiment(run=run, check_config=check_config, training_configs=training_configs, results=results)
