"""The Elo book: every match result between named players and their fitted ratings, kept in a JSON file.

Results for a pair accumulate; the ratings are the estimator of :mod:`zerolab.evaluation.elo`, refitted on demand;
``save`` writes results and ratings atomically.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from typing import Any

from zerolab.evaluation.elo import (DEFAULT_MEAN_RATING, VIRTUAL_DRAWS, DisconnectedPlayersError, Ratings,
                                    connected_groups, fit_ratings, format_table, pair_key)
from zerolab.play.results import MatchResult

#: The file format's name and version (named when the book lived in ``zerolab.evaluation.elo``; kept so that
#: earlier books load).
BOOK_FORMAT = "zerolab.evaluation.elo/1"


class EloBook:
    """All match results between named players and their fitted ratings, kept in a JSON file.

    Adding a result for a pair that already met adds the games to the pair's total. The ratings are refitted on
    demand (:meth:`fit`) and cached until the next change.  ``save`` writes the results (the source of truth) and
    the ratings (for readers of the file) atomically; ``load`` reads the results back and refits.
    """

    def __init__(
        self,
        results: Iterable[MatchResult] = (),
        players: Iterable[str] = (),
        *,
        mean_rating: float = DEFAULT_MEAN_RATING,
        virtual_draws: int = VIRTUAL_DRAWS,
    ):
        self.mean_rating = float(mean_rating)
        self.virtual_draws = int(virtual_draws)
        self._players: dict[str, None] = {}  # insertion-ordered set
        self._results: dict[tuple[str, str], MatchResult] = {}
        self._fitted: Ratings | None = None
        for player in players:
            self.add_player(player)
        for result in results:
            self.add_result(result)

    # --- contents ----------------------------------------------------------------------------------------------
    @property
    def players(self) -> tuple[str, ...]:
        """Every player, in the order they were added."""
        return tuple(self._players)

    @property
    def results(self) -> list[MatchResult]:
        """One accumulated result per pair, oriented from the alphabetically first player."""
        return [self._results[key] for key in sorted(self._results)]

    def __contains__(self, player: str) -> bool:
        return player in self._players

    def __len__(self) -> int:
        return len(self._players)

    def add_player(self, player: str) -> None:
        """Add a player without games (no-op if present)."""
        if not isinstance(player, str) or not player:
            raise ValueError(f"a player name must be a non-empty string, got {player!r}")
        if player not in self._players:
            self._players[player] = None
            self._fitted = None

    def add_result(self, result: MatchResult) -> None:
        """Record games; a pair's results accumulate. Players are added if new."""
        for player in result.players:
            self.add_player(player)
        key = pair_key(*result.players)
        oriented = result.oriented(key[0])
        self._results[key] = self._results[key] + oriented if key in self._results else oriented
        self._fitted = None

    def result_between(self, player_a: str, player_b: str) -> MatchResult:
        """Accumulated games of ``player_a`` against ``player_b`` (zeros if they never met)."""
        key = pair_key(player_a, player_b)
        if key not in self._results:
            return MatchResult(player_a, player_b)
        return self._results[key].oriented(player_a)

    def games_of(self, player: str) -> int:
        return sum(result.games for result in self._results.values() if player in result.players)

    # --- ratings -------------------------------------------------------------------------------------------------
    def fit(self) -> Ratings:
        """Ratings of every player (cached). Raises :class:`DisconnectedPlayersError` if they are not connected."""
        if self._fitted is None:
            self._fitted = fit_ratings(
                self._results.values(), self.players, mean_rating=self.mean_rating, virtual_draws=self.virtual_draws
            )
        return self._fitted

    def ratings(self) -> dict[str, tuple[float, float]]:
        """name -> ``(rating, sigma)``."""
        return self.fit().as_dict()

    def rating(self, player: str) -> tuple[float, float]:
        return self.fit().rating(player)

    def format_table(self, num_sigmas: float = 2.0) -> str:
        """The ratings as a text table, strongest first: rank, player, rating, ±2σ, games, score.  Players that no
        games connect (e.g. Go rows at different komi) cannot be rated on one scale: each group gets its own table
        (:meth:`groups`, each with its mean pinned)."""
        try:
            return format_table(self.fit(), self.results, num_sigmas=num_sigmas)
        except DisconnectedPlayersError:
            tables = []
            for number, group in enumerate(self.groups(), 1):
                heading = f"group {number} of players no games connect to the others' (its own scale)"
                body = group.format_table(num_sigmas) if group.results else f"{group.players[0]}: no games"
                tables.append(f"{heading}\n{body}")
            return "\n\n".join(tables)

    def groups(self) -> list[EloBook]:
        """The book split into its groups of players connected by games, largest first (one book when connected)."""
        books = []
        for members in connected_groups(self.players, self.results):
            book = EloBook(players=members, mean_rating=self.mean_rating, virtual_draws=self.virtual_draws)
            for result in self.results:
                if result.player_a in book:
                    book.add_result(result)
            books.append(book)
        return books

    # --- files ---------------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": BOOK_FORMAT,
            "mean_rating": self.mean_rating,
            "virtual_draws": self.virtual_draws,
            "players": list(self.players),
            "results": [result.to_dict() for result in self.results],
        }
        try:
            fitted = self.fit()
        except DisconnectedPlayersError as error:
            data["ratings"] = None
            data["ratings_error"] = str(error)
        else:
            data["ratings"] = {
                player: {"rating": rating, "sigma": sigma, "games": int(fitted.games[fitted.index(player)])}
                for player, (rating, sigma) in fitted.as_dict().items()
            }
            data["covariance"] = fitted.covariance.tolist()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EloBook:
        """A book from :meth:`to_dict`'s data; a malformed one is a ``ValueError`` naming what is wrong."""
        if not isinstance(data, Mapping):
            raise ValueError(f"not an Elo book: expected a JSON object, got {type(data).__name__}")
        if data.get("format") != BOOK_FORMAT:
            raise ValueError(f"not an Elo book: expected format {BOOK_FORMAT!r}, got {data.get('format')!r}")
        players, results = data.get("players", []), data.get("results", [])
        if not isinstance(players, list) or not isinstance(results, list):
            raise ValueError("Elo book: 'players' and 'results' must be lists, got "
                             f"{type(players).__name__} and {type(results).__name__}")
        results = [MatchResult.from_dict(result) if isinstance(result, Mapping) else _not_a_result(result)
                   for result in results]
        unknown = sorted({name for result in results for name in result.players} - set(players))
        if unknown:
            raise ValueError(f"Elo book: results name players missing from its 'players' list: {unknown}")
        return cls(
            results=results,
            players=players,
            mean_rating=data.get("mean_rating", DEFAULT_MEAN_RATING),
            virtual_draws=data.get("virtual_draws", VIRTUAL_DRAWS),
        )

    def save(self, path: str | os.PathLike) -> None:
        """Write the book to ``path`` as JSON, atomically (a temporary file in the same folder, then ``os.replace``)."""
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".elo-", suffix=".json.tmp", dir=directory)
        try:
            with os.fdopen(handle, "w") as file:
                json.dump(self.to_dict(), file, indent=1)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike) -> EloBook:
        """Read a book written by :meth:`save`."""
        with open(path) as file:
            try:
                data = json.load(file)
            except json.JSONDecodeError as error:
                raise ValueError(f"{os.fspath(path)!r} is not valid JSON: {error}") from None
        return cls.from_dict(data)

    @classmethod
    def load_or_create(cls, path: str | os.PathLike, **kwargs: Any) -> EloBook:
        """:meth:`load` if ``path`` exists, else an empty book (``kwargs`` go to the constructor)."""
        return cls.load(path) if os.path.exists(path) else cls(**kwargs)

    def __repr__(self) -> str:
        return f"EloBook({len(self._players)} players, {len(self._results)} pairs)"


def _not_a_result(value: Any) -> MatchResult:
    raise ValueError(f"Elo book: a match result must be a JSON object, got {value!r}")


__all__ = ["BOOK_FORMAT", "EloBook"]
