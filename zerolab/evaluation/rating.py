"""Rating checkpoints: the evaluation config, contestants, resumable Elo books, series for plots and tables (a run's
checkpoints, their agents and statistics: :mod:`zerolab.evaluation.checkpoints`).

:func:`rate_contestants` rates checkpoints (or any agents) into one :class:`~zerolab.evaluation.book.EloBook` saved as JSON:

* ``mode="algorithm2"`` (default): in the given order, each contestant with the AlphaGateau paper's Algorithm 2
  (:func:`zerolab.evaluation.matchmaking.rate_new_player`: ``num_opponents`` matches against the closest-rated players, the ratings
  refitted after each), starting from the previous rating of its series;
* ``mode="round_robin"``: every pair of contestants plays one match, in the order of the list (``(0, 1), (0, 2),
  ..., (1, 2), ...``); a pair that already has ``games`` games in the book is not played again.

The book is saved after each contestant (Algorithm 2) or match (round robin), and what the book already holds is not
played again, so a rerun resumes.  Every match's key is :func:`match_key` of the seed and the two names, so a resumed
rating plays exactly the games a fresh one would.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import pathlib
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax

from zerolab.config import section_dataclass
from zerolab.play.agents import Agent, AgentPool
from zerolab.play.arena import play_match, write_pgn
from zerolab.evaluation.book import EloBook
from zerolab.evaluation.matchmaking import NUM_MATCHMAKING_OPPONENTS, checked_result, rate_new_player
from zerolab.play.results import MatchResult
from zerolab.games import Game
from zerolab.search import SearchChanges

logger = logging.getLogger(__name__)

RATING_MODES = ("algorithm2", "round_robin")

#: ``(player_a, player_b) -> MatchResult``: plays one match between two named contestants.
PlayMatchFn = Callable[[str, str], MatchResult]


def check_game_count(key: str, games: Any, reason: str = "half the games with each colour") -> None:
    """Raises a ValueError naming ``key`` unless ``games`` is an even number of at least 2 (``reason``: why even)."""
    if isinstance(games, bool) or not isinstance(games, int) or games < 2 or games % 2:
        raise ValueError(f"{key} must be an even number of at least 2, got {games!r} ({reason})")


@dataclasses.dataclass(frozen=True)
class EvaluationConfig:
    """How checkpoints are rated (the ``evaluation`` section of an experiment config).

    Attributes:
      games: games per match, an even number (half with each colour).
      max_game_plies: a game reaching this many plies is a draw.
      search: what the rated agents change in their training search (a ``search`` section of
        :class:`~zerolab.search.config.SearchChanges`: ``evaluation.search.num_simulations``, …).
      num_opponents: Algorithm 2's number of matches per new contestant.
      mode: ``"algorithm2"`` or ``"round_robin"``.
      engine: an external reference engine spec (e.g. ``"fairy-stockfish:skill=-20"``), ``""`` for none.
      engine_games: games against ``engine``.
    """

    games: int = 64
    max_game_plies: int = 512
    search: SearchChanges = SearchChanges.of(num_simulations=16)
    num_opponents: int = NUM_MATCHMAKING_OPPONENTS
    mode: str = "algorithm2"
    engine: str = ""
    engine_games: int = 0

    def __post_init__(self):
        check_game_count("evaluation.games", self.games)
        for name in ("max_game_plies", "num_opponents"):
            if getattr(self, name) < 1:
                raise ValueError(f"evaluation.{name} must be at least 1, got {getattr(self, name)}")
        if self.mode not in RATING_MODES:
            raise ValueError(f"evaluation.mode must be one of {RATING_MODES}, got {self.mode!r}")
        if self.engine_games < 0 or self.engine_games % 2:
            raise ValueError(f"evaluation.engine_games must be an even number >= 0, got {self.engine_games}")

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | Any) -> EvaluationConfig:
        """From a ConfigDict (or mapping) section; an unknown key is an error naming it and the valid keys
        (:func:`zerolab.config.section_dataclass`)."""
        return section_dataclass(cls, section, "evaluation")

    @classmethod
    def for_match(cls, section: Any, name: str = "match") -> EvaluationConfig:
        """The settings of a head-to-head match section (``games``, ``max_game_plies``, ``search``); a bad value is a
        ValueError naming its key in section ``name``."""
        keys = ("games", "max_game_plies", "search")
        try:
            return section_dataclass(cls, {key: section[key] for key in keys}, name)
        except ValueError as error:  # the checks of __post_init__ name the evaluation section
            raise ValueError(str(error).replace("evaluation.", f"{name}.", 1)) from None


@dataclasses.dataclass(frozen=True)
class Contestant:
    """A checkpoint (or any agent) to rate.

    Attributes:
      name: player name in the Elo book.
      series: the curve it belongs to (one per model or stage).
      iteration: x of the "against iteration" plots.
      wall_seconds: x of the "against wall-clock" plots (cumulative training time).
      load: builds its agent (called once, when it first plays; closed when the rating ends).
    """

    name: str
    series: str
    iteration: int
    wall_seconds: float
    load: Callable[[], Agent]


# --- rating --------------------------------------------------------------------------------------------------------


def match_key(seed: int, player_a: str, player_b: str) -> jax.Array:
    """A match's PRNG key, fixed by the seed and the two names (so a resumed rating replays nothing differently)."""
    return jax.random.fold_in(jax.random.key(seed), zlib.crc32(f"{player_a}|{player_b}".encode()) & 0x7FFFFFFF)


