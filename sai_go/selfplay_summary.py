"""What one SAI self-play call reports: per-call totals broadcast over ``[T, B]`` (branches started, pushed, dropped
and left pending; fresh and branch games finished; the fresh games' komi mean and spread; the mean absolute error of
the score estimate α^B − k against the final margin of counted games) and the mean β per ply (:func:`sai_summary`, the
core's records summary hook).  The rules that fill the statistics are :mod:`sai_go.selfplay`'s.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from zerolab.selfplay import Lanes, PlyRecord, backward_game_values


def call_totals(per_ply: dict, game_over: jax.Array, left_pending: jax.Array) -> dict:
    """Per-call statistics, each broadcast over ``[T, B]`` so that the core's mean over plies reports it;
    ``left_pending``: branches still in the queue when the call ends (carried into the next call with the lanes).
    Fresh games started are those ``init`` started (counted by the first ply, ``first_fresh``) and those started
    since."""
    shape = game_over.shape
    final_margin, known = backward_game_values(jnp.where(per_ply["counted"], per_ply["margin"], jnp.nan), game_over,
                                               alternating=False)  # Black's margin: no sign flips
    usable = known & ~jnp.isnan(final_margin)
    error = jnp.where(usable, jnp.abs(per_ply["score_estimate"] - jnp.where(usable, final_margin, 0.0)), 0.0)
    started = per_ply["fresh_started"].sum() + per_ply["first_fresh"].sum()
    komi_sum = per_ply["fresh_komi_sum"].sum() + per_ply["first_komi_sum"].sum()
    komi_square_sum = per_ply["fresh_komi_square_sum"].sum() + per_ply["first_komi_square_sum"].sum()
    komi_mean = komi_sum / started
    totals = {
        "branches_started": per_ply["branches_started"].sum(),
        "branches_pushed": per_ply["branches_pushed"].sum(),
        "branches_dropped": per_ply["branches_dropped"].sum(),
        "branches_left_pending": left_pending,
        "fresh_games_started": started,
        "fresh_games_finished": per_ply["fresh_finished"].sum(),
        "branch_games_finished": per_ply["branch_finished"].sum(),
        "fresh_komi_mean": komi_mean,
        "fresh_komi_std": jnp.sqrt(jnp.maximum(komi_square_sum / started - komi_mean ** 2, 0.0)),
        "score_estimate_mae": error.sum() / jnp.maximum(usable.sum(), 1),
        "score_estimate_frames": usable.sum(),
    }
    return {name: jnp.broadcast_to(jnp.asarray(value, jnp.float32), shape) for name, value in totals.items()}


def sai_summary(records: PlyRecord, statistics: dict, lanes: Lanes) -> dict:
    """SAI's :data:`~zerolab.selfplay.types.RecordsSummaryFn`: mean β per ply and the call's totals
    (:func:`call_totals`)."""
    per_ply = {**statistics, "score_estimate": records.summary["score_estimate"]}
    totals = call_totals(per_ply, records.game_over, left_pending=lanes.shared.queue.valid.sum())
    return {"mean_beta": records.summary["mean_beta"], **totals}


__all__ = ["call_totals", "sai_summary"]
