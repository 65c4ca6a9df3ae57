"""Learning speed: AlphaGateau against the AlphaZero ResNet under identical training budgets (the paper's Figure 5).

``run(config, workdir)``:

1. trains each network of ``config.models`` with zerolab's loop in ``workdir/<model>`` — same game, search,
   self-play, frame window and optimiser for both; rerunning resumes each sub-run where it stopped;
2. rates the kept checkpoints of both runs together (:func:`rate_contestants`): iteration 0, every
   ``checkpoint.keep_period``-th iteration and the last, in iteration order, each with the paper's Algorithm 2
   (:func:`zerolab.elo.rate_new_player`: five matches against the closest-rated players, the ratings refitted
   after each) starting from the previous checkpoint's rating; one Elo book (WLS, ±2σ) for all of them;
3. writes ``elo.json`` (the book), ``elo.txt`` (the table), ``figures/alphagateau_speed.png`` (Elo against
   iteration and against training wall-clock, two panels) and ``summary.json``.

The rating is resumable too: a checkpoint already in ``elo.json`` with games is not played again (delete
``elo.json`` to rate from scratch, e.g. after changing ``evaluation``).

The helpers here (training configs, checkpoint agents, rating in order, series for plots) are shared with
:mod:`experiments.alphagateau_finetune`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import pathlib
import statistics
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import jax
import ml_collections

from zerolab import train
from zerolab.agents import Agent, SearchAgent
from zerolab.arena import play_match, write_pgn
from zerolab.checkpoint import Checkpointer
from zerolab.elo import EloBook, MatchResult, rate_new_player
from zerolab.games import Game, make_game
from zerolab.metrics import MetricsLog
from zerolab.networks import count_parameters, make_network
from zerolab.plots import new_figure, plot_elo_curves, save_figure
from zerolab.search import SearchConfig

logger = logging.getLogger(__name__)

SERIES_LABELS = {"alphagateau": "AlphaGateau", "resnet": "AlphaZero ResNet"}


# --- set-up -------------------------------------------------------------------------------------------------------


def use_compilation_cache(directory: str) -> str | None:
    """Keeps JAX's compiled programs in ``directory`` (``~`` expanded) unless JAX already has a cache directory.

    The arena compiles its batched ``init``/``step`` anew for every match; with the persistent cache, all but the
    first compilation of each are read back from disk (seconds saved per match).  Returns the directory in use.
    """
    current = jax.config.jax_compilation_cache_dir
    if current or not directory:
        return current or None
    path = os.path.expanduser(directory)
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", path)
    return path


def training_config(sections: Mapping[str, Any], model: Mapping[str, Any], **values: Any) -> ml_collections.ConfigDict:
    """A zerolab training config: ``train.default_config()`` with the keys of ``sections`` that it has, the given
    ``model`` section and ``values`` (top-level keys such as ``init_from``)."""
    config = train.default_config()
    config.model = ml_collections.ConfigDict(dict(model))
    for key in config.keys():
        if key != "model" and key in sections:
            config[key] = _copy(sections[key])
    for key, value in values.items():
        if key not in config:
            raise KeyError(f"{key!r} is not a training config key; keys: {', '.join(sorted(config.keys()))}")
        config[key] = _copy(value)
    config.lock()
    return config


def _copy(value: Any) -> Any:
    if isinstance(value, ml_collections.ConfigDict):
        return ml_collections.ConfigDict(value.to_dict())
    return value


def rated_steps(steps: Iterable[int], keep_period: int) -> list[int]:
    """The checkpoint steps to rate: 0, the multiples of ``keep_period`` and the last one (all when it is 0)."""
    steps = sorted(steps)
    if not steps:
        return []
    if keep_period <= 0:
        return steps
    return [step for step in steps if step % keep_period == 0 or step == steps[-1]]


def checkpoint_steps(run_directory: pathlib.Path) -> list[int]:
    return Checkpointer(pathlib.Path(run_directory) / "checkpoints").steps()


def training_wall_seconds(run_directory: pathlib.Path) -> dict[int, float]:
    """Cumulative training wall-clock (``wall_s`` of ``metrics.jsonl``, compilation included) per iteration; 0 → 0."""
    records = MetricsLog(run_directory).records()
    return {0: 0.0, **{int(record["iteration"]): float(record["wall_s"]) for record in records}}


def checkpoint_agent(run_directory: pathlib.Path, step: int, game: Game, search: SearchConfig,
                     name: str) -> SearchAgent:
    """A :class:`SearchAgent` playing ``game`` with the network of checkpoint ``step`` of a run.

    The game may differ from the run's own (AlphaGateau's parameters fit any board); the network module is built
    for ``game`` from the run's model config, so agents of one architecture share one compiled search.
    """
    trained = train.load_trained_variables(run_directory, step)
    network = make_network(trained.config.model, game)
    return SearchAgent(name, game, network, trained.variables, search)


def evaluation_search(search_config: Any, num_simulations: int) -> SearchConfig:
    """The training search with ``num_simulations`` (the Gumbel noise stays: games of a match differ)."""
    return dataclasses.replace(SearchConfig.from_config(search_config), num_simulations=int(num_simulations))


# --- rating -------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Contestant:
    """A checkpoint to rate.

    Attributes:
      name: player name in the Elo book.
      series: the curve it belongs to (one per model or stage).
      iteration: x of the "against iteration" panel.
      wall_seconds: x of the "against wall-clock" panel (cumulative training time).
      load: builds its agent (called once, when it first plays).
    """

    name: str
    series: str
    iteration: int
    wall_seconds: float
    load: Callable[[], Agent]


def match_key(seed: int, player_a: str, player_b: str) -> jax.Array:
    """A match's PRNG key, fixed by the seed and the two names (so a resumed rating replays nothing differently)."""
    return jax.random.fold_in(jax.random.key(seed), zlib.crc32(f"{player_a}|{player_b}".encode()) & 0x7FFFFFFF)


