"""The AlphaGateau paper's matchmaking rule (its Algorithm 2): rating a new player against the closest-rated ones.

A new player starts at a guessed rating and plays the closest-rated already-rated player it has not yet played in
this round; the ratings are refitted after each match, and this repeats for ``num_opponents`` (5) opponents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from zerolab.evaluation.book import EloBook
from zerolab.evaluation.elo import fit_ratings
from zerolab.play.results import MatchResult

NUM_MATCHMAKING_OPPONENTS = 5


def checked_result(result: MatchResult, player_a: str, player_b: str, function: str) -> MatchResult:
    """``result`` when it is a :class:`MatchResult` between exactly ``player_a`` and ``player_b`` (either
    orientation); otherwise a ValueError naming ``function``, the players and what it returned."""
    if not isinstance(result, MatchResult) or set(result.players) != {player_a, player_b}:
        raise ValueError(f"{function}({player_a!r}, {player_b!r}) must return their MatchResult, got {result!r}")
    return result


def closest_opponent(
    estimate: float, candidates: Mapping[str, float], excluded: Iterable[str] = ()
) -> str | None:
    """The candidate whose rating is closest to ``estimate`` (ties: the alphabetically first), or None."""
    excluded = set(excluded)
    remaining = [(abs(rating - estimate), name) for name, rating in candidates.items() if name not in excluded]
    return min(remaining)[1] if remaining else None


def rate_new_player(
    book: EloBook,
    player: str,
    play_match: Callable[[str, str], MatchResult],
    *,
    num_opponents: int = NUM_MATCHMAKING_OPPONENTS,
    initial_rating: float | None = None,
    eligible: Callable[[str], bool] | None = None,
) -> list[MatchResult]:
    """Rate ``player`` against the book's players (the paper's Algorithm 2); returns the matches played.

    The player's estimate starts at ``initial_rating`` (default: its current rating if it is already rated, else
    the book's mean; the previous checkpoint's rating is a good guess for a new checkpoint).  Then, up to
    ``num_opponents`` times: the rated player closest to the current estimate that it has not yet played in this
    call is chosen, ``play_match(player, opponent)`` is called, its result is added to the book and the ratings are
    refitted, which updates the estimate.  When the book has no other player, the player is just added.

    Args:
      book: the ratings so far; the rated players must be connected. Updated in place (not saved).
      player: the new player's name.
      play_match: plays a match and returns its result between exactly these two players (either orientation).
      num_opponents: opponents to play (fewer if fewer are rated).
      initial_rating: first estimate of the player's rating.
      eligible: optional filter on opponents (e.g. only players whose checkpoints can still be loaded).
    """
    rated = [name for name in book.players if name != player and (eligible is None or eligible(name))]
    if player in book and book.games_of(player) > 0:
        estimate = book.rating(player)[0] if initial_rating is None else initial_rating
    else:
        estimate = book.mean_rating if initial_rating is None else initial_rating
    book.add_player(player)
    if not rated:
        return []
    played: list[MatchResult] = []
    opponents_played: set[str] = set()
    for _ in range(min(num_opponents, len(rated))):
        ratings = _ratings_of_others(book, player)
        opponent = closest_opponent(estimate, {name: ratings[name] for name in rated}, opponents_played)
        if opponent is None:
            break
        result = checked_result(play_match(player, opponent), player, opponent, "play_match")
        book.add_result(result)
        played.append(result)
        opponents_played.add(opponent)
        estimate = book.rating(player)[0]
    return played


def _ratings_of_others(book: EloBook, player: str) -> dict[str, float]:
    """Current ratings of the book's players other than ``player`` (fitted without it if it has no games yet)."""
    if book.games_of(player) > 0:
        return {name: rating for name, (rating, _) in book.ratings().items() if name != player}
    others = [name for name in book.players if name != player]
    fitted = fit_ratings(book.results, others, mean_rating=book.mean_rating, virtual_draws=book.virtual_draws)
    return {name: float(rating) for name, rating in zip(fitted.players, fitted.ratings)}


__all__ = ["NUM_MATCHMAKING_OPPONENTS", "checked_result", "closest_opponent", "rate_new_player"]
