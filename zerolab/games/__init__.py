"""Games: thin adapters over pgx (``chess``, ``gardner_chess``, ``go``) with FEN/UCI and GTP conversions.

Method packages import this layer's names from here (``from zerolab.games import GameRecord``), as listed in ``__all__``
(the rule: :mod:`zerolab`); they resolve lazily (:mod:`zerolab.lazy`).  FEN validation (:mod:`zerolab.games.fen`) and
the board bridge import no JAX or pgx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_surface

if TYPE_CHECKING:
    from zerolab.games.base import Game, ObservationPlanes
    from zerolab.games.board import GameBoards
    from zerolab.games.chess import PROMOTION_PIECES, ChessGame, move_table, square_name
    from zerolab.games.fen import START_FENS, InvalidPositionError, validate_fen
    from zerolab.games.go import GoGame
    from zerolab.games.pgn import GameRecord, write_games

__all__ = [
    "ChessGame", "Game", "GameBoards", "GameRecord", "GoGame", "InvalidPositionError", "ObservationPlanes",
    "PROMOTION_PIECES", "START_FENS", "make_game", "move_table", "square_name", "validate_fen", "write_games"
]
__getattr__, __dir__ = lazy_surface(__name__)

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
        from zerolab.games.chess import ChessGame

        return ChessGame(name, observation=observation or "pgx")
    if observation:
        raise ValueError(f"game {name!r} has no observation {observation!r} (only chess has 'lc0')")
    if name == "go":
        from zerolab.games.go import GoGame

        return GoGame(size=go_size, komi=komi)
    from zerolab.config import did_you_mean

    raise ValueError(f"unknown game {name!r}{did_you_mean(name, GAME_NAMES)}; expected one of {', '.join(GAME_NAMES)}")
