"""Games: thin adapters over pgx (``chess``, ``gardner_chess``, ``go``) with FEN/UCI and GTP conversions."""

from __future__ import annotations

from zerolab.games.base import Game, InvalidPositionError
from zerolab.games.chess import ChessGame, move_table
from zerolab.games.go import GoGame

GAME_NAMES = ("chess", "gardner_chess", "go")


def make_game(name: str, *, go_size: int = 7, komi: float = 7.5) -> Game:
    """The game called ``name``; ``go_size`` and ``komi`` apply to Go only."""
    if name in ("chess", "gardner_chess"):
        return ChessGame(name)
    if name == "go":
        return GoGame(size=go_size, komi=komi)
    raise ValueError(f"unknown game {name!r}; expected one of {', '.join(GAME_NAMES)}")


__all__ = ["Game", "ChessGame", "GoGame", "InvalidPositionError", "make_game", "move_table", "GAME_NAMES"]