def arena_match_player(pool: AgentPool, game: Game, evaluation: EvaluationConfig, games_directory: pathlib.Path,
                       seed: int, show_progress: bool) -> PlayMatchFn:
    """A :data:`PlayMatchFn` playing ``evaluation.games`` games in the arena between the pool's agents; each match's
    PGN goes to ``games_directory/<a>-vs-<b>.pgn``."""

    def play(player_a: str, player_b: str) -> MatchResult:
        started = time.perf_counter()
        match = play_match(game, pool[player_a], pool[player_b], evaluation.games,
                           match_key(seed, player_a, player_b), max_game_plies=evaluation.max_game_plies,
                           show_progress=show_progress)
        write_pgn(game, match, games_directory / f"{player_a}-vs-{player_b}.pgn")
        logger.info("%s vs %s: +%d =%d -%d (%.1f s)", player_a, player_b, match.result.wins, match.result.draws,
                    match.result.losses, time.perf_counter() - started)
        return match.result

    return play


def rate_contestants(
    contestants: Sequence[Contestant],
    game: Game,
    evaluation: EvaluationConfig,
    book_path: pathlib.Path,
    games_directory: pathlib.Path,
    seed: int,
    show_progress: bool,
    play: PlayMatchFn | None = None,
) -> tuple[EloBook, int]:
    """Rates ``contestants`` into the book at ``book_path`` (created, or extended when it exists).

    ``evaluation.mode`` chooses Algorithm 2 (in the given order, each series starting from its previous rating)
    or a round robin (see the module docstring).  ``play`` (default: :func:`arena_match_player`) plays one match.
    At the end the book's table and ladder are written beside it (:func:`write_elo_table`).  Returns the book and
    the number of matches played now.
    """
    if not isinstance(evaluation, EvaluationConfig):
        raise TypeError(f"evaluation must be an EvaluationConfig, got {type(evaluation).__name__}")
    names = [contestant.name for contestant in contestants]
    if len(set(names)) != len(names):
        raise ValueError(f"contestant names must be unique, got {names}")
    book = EloBook.load_or_create(book_path)
    with AgentPool({contestant.name: contestant.load for contestant in contestants}) as pool:
        if play is None:
            play = arena_match_player(pool, game, evaluation, games_directory, seed, show_progress)
        if evaluation.mode == "round_robin":
            matches = _round_robin(book, names, play, book_path, evaluation)
        else:
            matches = _algorithm2(book, contestants, names, play, book_path, evaluation)
    if book.results:
        write_elo_table(book, book_path)
    return book, matches


def _algorithm2(book: EloBook, contestants: Sequence[Contestant], names: Sequence[str], play: PlayMatchFn,
                book_path: pathlib.Path, evaluation: EvaluationConfig) -> int:
    """Each contestant not yet in the book (in order) by Algorithm 2, from its series' previous rating; the book is
    saved after each."""
    previous_rating: dict[str, float] = {}
    matches = 0
    for contestant in contestants:
        if contestant.name in book and book.games_of(contestant.name) > 0:
            previous_rating[contestant.series] = book.rating(contestant.name)[0]
            continue
        played = rate_new_player(
            book, contestant.name, play, num_opponents=evaluation.num_opponents,
            initial_rating=previous_rating.get(contestant.series), eligible=lambda name: name in names,
        )
        matches += len(played)
        if book.games_of(contestant.name) > 0:
            previous_rating[contestant.series] = book.rating(contestant.name)[0]
        book.save(book_path)
    return matches


def _round_robin(book: EloBook, names: Sequence[str], play: PlayMatchFn, book_path: pathlib.Path,
                 evaluation: EvaluationConfig) -> int:
    """Every pair with fewer than ``evaluation.games`` games in the book plays once, in list order; the book is
    saved after each match."""
    matches = 0
    for player_a, player_b in itertools.combinations(names, 2):
        if book.result_between(player_a, player_b).games >= evaluation.games:
            continue
        book.add_result(checked_result(play(player_a, player_b), player_a, player_b, "play"))
        book.save(book_path)
        matches += 1
    for name in names:
        book.add_player(name)
    return matches


# --- outputs -------------------------------------------------------------------------------------------------------


def elo_series(book: EloBook, contestants: Sequence[Contestant], x: str) -> dict[str, list[tuple[float, float, float]]]:
    """``{series: [(x, rating, sigma)]}`` with ``x`` the ``iteration`` or the training ``wall_seconds``."""
    ratings = book.ratings()
    series: dict[str, list[tuple[float, float, float]]] = {}
    for contestant in contestants:
        if contestant.name in ratings:
            series.setdefault(contestant.series, []).append((float(getattr(contestant, x)), *ratings[contestant.name]))
    return series


def write_elo_table(book: EloBook, book_path: pathlib.Path) -> str:
    """Saves the book at ``book_path`` (``elo.json``), its table beside it (``elo.txt``: strongest first, ±2σ) and its
    ladder in ``figures/elo.png`` there (one panel per group of players that games connect); returns the table."""
    from zerolab.evaluation.plots import new_figure, plot_ratings, save_figure

    book_path = pathlib.Path(book_path)
    book.save(book_path)
    table = book.format_table()
    book_path.with_suffix(".txt").write_text(table + "\n")
    groups = [group for group in book.groups() if group.results]
    if groups:
        height = max(3.0, 0.25 * max(len(group) for group in groups) + 1.5)
        figure, axes = new_figure(columns=len(groups), height=height)
        for index, group in enumerate(groups):
            plot_ratings(axes[0, index], group.ratings(), f"group {index + 1}" if len(groups) > 1 else "")
        save_figure(figure, book_path.parent / "figures" / f"{book_path.stem}.png")
    return table


def ratings_summary(book: EloBook) -> dict[str, dict[str, float]]:
    """``{player: {rating, sigma, games}}``."""
    return {name: {"rating": rating, "sigma": sigma, "games": book.games_of(name)}
            for name, (rating, sigma) in book.ratings().items()}