def rate_contestants(
    contestants: Sequence[Contestant],
    game: Game,
    evaluation: Any,
    book_path: pathlib.Path,
    games_directory: pathlib.Path,
    seed: int,
    show_progress: bool,
) -> tuple[EloBook, int]:
    """Rates ``contestants`` in the given order with Algorithm 2, each series starting from its previous rating.

    Every match is ``evaluation.games`` games of ``game`` (half with each colour; a game reaching
    ``evaluation.max_game_plies`` is a draw) against one of the ``evaluation.num_opponents`` closest-rated players;
    its PGN goes to ``games_directory``.  The book is saved after each contestant, and contestants already rated in
    ``book_path`` are skipped.  Returns the book and the number of matches played now.
    """
    book = EloBook.load_or_create(book_path)
    agents: dict[str, Agent] = {}
    by_name = {contestant.name: contestant for contestant in contestants}

    def agent(name: str) -> Agent:
        if name not in agents:
            agents[name] = by_name[name].load()
        return agents[name]

    def play(player_a: str, player_b: str) -> MatchResult:
        started = time.perf_counter()
        match = play_match(game, agent(player_a), agent(player_b), int(evaluation.games),
                           match_key(seed, player_a, player_b), max_game_plies=int(evaluation.max_game_plies),
                           show_progress=show_progress)
        write_pgn(game, match, games_directory / f"{player_a}-vs-{player_b}.pgn")
        logger.info("%s vs %s: +%d =%d -%d (%.1f s)", player_a, player_b, match.result.wins, match.result.draws,
                    match.result.losses, time.perf_counter() - started)
        return match.result

    previous_rating: dict[str, float] = {}
    matches = 0
    for contestant in contestants:
        if contestant.name in book and book.games_of(contestant.name) > 0:
            previous_rating[contestant.series] = book.rating(contestant.name)[0]
            continue
        played = rate_new_player(
            book, contestant.name, play, num_opponents=int(evaluation.num_opponents),
            initial_rating=previous_rating.get(contestant.series), eligible=lambda name: name in by_name,
        )
        matches += len(played)
        if book.games_of(contestant.name) > 0:
            previous_rating[contestant.series] = book.rating(contestant.name)[0]
        book.save(book_path)
    return book, matches


def elo_series(book: EloBook, contestants: Sequence[Contestant], x: str) -> dict[str, list[tuple[float, float, float]]]:
    """``{series: [(x, rating, sigma)]}`` with ``x`` the ``iteration`` or the training ``wall_seconds``."""
    ratings = book.ratings()
    series: dict[str, list[tuple[float, float, float]]] = {}
    for contestant in contestants:
        if contestant.name in ratings:
            series.setdefault(contestant.series, []).append((float(getattr(contestant, x)), *ratings[contestant.name]))
    return series


def write_elo_table(book: EloBook, workdir: pathlib.Path) -> str:
    """Saves ``elo.json`` and ``elo.txt`` (strongest first, ±2σ) in ``workdir``; returns the table."""
    book.save(workdir / "elo.json")
    table = book.format_table()
    (workdir / "elo.txt").write_text(table + "\n")
    return table


def ratings_summary(book: EloBook) -> dict[str, dict[str, float]]:
    return {name: {"rating": rating, "sigma": sigma, "games": book.games_of(name)}
            for name, (rating, sigma) in book.ratings().items()}


