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
