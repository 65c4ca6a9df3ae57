"""Elo ratings from match results, with standard errors: the AlphaGateau estimator.

The estimator (Rigaux & Kashima, "Enhancing Chess Reinforcement Learning with Graph Representation", 2024):

1. For every pair of players (i, j) that met, the score of i is taken with one virtual draw added
   (a Jeffreys-style prior that keeps a 10–0 sweep finite)::

       s_ij = (wins + 0.5 * draws + 0.5) / (games + 1)

   and turned into an Elo difference ``d_ij = 400 * log10(s_ij / (1 - s_ij))``.
2. The variance of ``d_ij`` comes from the binomial variance of ``s_ij`` over ``games + 1`` games and the delta
   method: ``Var(s) = s (1 - s) / (games + 1)`` and ``d'(s) = 400 / (ln 10 * s (1 - s))``, so
   ``Var(d) = (400 / ln 10)**2 / (s (1 - s) (games + 1))``.
3. Ratings ``r`` solve the weighted least-squares problem ``d_ij ≈ r_i - r_j`` with weights ``1 / Var(d_ij)``
   (statsmodels ``WLS``).  Differences only fix ratings up to a constant, so the ratings are written
   ``r = mean_rating + C θ`` with sum-to-zero contrasts ``C`` (the last rating is minus the sum of the others): the
   mean rating is exactly ``mean_rating`` (1000 by default) and the fit has full rank.  The variances of ``d_ij``
   are treated as known (statsmodels' ``cov_type="fixed scale"``, scale 1), so the covariance of the ratings is
   ``C (Xᵀ W X)⁻¹ Cᵀ`` and stays defined when there are no more pairs than players.  A player's standard error
   σ is the square root of its diagonal entry; ±2σ is the interval the tables print.

Ratings are only defined within a connected group of players (players linked by matches); fitting a
disconnected set raises :class:`DisconnectedPlayersError` naming the groups.

The book that keeps the results and ratings in a JSON file is :mod:`zerolab.evaluation.book`; the paper's
matchmaking rule (Algorithm 2) is :mod:`zerolab.evaluation.matchmaking`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse
import scipy.sparse.csgraph

from zerolab.play.results import MatchResult

DEFAULT_MEAN_RATING = 1000.0
ELO_SCALE = 400.0
VIRTUAL_DRAWS = 1


class DisconnectedPlayersError(ValueError):
    """The players do not form one connected group, so their ratings cannot be put on one scale.

    Attributes:
      groups: the connected groups, largest first, each a sorted list of names.
    """

    def __init__(self, groups: Sequence[Sequence[str]]):
        self.groups = [list(group) for group in groups]
        described = "; ".join("{" + ", ".join(group) + "}" for group in self.groups)
        super().__init__(
            f"players are not all connected by matches, so ratings cannot be compared across groups: {described}. "
            "Play at least one match between each group and the others (or fit the groups separately)."
        )


# --- one pair ------------------------------------------------------------------------------------------------


def score_standard_error(wins: int, draws: int, losses: int) -> float:
    """The se of a mean game score (1, ½, 0) over its games: the sample standard deviation of the per-game scores
    divided by √n (nan without two games).  The one se of a match's score: launchers and methods report it."""
    games = wins + draws + losses
    if games < 2:
        return math.nan
    mean = (wins + draws / 2) / games
    squares = wins * (1 - mean) ** 2 + draws * (0.5 - mean) ** 2 + losses * mean ** 2
    return math.sqrt(squares / (games - 1) / games)


def score_with_virtual_draw(wins: int, draws: int, losses: int, virtual_draws: int = VIRTUAL_DRAWS) -> float:
    """Score in (0, 1) with ``virtual_draws`` draws added: ``(wins + draws/2 + virtual/2) / (games + virtual)``."""
    games = wins + draws + losses + virtual_draws
    if games <= 0:
        raise ValueError("a score needs at least one game or one virtual draw")
    return (wins + 0.5 * draws + 0.5 * virtual_draws) / games


def elo_difference(score: float) -> float:
    """Elo difference that makes ``score`` the expected score: ``400 * log10(score / (1 - score))``."""
    if not 0.0 < score < 1.0:
        raise ValueError(f"an Elo difference needs a score strictly between 0 and 1, got {score}")
    return ELO_SCALE * math.log10(score / (1.0 - score))


def expected_score(rating_difference: float) -> float:
    """Expected score of a player rated ``rating_difference`` above its opponent (logistic Elo model)."""
    return 1.0 / (1.0 + 10.0 ** (-rating_difference / ELO_SCALE))


def elo_difference_variance(score: float, games: float) -> float:
    """Delta-method variance of :func:`elo_difference` when ``score`` is a binomial mean over ``games`` games."""
    if not 0.0 < score < 1.0 or games <= 0:
        raise ValueError(f"need 0 < score < 1 and games > 0, got score={score}, games={games}")
    derivative = ELO_SCALE / (math.log(10.0) * score * (1.0 - score))
    return derivative**2 * score * (1.0 - score) / games


