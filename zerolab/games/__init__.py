"""Games: thin adapters over pgx (``chess``, ``gardner_chess``, ``go``) with FEN/UCI and GTP conversions."""

from __future__ import annotations

from zerolab.games.base import Game, InvalidPositionError
from zerolab.games.chess import ChessGame, move_table
from zerolab.games.go import GoGame

GAME_NAMES = ("chess", "gardner_chess", "go")


def make_game(name: str, *, go_size: int = 7, komi: float = 7.5, observation: str = "") -> Game:
    """The game called ``name``; ``go_size`` and ``komi`` apply to Go only.

    ``observation`` chooses chess's input planes: ``"pgx"`` (default) or ``"lc0"`` (lc0's 112 planes, for lc0/maia
    networks).  A config names it in the game's name, ``game.name = "chess:lc0"`` (= ``make_game("chess",
    observation="lc0")``).
    """
    name, _, named_observation = name.partition(":")
    if named_observation and observation and named_observation != observation:
        raise ValueError(f"game {name}:{named_observation} asked for observation {observation!r}")
    observation = observation or named_observation
    if name in ("chess", "gardner_chess"):
        return ChessGame(name, observation=observation or "pgx")
    if observation:
        raise ValueError(f"game {name!r} has no observation {observation!r} (only chess has 'lc0')")
    if name == "go":
        return GoGame(size=go_size, komi=komi)
    raise ValueError(f"unknown game {name!r}; expected one of {', '.join(GAME_NAMES)}")


__all__ = ["Game", "ChessGame", "GoGame", "InvalidPositionError", "make_game", "move_table", "GAME_NAMES"]
