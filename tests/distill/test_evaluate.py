"""Metrics (Kendall's τ against scipy, accuracy with ties), baselines, and puzzle solving."""

import math

import chess
import numpy as np
import pytest
import scipy.stats

from distill import evaluate
from distill.puzzles import Puzzle, is_solved, puzzle_accuracy, read_puzzles, write_puzzles


def pair_count_tau_b(x, y) -> float:
    """τ-b from its definition: (concordant − discordant) / sqrt(pairs untied in x · pairs untied in y)."""
    concordant_minus_discordant = untied_x = untied_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            sign_x, sign_y = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
            concordant_minus_discordant += sign_x * sign_y
            untied_x, untied_y = untied_x + (sign_x != 0), untied_y + (sign_y != 0)
    return math.nan if not untied_x or not untied_y else concordant_minus_discordant / math.sqrt(untied_x * untied_y)


@pytest.mark.parametrize("x, y, expected", [
    ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], 1.0),
    ([1, 2, 3, 4, 5], [5, 4, 3, 2, 1], -1.0),
    ([0.1, 0.4, 0.2, 0.9], [0.3, 0.5, 0.1, 0.8], 4 / 6),  # 5 concordant pairs, 1 discordant
    ([1, 1, 2, 3, 3, 3], [0.2, 0.1, 0.5, 0.5, 0.9, 0.4], 8 / math.sqrt(11 * 14)),  # 4 ties in x, 1 in y: τ-b
])
def test_kendall_tau_is_tau_b(x, y, expected):
    assert evaluate.kendall_tau(x, y) == pytest.approx(expected)
    assert pair_count_tau_b(x, y) == pytest.approx(expected)


def test_kendall_tau_on_random_rankings_matches_the_definition():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(1, 40))
        x, y = rng.integers(0, 6, n).astype(float), rng.random(n)
        expected, got = pair_count_tau_b(x, y), evaluate.kendall_tau(x, y)
        assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)
    assert math.isnan(evaluate.kendall_tau([1.0, 1.0, 1.0], [0.1, 0.2, 0.3]))  # a constant side ranks nothing
    with pytest.raises(ValueError, match="same length"):
        evaluate.kendall_tau([1.0, 2.0], [1.0, 2.0, 3.0])


def test_argsort_variant_correlates_index_orders():
    x, y = np.array([0.3, 0.1, 0.2]), np.array([0.1, 0.3, 0.2])
    assert evaluate.kendall_tau_argsort(x, y) == pytest.approx(
        scipy.stats.kendalltau(np.argsort(x), np.argsort(y)).statistic)


def test_expected_accuracy_counts_ties():
    values = np.array([0.9, 0.9, 0.1, 0.2])
    assert evaluate.expected_accuracy(np.array([3.0, 1.0, 0.0, 0.0]), values) == 1.0
    assert evaluate.expected_accuracy(np.array([1.0, 1.0, 1.0, 1.0]), values) == 0.5
    assert evaluate.expected_accuracy(np.array([0.0, 0.0, 5.0, 0.0]), values) == 0.0


def test_material_baseline_takes_the_queen():
    board = chess.Board("4k3/8/8/3q4/4P3/8/8/4K3 w - - 0 1")
    moves = list(board.legal_moves)
    scores = evaluate.material_scores([board], [moves])[0]
    assert moves[int(np.argmax(scores))].uci() == "e4d5"
    assert board.fen() == "4k3/8/8/3q4/4P3/8/8/4K3 w - - 0 1"  # the board is left as it was


def test_ranking_metrics_and_baselines():
    records = [
        {"fen": "4k3/8/8/3q4/4P3/8/8/4K3 w - - 0 1", "moves": ["e1d1", "e4d5", "e4e5"],
         "action_values": [0.1, 0.95, 0.05]},
        {"fen": "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1", "moves": ["e2e3", "e2e4", "e1d1"],
         "action_values": [0.6, 0.7, 0.5]},
    ]
    perfect = evaluate.ranking_metrics(records, [np.array(r["action_values"]) for r in records])
    assert perfect["action_accuracy"] == 1.0 and perfect["kendall_tau"] == pytest.approx(1.0)
    baselines = evaluate.baseline_metrics(records, num_bins=32, seed=0)
    assert set(baselines) == {"uniform_random", "material"}
    assert baselines["uniform_random"]["log_loss"] == pytest.approx(math.log(32))
    assert baselines["material"]["log_loss"] is None
    # the material policy wins the queen in the first board and ties every move in the second (τ = 0 there)
    assert baselines["material"]["action_accuracy"] == pytest.approx((1 + 1 / 3) / 2)


