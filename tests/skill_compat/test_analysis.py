"""Every analysis quantity (Tables 2, 3, 4, 7 analogs) on hand-made 8-ply records, against answers worked by hand."""

from __future__ import annotations

import math

import pytest

from skill_compat import analysis

# Two STT games of 8 plies: (team, role, bits before, loss, w_before) per ply.  Game 0: focal White, bits 10010010;
# game 1: focal Black, bits 01000110.
STT_GAMES = {
    0: [("focal", "senior", "", 1, .6), ("alter", "junior", "1", 4, .5), ("focal", "junior", "10", 6, .55),
        ("alter", "senior", "100", 2, .5), ("focal", "junior", "1001", 3, .25), ("alter", "junior", "10010", 5, .15),
        ("focal", "senior", "100100", 0, .5), ("alter", "junior", "1001001", 7, .45)],
    1: [("alter", "junior", "", 2, .5), ("focal", "senior", "0", .5, .5), ("alter", "junior", "01", 1, .85),
        ("focal", "junior", "010", 8, .1), ("alter", "junior", "0100", 1, .3), ("focal", "senior", "01000", 1.5, .6),
        ("alter", "senior", "010001", 0, .4), ("focal", "junior", "0100011", 4, .9)],
}


def stt_records():
    return [{"game": game, "ply": ply, "team": team, "role": role, "bits_before": bits, "loss": loss,
             "w_before": w_before}
            for game, plies in STT_GAMES.items() for ply, (team, role, bits, loss, w_before) in enumerate(plies)]


def value(table, name):
    return table[name]["value"]


def test_table_2_losses_by_role_and_team():
    table = analysis.stt_losses(stt_records())
    assert value(table, "L(S)") == pytest.approx(1.0)
    assert table["L(S)"]["se"] == pytest.approx(1.0)  # sd of (2, 0) is √2, over √2
    assert value(table, "L(focal)") == pytest.approx(0.75)
    assert value(table, "Δ(S, focal)") == pytest.approx(0.25)
    assert value(table, "L(J_l)") == pytest.approx(20 / 6)
    assert value(table, "L(J_f)") == pytest.approx(5.25)
    assert value(table, "Δ(J_l, J_f)") == pytest.approx(20 / 6 - 5.25)
    assert value(table, "Δ(team_l, team_f)") == pytest.approx(2.75 - 3.0)
    expected_se = math.hypot(table["L(J_l)"]["se"], table["L(J_f)"]["se"])
    assert table["Δ(J_l, J_f)"]["se"] == pytest.approx(expected_se)
    # by the mover's win probability before the move, bins of 20 points
    assert value(table, "Δ(J_l, J_f, 0-20)") == pytest.approx(5 - 8)
    assert value(table, "Δ(J_l, J_f, 20-40)") == pytest.approx(1 - 3)
    assert value(table, "Δ(J_l, J_f, 40-60)") == pytest.approx(13 / 3 - 6)
    assert math.isnan(value(table, "Δ(J_l, J_f, 60-80)"))
    assert value(table, "Δ(J_l, J_f, 80-100)") == pytest.approx(1 - 4)


def test_table_3_tricking_helping_and_indirect_effects():
    table = analysis.stt_interactions(stt_records())
    assert value(table, "tricking(focal)") == pytest.approx((4 + 7 + 1) / 3 - (5 + 1) / 2)
    assert value(table, "tricking(S)") == pytest.approx((3 + 4) / 2 - (6 + 8) / 2)
    assert value(table, "helping1(focal)") == pytest.approx(4 - 3)
    assert value(table, "helping0(S)") == pytest.approx(5 - 1)
    # no move meets these conditions in the record
    for name in ("helping0(focal)", "helping1(S)", "indirect"):
        assert math.isnan(value(table, name)), name
    # the suffix condition looks at the latest bits only, and needs as many bits as the suffix
    moves = analysis.losses(stt_records(), analysis.after_bits("alter", "junior", "01"))
    assert (moves["value"], moves["n"]) == (pytest.approx((7 + 1) / 2), 2)


# One HB game of 8 plies, focal White: (interaction, loss, loss of h0).
HB_GAME = [("agreement", 1, 1), ("correction", 0, 6), ("blindsiding", 3, 3), ("disagreement", 4, 2),
           ("correction", 0, 5), ("agreement", 2, 2), ("disagreement", 6, 1), ("agreement", 1, 1)]


def hb_records():
    return [{"game": 0, "ply": ply, "team": "focal" if ply % 2 == 0 else "alter", "role": "hand",
             "interaction": interaction, "loss": loss, "loss_h0": loss_h0}
            for ply, (interaction, loss, loss_h0) in enumerate(HB_GAME)]


def test_table_4_true_loss_h0_loss_and_savings():
    table = analysis.hb_savings(hb_records())
    assert value(table, "true_loss(focal)") == pytest.approx(2.5)
    assert value(table, "h0_loss(focal)") == pytest.approx(2.5)
    assert value(table, "savings(focal)") == pytest.approx(0.0)
    assert value(table, "true_loss(alter)") == pytest.approx(1.75)
    assert value(table, "h0_loss(alter)") == pytest.approx(2.75)
    assert value(table, "savings(alter)") == pytest.approx(1.0)


def test_table_7_share_savings_and_opponent_loss_by_interaction():
    table = analysis.hb_interactions(hb_records())
    for interaction in ("agreement", "blindsiding", "correction", "disagreement"):
        assert value(table, f"share(focal, {interaction})") == pytest.approx(0.25)
    assert table["share(focal, agreement)"]["se"] == pytest.approx(math.sqrt(0.25 * 0.75 / 4))
    assert value(table, "share(alter, agreement)") == pytest.approx(0.5)
    assert value(table, "share(alter, blindsiding)") == 0
    assert value(table, "savings(focal, correction)") == pytest.approx(5)
    assert value(table, "savings(focal, disagreement)") == pytest.approx(-5)
    assert value(table, "savings(alter, correction)") == pytest.approx(6)
    assert value(table, "opponent_loss(focal, correction)") == pytest.approx(2)  # ply 5's loss
    assert value(table, "opponent_loss(focal, agreement)") == pytest.approx(0)
    assert value(table, "opponent_loss(alter, correction)") == pytest.approx(3)
    # ply 7 has no reply: only ply 5's agreement counts
    assert value(table, "opponent_loss(alter, agreement)") == 6 and table["opponent_loss(alter, agreement)"]["n"] == 1


def test_markdown_table_lists_every_quantity():
    table = analysis.stt_losses(stt_records())
    text = analysis.markdown_table("Table 2", table)
    assert text.count("\n| ") == len(table) + 1 and "| L(S) | 1.00 | 1.00 | 2 |" in text
