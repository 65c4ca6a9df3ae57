"""A match's result between two players: W/D/L from the first player's side (the arena writes it, the Elo book
reads it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """Games of ``player_a`` against ``player_b``, counted from ``player_a``'s side.

    Attributes:
      player_a: name of the first player.
      player_b: name of the second player (a different name).
      wins: games ``player_a`` won.
      draws: drawn games.
      losses: games ``player_a`` lost.
    """

    player_a: str
    player_b: str
    wins: int = 0
    draws: int = 0
    losses: int = 0

    def __post_init__(self):
        for field in ("player_a", "player_b"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value:
                raise ValueError(f"MatchResult.{field} must be a non-empty player name, got {value!r}")
        if self.player_a == self.player_b:
            raise ValueError(f"MatchResult needs two different players, got {self.player_a!r} twice")
        for field in ("wins", "draws", "losses"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"MatchResult.{field} must be a non-negative integer, got {value!r}")
            object.__setattr__(self, field, int(value))

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def players(self) -> tuple[str, str]:
        return (self.player_a, self.player_b)

    def reversed(self) -> MatchResult:
        """The same games seen from ``player_b``'s side."""
        return MatchResult(self.player_b, self.player_a, self.losses, self.draws, self.wins)

    def oriented(self, player_a: str) -> MatchResult:
        """These games counted from ``player_a``'s side (one of the two players)."""
        if player_a == self.player_a:
            return self
        if player_a == self.player_b:
            return self.reversed()
        raise ValueError(f"{player_a!r} did not play in {self}")

    def __add__(self, other: MatchResult) -> MatchResult:
        """Results of the same pair added together (in either orientation)."""
        if set(other.players) != set(self.players):
            raise ValueError(f"cannot add results of different pairs: {self.players} and {other.players}")
        other = other.oriented(self.player_a)
        return MatchResult(
            self.player_a, self.player_b, self.wins + other.wins, self.draws + other.draws, self.losses + other.losses
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchResult:
        try:
            return cls(data["player_a"], data["player_b"], data["wins"], data["draws"], data["losses"])
        except KeyError as missing:
            raise ValueError(f"match result {dict(data)!r} lacks the field {missing}") from None


__all__ = ["MatchResult"]