MATE_IN_TWO = Puzzle("mate2", "2r3k1/p4ppp/8/8/8/8/3R1PPP/3R2K1 b - - 0 1", ("a7a6", "d2d8", "c8d8", "d1d8"), 1500)


def scripted(moves):
    def choose(board):
        return chess.Move.from_uci(moves[len(board.move_stack)])
    return choose


def test_puzzle_rules():
    # the solver's moves are the 2nd and 4th of the line
    assert is_solved(MATE_IN_TWO, scripted({1: "d2d8", 3: "d1d8"}))
    assert not is_solved(MATE_IN_TWO, scripted({1: "d2d7", 3: "d1d8"}))
    one_ply = Puzzle("mate1", "6k1/p4ppp/8/8/8/8/5PPP/4R1K1 b - - 0 1", ("a7a6", "e1e8"), 1000)
    assert is_solved(one_ply, scripted({1: "e1e8"}))
    assert not is_solved(one_ply, scripted({1: "e1e7"}))
    # another mating move also solves a mate puzzle
    two_rooks = Puzzle("alt", "6k1/p4ppp/8/8/8/8/5PPP/3RR1K1 b - - 0 1", ("a7a6", "d1d8"), 1000)
    assert is_solved(two_rooks, scripted({1: "e1e8"}))


def test_puzzle_file_round_trip_and_bad_rows(tmp_path):
    path = tmp_path / "puzzles.csv"
    write_puzzles(path, [MATE_IN_TWO])
    with open(path, "a") as stream:
        stream.write("bad,2r3k1/p4ppp/8/8/8/8/3R1PPP/3R2K1 b - - 0 1,a7a6 a1a8,1500\n")
    puzzles, problems = read_puzzles(path)
    assert puzzles == [MATE_IN_TWO]
    assert len(problems) == 1 and problems[0].location.endswith(":3") and "a1a8" in problems[0].message
    assert puzzle_accuracy(puzzles, scripted({1: "d2d8", 3: "d1d8"}))["puzzle_accuracy"] == 1.0


# --- per-board metrics and paired comparisons -----------------------------------------------------------------


def test_paired_standard_error_uses_the_pairing():
    """Two policies whose per-board scores share each board's difficulty: the paired standard error is that of the
    per-board differences, far below the unpaired one, and breaking the pairing (shuffling one side) loses that."""
    rng = np.random.default_rng(0)
    difficulty = rng.random(2000)
    a = np.clip(difficulty + 0.05 + 0.05 * rng.standard_normal(2000), 0, 1)
    b = np.clip(difficulty + 0.05 * rng.standard_normal(2000), 0, 1)
    paired = evaluate.paired_difference(a, b)
    differences = a - b
    assert paired["boards"] == 2000
    assert paired["difference"] == pytest.approx(a.mean() - b.mean())
    assert paired["standard_error"] == pytest.approx(differences.std(ddof=1) / math.sqrt(2000))
    unpaired = math.sqrt(a.var(ddof=1) / 2000 + b.var(ddof=1) / 2000)
    assert paired["standard_error"] < unpaired / 3
    shuffled = evaluate.paired_difference(a, rng.permutation(b))
    assert shuffled["difference"] == pytest.approx(paired["difference"])  # the mean does not see the pairing
    assert shuffled["standard_error"] == pytest.approx(unpaired, rel=0.1)  # its standard error does


