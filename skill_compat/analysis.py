"""The paper's analyses (Tables 2, 3, 4 and 7 analogs) over evaluated move records (:mod:`skill_compat.records`).

Loss(m) = 100·max(0, w_before − w_after) by the evaluator, mover's view.  L(A, C) is the mean loss of A's moves that
meet C, with the CLT standard error (sample sd / √n); a difference of two means has se = √(se₁² + se₂²).  In STT,
G_f = (focal senior + J_f) vs (S + J_l):

* Table 2 (:func:`stt_losses`): L(S), L(focal), Δ(S, focal), L(J_l), L(J_f), Δ(J_l, J_f), Δ(team_l, team_f), and
  Δ(J_l, J_f) by the mover's win probability before the move in bins of 20 points.
* Table 3 (:func:`stt_interactions`): L(A, s) over A's moves whose preceding bits (oldest first, the last one the
  previous ply's) end with s; I(A, s) = L(A, 1s) − L(A, 0s).  For a senior X (S or focal): tricking = I(opponent's
  junior, ∅), helping(0) = I(X's junior, 0), helping(1) = I(X's junior, 1); indirect = Δ(J_l, J_f, 00).
* Table 4 (:func:`hb_savings`): per team, the true loss, the loss of the hand's free draw h0, and the savings
  mean(loss(h0) − loss(played)).
* Table 7 (:func:`hb_interactions`): per team and interaction type, its share of the team's moves, the savings, and
  the opponent's next-move loss.

Every quantity is ``{"value", "se", "n"}`` (n: moves; NaN when no move meets the condition).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from skill_compat.frameworks import INTERACTIONS

Record = dict
Quantity = dict


def mean_quantity(values: Sequence[float]) -> Quantity:
    values = np.asarray(values, float)
    n = len(values)
    if n == 0:
        return {"value": math.nan, "se": math.nan, "n": 0}
    se = float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return {"value": float(values.mean()), "se": se, "n": n}


def difference(first: Quantity, second: Quantity) -> Quantity:
    return {"value": first["value"] - second["value"], "se": math.sqrt(first["se"] ** 2 + second["se"] ** 2),
            "n": first["n"] + second["n"]}


def losses(records: Sequence[Record], condition: Callable[[Record], bool], field: str = "loss") -> Quantity:
    """L(A, C): the mean ``field`` over the records meeting ``condition``."""
    return mean_quantity([record[field] for record in records if condition(record)])


def mover(team: str, role: str | None = None) -> Callable[[Record], bool]:
    return lambda record: record["team"] == team and (role is None or record["role"] == role)


def after_bits(team: str, role: str, suffix: str) -> Callable[[Record], bool]:
    """The moves of (team, role) whose preceding bits end with ``suffix`` (empty: every move)."""
    return lambda record: (record["team"] == team and record["role"] == role
                           and record["bits_before"].endswith(suffix) and len(record["bits_before"]) >= len(suffix))


WIN_PROBABILITY_BINS = (0, 20, 40, 60, 80, 100)


def stt_losses(records: Sequence[Record]) -> dict[str, Quantity]:
    """Table 2's quantities (see the module docstring)."""
    table = {
        "L(S)": losses(records, mover("alter", "senior")),
        "L(focal)": losses(records, mover("focal", "senior")),
        "L(J_l)": losses(records, mover("alter", "junior")),
        "L(J_f)": losses(records, mover("focal", "junior")),
        "L(team_l)": losses(records, mover("alter")),
        "L(team_f)": losses(records, mover("focal")),
    }
    table["Δ(S, focal)"] = difference(table["L(S)"], table["L(focal)"])
    table["Δ(J_l, J_f)"] = difference(table["L(J_l)"], table["L(J_f)"])
    table["Δ(team_l, team_f)"] = difference(table["L(team_l)"], table["L(team_f)"])
    for low, high in zip(WIN_PROBABILITY_BINS[:-1], WIN_PROBABILITY_BINS[1:]):
        def in_bin(record, low=low, high=high):
            percent = 100.0 * record["w_before"]
            return low <= percent < high or (high == 100 and percent == 100)

        alter = losses(records, lambda r: mover("alter", "junior")(r) and in_bin(r))
        focal = losses(records, lambda r: mover("focal", "junior")(r) and in_bin(r))
        table[f"Δ(J_l, J_f, {low}-{high})"] = difference(alter, focal)
    return table


