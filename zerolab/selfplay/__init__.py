"""Self-play: the jitted scan that plays games on device with a move rule and hooks.

``__all__`` is the layer's declared surface: the names of this layer that a method package may import, from here
(``from zerolab.selfplay import Lanes``) and never from the modules inside (the ones it shares with other methods come
from ``zerolab`` itself). Names resolve lazily (PEP 562, :mod:`zerolab.lazy`): importing one imports only the module
that defines it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_names

__getattr__, __dir__ = lazy_names(__name__, {
    "zerolab.selfplay.scan": ("Frames", "GameRule", "Lanes", "MoveRule", "PlayFn", "PlayVariables", "PlayedPly",
                              "PlyDecision", "PlyRecord", "SelfPlayConfig", "advance_lanes", "initial_states_from_fens",
                              "make_play_fn", "restart_games", "search_move_rule", "select_where"),
})

__all__ = [
    "Frames", "GameRule", "Lanes", "MoveRule", "PlayFn", "PlayVariables", "PlayedPly", "PlyDecision", "PlyRecord",
    "SelfPlayConfig", "advance_lanes", "initial_states_from_fens", "make_play_fn", "restart_games", "search_move_rule",
    "select_where",
]

if TYPE_CHECKING:
    from zerolab.selfplay.scan import (
        Frames, GameRule, Lanes, MoveRule, PlayFn, PlayVariables, PlayedPly, PlyDecision, PlyRecord, SelfPlayConfig,
        advance_lanes, initial_states_from_fens, make_play_fn, restart_games, search_move_rule, select_where,
    )