def run_statistics(run_directory: pathlib.Path) -> dict[str, Any]:
    """Parameters and training costs of a sub-run, from its step-0 checkpoint and ``metrics.jsonl``."""
    records = MetricsLog(run_directory).records()
    initial = train.load_trained_variables(run_directory, 0)
    later = [record["iteration_s"] for record in records[1:]]  # the first iteration includes compilation
    return {
        "parameters": count_parameters(initial.variables["params"]),
        "iterations": records[-1]["iteration"] if records else 0,
        "frames": records[-1]["frames"] if records else 0,
        "training_wall_s": records[-1]["wall_s"] if records else 0.0,
        "first_iteration_s": records[0]["iteration_s"] if records else None,
        "median_iteration_s": statistics.median(later) if later else None,
        "median_selfplay_s": statistics.median(r["selfplay_s"] for r in records[1:]) if later else None,
        "median_train_s": statistics.median(r["train_s"] for r in records[1:]) if later else None,
    }


# --- the experiment -----------------------------------------------------------------------------------------------


def model_label(name: str, parameters: int) -> str:
    return f"{SERIES_LABELS.get(name, name)} ({parameters / 1000:.0f}k parameters)"


def run(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict:
    started = time.perf_counter()
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    use_compilation_cache(config.compilation_cache)
    (workdir / "config.json").write_text(json.dumps(config.to_dict(), indent=2, sort_keys=True, default=str))

    model_names = list(config.models.keys())
    run_directories = {name: workdir / name for name in model_names}
    for name in model_names:
        logger.info("training %s in %s", name, run_directories[name])
        train.run(training_config(config, config.models[name]), run_directories[name])
    statistics_by_model = {name: run_statistics(run_directories[name]) for name in model_names}

    rating_started = time.perf_counter()
    game = make_game(config.game.name, go_size=config.game.go_size, komi=config.game.komi)
    search = evaluation_search(config.search, config.evaluation.num_simulations)
    steps = {name: rated_steps(checkpoint_steps(run_directories[name]), int(config.checkpoint.keep_period))
             for name in model_names}
    walls = {name: training_wall_seconds(run_directories[name]) for name in model_names}
    contestants = [
        Contestant(
            name=f"{name}@{step}",
            series=model_label(name, statistics_by_model[name]["parameters"]),
            iteration=step,
            wall_seconds=walls[name].get(step, float("nan")),
            load=lambda name=name, step=step: checkpoint_agent(run_directories[name], step, game, search,
                                                               f"{name}@{step}"),
        )
        for step in sorted(set().union(*steps.values()))
        for name in model_names
        if step in steps[name]
    ]
    book, matches = rate_contestants(contestants, game, config.evaluation, workdir / "elo.json", workdir / "games",
                                     seed=int(config.seed) + 1, show_progress=bool(config.progress))
    rating_seconds = time.perf_counter() - rating_started
    table = write_elo_table(book, workdir)
    print(table)

    figure, axes = new_figure(columns=2)
    plot_elo_curves(axes[0, 0], elo_series(book, contestants, "iteration"), "iteration")
    minutes = {series: [(x / 60, r, s) for x, r, s in points]
               for series, points in elo_series(book, contestants, "wall_seconds").items()}
    plot_elo_curves(axes[0, 1], minutes, "training wall-clock (minutes, compilation included)")
    axes[0, 0].set_title(f"{config.game.name}: Elo against iteration")
    axes[0, 1].set_title(f"{config.game.name}: Elo against training time ({jax.devices()[0].platform})")
    figure_path = save_figure(figure, workdir / "figures" / "alphagateau_speed.png")

    ratings = book.ratings()
    for name in model_names:
        final = f"{name}@{steps[name][-1]}"
        statistics_by_model[name]["final_checkpoint"] = final
        statistics_by_model[name]["final_rating"], statistics_by_model[name]["final_sigma"] = ratings[final]
    summary: dict[str, Any] = {
        "game": config.game.name,
        "iterations": int(config.iterations),
        "models": statistics_by_model,
        "elo": ratings_summary(book),
        "elo_table": table,
        "matches_played_now": matches,
        "evaluation": config.evaluation.to_dict(),
        "rating_wall_s": rating_seconds,
        "figure": str(figure_path),
        "device": f"{jax.devices()[0].platform} × {jax.device_count()}",
        "wall_s": time.perf_counter() - started,
    }
    if len(model_names) == 2:
        first, second = (statistics_by_model[name]["final_checkpoint"] for name in model_names)
        difference, sigma = book.fit().difference(first, second)
        summary["final_difference"] = {"players": [first, second], "elo": difference, "sigma": sigma}
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