def interaction_effect(records: Sequence[Record], team: str, role: str, suffix: str) -> Quantity:
    """I(A, s) = L(A, 1s) − L(A, 0s) for A = (team, role)."""
    return difference(losses(records, after_bits(team, role, "1" + suffix)),
                      losses(records, after_bits(team, role, "0" + suffix)))


def stt_interactions(records: Sequence[Record]) -> dict[str, Quantity]:
    """Table 3's quantities for S (the alter senior) and the focal senior, and the indirect effect."""
    table = {}
    for senior, own, other in (("S", "alter", "focal"), ("focal", "focal", "alter")):
        table[f"tricking({senior})"] = interaction_effect(records, other, "junior", "")
        table[f"helping0({senior})"] = interaction_effect(records, own, "junior", "0")
        table[f"helping1({senior})"] = interaction_effect(records, own, "junior", "1")
    table["indirect"] = difference(losses(records, after_bits("alter", "junior", "00")),
                                   losses(records, after_bits("focal", "junior", "00")))
    return table


def hb_savings(records: Sequence[Record]) -> dict[str, Quantity]:
    """Table 4's quantities per team (``alter`` = S's team, ``focal``)."""
    table = {}
    for team in ("alter", "focal"):
        moves = [record for record in records if record["team"] == team]
        table[f"true_loss({team})"] = mean_quantity([r["loss"] for r in moves])
        table[f"h0_loss({team})"] = mean_quantity([r["loss_h0"] for r in moves])
        table[f"savings({team})"] = mean_quantity([r["loss_h0"] - r["loss"] for r in moves])
    return table


def next_move_losses(records: Sequence[Record]) -> dict[tuple[int, int], float]:
    """{(game, ply): loss of the move played at ply + 1} (the opponent's reply)."""
    by_position = {(record["game"], record["ply"]): record["loss"] for record in records}
    return {(game, ply): by_position[(game, ply + 1)] for game, ply in by_position if (game, ply + 1) in by_position}


def hb_interactions(records: Sequence[Record]) -> dict[str, Quantity]:
    """Table 7's quantities per team and interaction: share (of the team's classified moves, se √(p(1−p)/n)),
    savings and the opponent's next-move loss."""
    following = next_move_losses(records)
    table = {}
    for team in ("alter", "focal"):
        moves = [record for record in records if record["team"] == team and record.get("interaction")]
        for interaction in INTERACTIONS:
            chosen = [record for record in moves if record["interaction"] == interaction]
            share = len(chosen) / len(moves) if moves else math.nan
            se = math.sqrt(share * (1 - share) / len(moves)) if moves else math.nan
            table[f"share({team}, {interaction})"] = {"value": share, "se": se, "n": len(moves)}
            table[f"savings({team}, {interaction})"] = mean_quantity([r["loss_h0"] - r["loss"] for r in chosen])
            table[f"opponent_loss({team}, {interaction})"] = mean_quantity(
                [following[(r["game"], r["ply"])] for r in chosen if (r["game"], r["ply"]) in following])
    return table


def markdown_table(title: str, table: dict[str, Quantity], digits: int = 2) -> str:
    lines = [f"### {title}", "", "| quantity | value | se | n |", "|---|---|---|---|"]
    for name, quantity in table.items():
        value, se = quantity["value"], quantity["se"]
        lines.append(f"| {name} | {value:.{digits}f} | {se:.{digits}f} | {quantity['n']} |")
    return "\n".join(lines) + "\n"


__all__ = ["difference", "hb_interactions", "hb_savings", "interaction_effect", "losses", "markdown_table",
           "mean_quantity", "next_move_losses", "stt_interactions", "stt_losses"]