@dataclasses.dataclass(frozen=True)
class PairEstimate:
    """What one pair's results say about ``rating(player_a) - rating(player_b)``."""

    player_a: str
    player_b: str
    games: int
    score: float
    difference: float
    variance: float


def estimate_pair(result: MatchResult, virtual_draws: int = VIRTUAL_DRAWS) -> PairEstimate:
    """Elo difference of a pair and its variance, with ``virtual_draws`` virtual draws (see the module docstring)."""
    score = score_with_virtual_draw(result.wins, result.draws, result.losses, virtual_draws)
    return PairEstimate(
        player_a=result.player_a,
        player_b=result.player_b,
        games=result.games,
        score=score,
        difference=elo_difference(score),
        variance=elo_difference_variance(score, result.games + virtual_draws),
    )


# --- many pairs ----------------------------------------------------------------------------------------------


def pair_key(player_a: str, player_b: str) -> tuple[str, str]:
    """Order-free key of a pair: the two names sorted."""
    return (player_a, player_b) if player_a <= player_b else (player_b, player_a)


def combine_results(results: Iterable[MatchResult]) -> dict[tuple[str, str], MatchResult]:
    """One result per pair, results of the same pair added, oriented from the alphabetically first player."""
    combined: dict[tuple[str, str], MatchResult] = {}
    for result in results:
        key = pair_key(result.player_a, result.player_b)
        oriented = result.oriented(key[0])
        combined[key] = combined[key] + oriented if key in combined else oriented
    return combined


def connected_groups(players: Iterable[str], results: Iterable[MatchResult]) -> list[list[str]]:
    """Groups of players linked by at least one played game; largest group first, names sorted in each.

    The groups are the connected components (``scipy.sparse.csgraph.connected_components``) of the graph whose
    edges are the pairs that played at least one game.
    """
    index: dict[str, int] = {}
    for player in players:
        index.setdefault(player, len(index))
    edges = []
    for result in results:
        for player in result.players:
            index.setdefault(player, len(index))
        if result.games > 0:
            edges.append((index[result.player_a], index[result.player_b]))
    if not index:
        return []
    rows, columns = (np.array(side, dtype=np.int64) for side in zip(*edges)) if edges else (np.zeros(0, np.int64),) * 2
    graph = scipy.sparse.coo_matrix((np.ones(len(rows)), (rows, columns)), shape=(len(index), len(index)))
    _, labels = scipy.sparse.csgraph.connected_components(graph, directed=False)
    groups: dict[int, list[str]] = {}
    for player, position in index.items():
        groups.setdefault(int(labels[position]), []).append(player)
    return sorted((sorted(group) for group in groups.values()), key=lambda group: (-len(group), group))


@dataclasses.dataclass(frozen=True)
class Ratings:
    """Fitted ratings.

    Attributes:
      players: [P] names, in the order of the arrays.
      ratings: [P] Elo ratings; their mean is ``mean_rating``.
      covariance: [P, P] covariance of the ratings.
      mean_rating: the pinned mean.
      games: [P] games each player played (virtual draws not counted).
    """

    players: tuple[str, ...]
    ratings: np.ndarray
    covariance: np.ndarray
    mean_rating: float
    games: np.ndarray

    @property
    def sigmas(self) -> np.ndarray:
        """[P] standard errors (square roots of the covariance diagonal)."""
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))

    def index(self, player: str) -> int:
        try:
            return self.players.index(player)
        except ValueError:
            raise KeyError(f"no rating for {player!r}; rated players: {', '.join(self.players) or 'none'}") from None

    def rating(self, player: str) -> tuple[float, float]:
        """``(rating, sigma)`` of ``player``."""
        index = self.index(player)
        return float(self.ratings[index]), float(self.sigmas[index])

    def interval(self, player: str, num_sigmas: float = 2.0) -> tuple[float, float]:
        """``rating ∓ num_sigmas·σ`` of ``player``."""
        rating, sigma = self.rating(player)
        return rating - num_sigmas * sigma, rating + num_sigmas * sigma

    def difference(self, player_a: str, player_b: str) -> tuple[float, float]:
        """``(rating_a - rating_b, sigma of that difference)`` (uses the covariance, not just the two σ)."""
        a, b = self.index(player_a), self.index(player_b)
        variance = self.covariance[a, a] + self.covariance[b, b] - 2 * self.covariance[a, b]
        return float(self.ratings[a] - self.ratings[b]), float(math.sqrt(max(variance, 0.0)))

    def as_dict(self) -> dict[str, tuple[float, float]]:
        """name -> ``(rating, sigma)``."""
        return {player: self.rating(player) for player in self.players}