def test_paired_difference_leaves_out_boards_either_side_lacks():
    a = np.array([1.0, 0.0, np.nan, 1.0, 0.5])
    b = np.array([0.0, 0.0, 1.0, np.nan, 0.5])
    result = evaluate.paired_difference(a, b)  # boards 0, 1 and 4: differences 1, 0, 0
    assert result["boards"] == 3 and result["difference"] == pytest.approx(1 / 3)
    assert result["standard_error"] == pytest.approx(np.std([1, 0, 0], ddof=1) / math.sqrt(3))
    assert math.isnan(evaluate.paired_difference(np.array([1.0]), np.array([0.0]))["standard_error"])
    with pytest.raises(ValueError, match="same length"):
        evaluate.paired_difference(np.zeros(3), np.zeros(4))


def test_compare_policies_pairs_every_two_in_every_group():
    per_board = {"av": {"action_accuracy": np.array([1.0, 0.0, 1.0, 1.0]),
                        "kendall_tau": np.array([0.5, 0.1, np.nan, 0.3])},
                 "sv": {"action_accuracy": np.array([0.0, 0.0, 1.0, 0.0]),
                        "kendall_tau": np.array([0.2, 0.2, np.nan, 0.3])},
                 "material": {"action_accuracy": np.array([1.0, 0.5, 0.0, 0.0]), "kendall_tau": np.zeros(4)}}
    groups = {"all": np.ones(4, bool), "first_two": np.array([True, True, False, False])}
    comparison = evaluate.compare_policies(per_board, groups)
    assert list(comparison["all"]["differences"]) == ["av - sv", "av - material", "sv - material"]
    assert comparison["all"]["boards"] == 4 and comparison["first_two"]["boards"] == 2
    assert comparison["all"]["policies"]["av"] == {"action_accuracy": 0.75, "kendall_tau": pytest.approx(0.3)}
    av_sv = comparison["all"]["differences"]["av - sv"]
    assert av_sv["action_accuracy"]["difference"] == 0.5  # differences 1, 0, 0, 1
    assert av_sv["action_accuracy"]["standard_error"] == pytest.approx(np.std([1, 0, 0, 1], ddof=1) / 2)
    assert av_sv["kendall_tau"]["boards"] == 3 and av_sv["kendall_tau"]["difference"] == pytest.approx(0.2 / 3)
    first_two = comparison["first_two"]["differences"]["av - material"]["action_accuracy"]
    assert (first_two["difference"], first_two["boards"]) == (pytest.approx(-0.25), 2)  # differences 0, -0.5


def test_board_metrics_of_records_and_their_groups():
    records = [
        {"fen": "4k3/8/8/3q4/4P3/8/8/4K3 w - - 0 1", "moves": ["e1d1", "e4d5", "e4e5"],
         "action_values": [0.1, 0.95, 0.05]},
        {"fen": "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1", "moves": ["e2e3", "e2e4", "e1d1"],
         "action_values": [0.6, 0.7, 0.5]},
        {"fen": "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1", "moves": ["e2e3", "e2e4"], "action_values": [0.5, 0.5]},
    ]
    material = evaluate.board_metrics(records, evaluate.score_records(evaluate.material_scores, records))
    np.testing.assert_allclose(material["action_accuracy"], [1.0, 1 / 3, 1.0])
    assert material["kendall_tau"][1] == 0.0 and math.isnan(material["kendall_tau"][2])  # ties all; ranks nothing
    assert evaluate.summarize_boards(material) == evaluate.ranking_metrics(
        records, evaluate.score_records(evaluate.material_scores, records))
    groups = evaluate.board_groups(records)
    np.testing.assert_array_equal(groups["best_move_capture"], [True, False, False])  # e4xd5 wins the queen
    np.testing.assert_array_equal(groups["best_move_quiet"], [False, True, True])
    perfect = evaluate.board_metrics(records, [np.array(r["action_values"]) for r in records])
    comparison = evaluate.compare_policies({"stockfish": perfect, "material": material}, groups)
    quiet = comparison["best_move_quiet"]["differences"]["stockfish - material"]["action_accuracy"]
    assert (quiet["difference"], quiet["boards"]) == (pytest.approx(1 / 3), 2)  # 1 − 1/3 and 1 − 1
    capture = comparison["best_move_capture"]["differences"]["stockfish - material"]["kendall_tau"]
    assert capture["difference"] == pytest.approx(1.0 - material["kendall_tau"][0])
