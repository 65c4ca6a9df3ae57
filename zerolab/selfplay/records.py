"""Reading self-play's ply records on the host: the iteration's statistics and the games played wholly in a call.

The records are :class:`zerolab.selfplay.types.PlyRecord` leaves ``[plies, games]`` as numpy arrays (after
``jax.device_get``).
"""

from __future__ import annotations

import numpy as np

from zerolab.selfplay.types import PlyRecord


def summarize(records: PlyRecord) -> dict[str, float]:
    """Per-batch statistics from host (numpy) ply records."""
    over = np.asarray(records.game_over)
    reward = np.asarray(records.reward)
    first = np.asarray(records.first_player_moved)
    first_player_score = np.where(first, reward, -reward)[over]
    games = int(over.sum())
    hashes = np.asarray(records.position_hash).reshape(-1, 2)
    distinct = len(np.unique(hashes, axis=0)) if len(hashes) else 0
    rule_statistics = {name: float(np.mean(values)) for name, values in (records.summary or {}).items()}
    return {
        **rule_statistics,
        "games_finished": games,
        "first_player_wins": int((first_player_score > 0).sum()),
        "draws": int((first_player_score == 0).sum()),
        "first_player_losses": int((first_player_score < 0).sum()),
        "mean_game_length": float(np.asarray(records.game_length)[over].mean()) if games else float("nan"),
        "distinct_position_fraction": distinct / max(len(hashes), 1),
    }


def complete_games(records: PlyRecord, earlier_actions: dict[int, np.ndarray] | None = None
                   ) -> list[tuple[int, int, np.ndarray, float]]:
    """Every game that ended in the scan and whose every move is known, lane by lane, as ``(lane, first ply, actions,
    first_player_score)`` (host, numpy records).  A lane's first game starts at ply 0, or, if it was carried from
    earlier calls, with the moves it played there: ``earlier_actions[lane]``
    (:meth:`zerolab.training.pending.PendingFrames.earlier_actions`; a carried game whose earlier moves are not given
    is left out); each later game starts on the ply after the previous ended."""
    over = np.asarray(records.game_over)
    actions, rewards = np.asarray(records.action), np.asarray(records.reward)
    first_moved, length = np.asarray(records.first_player_moved), np.asarray(records.game_length)
    earlier_actions = earlier_actions or {}
    games = []
    for lane in range(over.shape[1]):
        start = 0
        for end in np.flatnonzero(over[:, lane]):
            reward = float(rewards[end, lane])
            score = (reward + 1) / 2 if bool(first_moved[end, lane]) else (1 - reward) / 2
            played = actions[start: end + 1, lane]
            if start == 0 and lane in earlier_actions:  # a game carried into the scan: its earlier moves first
                played = np.concatenate([np.asarray(earlier_actions[lane], played.dtype), played])
            if int(length[end, lane]) == len(played):  # every ply of the game is known
                games.append((lane, start, played, score))
            start = end + 1
    return games


def finished_games(records: PlyRecord, max_games: int, earlier_actions: dict[int, np.ndarray] | None = None
                   ) -> list[tuple[int, np.ndarray, float]]:
    """Up to ``max_games`` of the games :func:`complete_games` finds, as ``(lane, actions, first_player_score)``,
    those that ended first in their lane (in lane order) first, then the others (in lane order); host (numpy)
    records."""
    games = complete_games(records, earlier_actions)
    ordered = [game for game in games if game[1] == 0] + [game for game in games if game[1] != 0]
    return [(lane, actions, score) for lane, _, actions, score in ordered][:max_games]


__all__ = ["complete_games", "finished_games", "summarize"]