def sum_to_zero_contrasts(num_players: int) -> np.ndarray:
    """[P, P-1] matrix C with ``C θ`` summing to zero: the identity over the first P-1 rows, -1 in the last row."""
    return np.vstack([np.eye(num_players - 1), -np.ones((1, num_players - 1))])


def fit_ratings(
    results: Iterable[MatchResult],
    players: Sequence[str] | None = None,
    *,
    mean_rating: float = DEFAULT_MEAN_RATING,
    virtual_draws: int = VIRTUAL_DRAWS,
) -> Ratings:
    """Weighted least-squares Elo ratings with their covariance (see the module docstring).

    Args:
      results: match results; several results of the same pair are added together. Pairs with no games are ignored.
      players: the players to rate, in the order wanted (default: every player in ``results``, sorted). Each must
        be linked to the others by played games.
      mean_rating: the mean the ratings are pinned to.
      virtual_draws: virtual draws added to every pair.

    Raises:
      DisconnectedPlayersError: if the players fall into more than one group linked by games.
      ValueError: if a result names a player outside ``players``.
    """
    combined = [result for result in combine_results(results).values() if result.games > 0]
    named = sorted({player for result in combined for player in result.players})
    players = tuple(named if players is None else players)
    if len(set(players)) != len(players):
        raise ValueError(f"players must be distinct, got {list(players)}")
    unknown = sorted(set(named) - set(players))
    if unknown:
        raise ValueError(f"results name players that are not being rated: {', '.join(unknown)}")
    games = np.zeros(len(players), dtype=np.int64)
    index = {player: position for position, player in enumerate(players)}
    for result in combined:
        games[index[result.player_a]] += result.games
        games[index[result.player_b]] += result.games
    if len(players) <= 1:
        ratings = np.full(len(players), float(mean_rating))
        return Ratings(players, ratings, np.zeros((len(players), len(players))), float(mean_rating), games)
    groups = connected_groups(players, combined)
    if len(groups) > 1:
        raise DisconnectedPlayersError(groups)

    estimates = [estimate_pair(result, virtual_draws) for result in combined]
    design = np.zeros((len(estimates), len(players)))
    for row, estimate in enumerate(estimates):
        design[row, index[estimate.player_a]] = 1.0
        design[row, index[estimate.player_b]] = -1.0
    differences = np.array([estimate.difference for estimate in estimates])
    weights = 1.0 / np.array([estimate.variance for estimate in estimates])

    # statsmodels (and pandas under it) takes a second to import: only a rating fit pays it, not every process that
    # imports the evaluation layer.
    from statsmodels.regression.linear_model import WLS

    contrasts = sum_to_zero_contrasts(len(players))
    fit = WLS(differences, design @ contrasts, weights=weights).fit(cov_type="fixed scale", cov_kwds={"scale": 1.0})
    ratings = mean_rating + contrasts @ np.asarray(fit.params)
    covariance = contrasts @ np.asarray(fit.cov_params()) @ contrasts.T
    return Ratings(players, ratings, covariance, float(mean_rating), games)


def format_table(ratings: Ratings, results: Iterable[MatchResult] = (), num_sigmas: float = 2.0) -> str:
    """Text table of ``ratings``, strongest first; scores (without virtual draws) come from ``results``."""
    points: dict[str, float] = {}
    for result in results:
        points[result.player_a] = points.get(result.player_a, 0.0) + result.wins + 0.5 * result.draws
        points[result.player_b] = points.get(result.player_b, 0.0) + result.losses + 0.5 * result.draws
    order = sorted(range(len(ratings.players)), key=lambda i: (-ratings.ratings[i], ratings.players[i]))
    name_width = max([len("player")] + [len(player) for player in ratings.players])
    interval_header = f"±{num_sigmas:g}σ"
    lines = [f"{'rank':>4}  {'player':<{name_width}}  {'rating':>7}  {interval_header:>6}  {'games':>6}  {'score':>6}"]
    for rank, i in enumerate(order, start=1):
        player, games = ratings.players[i], int(ratings.games[i])
        score = f"{100 * points.get(player, 0.0) / games:5.1f}%" if games else "     -"
        lines.append(
            f"{rank:>4}  {player:<{name_width}}  {ratings.ratings[i]:7.1f}  {num_sigmas * ratings.sigmas[i]:6.1f}"
            f"  {games:>6}  {score:>6}"
        )
    return "\n".join(lines)


__all__ = [
    "DEFAULT_MEAN_RATING",
    "DisconnectedPlayersError",
    "PairEstimate",
    "Ratings",
    "combine_results",
    "connected_groups",
    "elo_difference",
    "elo_difference_variance",
    "estimate_pair",
    "expected_score",
    "fit_ratings",
    "format_table",
    "score_standard_error",
    "score_with_virtual_draw",
]
