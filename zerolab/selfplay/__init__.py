"""Self-play: the jitted scan that plays games on device with a move rule and hooks (types, default hooks, the scan,
the programs over a mesh).

Method packages import this layer's names from here (``from zerolab.selfplay import Lanes``), as listed in ``__all__``
(the rule: :mod:`zerolab`); they resolve lazily (:mod:`zerolab.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_surface

if TYPE_CHECKING:
    from zerolab.selfplay.frames import Frames, PackedFrames
    from zerolab.selfplay.types import (
        GameRule, LaneRule, Lanes, MoveRule, PlayFn, PlayVariables, PlayedPly, PlyDecision, PlyRecord, SelfPlayConfig,
    )
    from zerolab.selfplay.hooks import (
        advance_lanes, backward_game_values, initial_states_from_fens, restart_games, search_move_rule, select_where,
        standard_lane_rule,
    )
    from zerolab.selfplay.scan import make_play_fn
    from zerolab.selfplay.programs import make_selfplay_fn
    from zerolab.selfplay.records import complete_games, summarize

__all__ = [
    "Frames", "GameRule", "LaneRule", "Lanes", "MoveRule", "PackedFrames", "PlayFn", "PlayVariables", "PlayedPly",
    "PlyDecision", "PlyRecord", "SelfPlayConfig", "advance_lanes", "backward_game_values", "complete_games",
    "initial_states_from_fens", "make_play_fn", "make_selfplay_fn", "restart_games", "search_move_rule", "select_where",
    "standard_lane_rule", "summarize"
]
__getattr__, __dir__ = lazy_surface(__name__)
