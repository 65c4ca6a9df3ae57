"""The komi-calibration statistics of :mod:`sai_go.calibration` on data whose answer is known, and sai-go-komi's
presets: no network and no self-play (the launcher is checked end to end by hand: sai_go/README.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sai_go.calibration import (HeldoutGames, black_winrate, calibration, cluster_mean_se, compare_scores,
                                concatenate, first_games, fit_fair_komi, leave_one_cluster_out_mean, ols_slope,
                                reliability_bins)


def logistic_games(rng, alpha: float, beta: float, count: int, spread: float = 12.0, shift: float = 0.0):
    """``count`` games at half-integer komi in ``alpha + shift ± spread`` whose Black results follow σ(β(α − k))."""
    komi = np.floor(alpha + shift + rng.uniform(-spread, spread, count)) + 0.5
    return komi, (rng.uniform(size=count) < 1 / (1 + np.exp(-beta * (alpha - komi)))).astype(float)


def test_cluster_se_is_the_usual_se_per_value_and_counts_a_repeated_game_once():
    values = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    mean, se = cluster_mean_se(values)
    assert mean == pytest.approx(0.6) and se == pytest.approx(values.std(ddof=1) / np.sqrt(5))
    # Each game's value repeated at 4 positions: same mean, same se as one value per game (not 2× smaller).
    assert cluster_mean_se(np.repeat(values, 4), np.repeat(np.arange(5), 4)) == pytest.approx((mean, se))
    assert np.isnan(cluster_mean_se([1.0, 0.0], [3, 3])[1])  # one game: no se


def test_leave_one_game_out_rate_excludes_the_whole_game():
    outcome = np.array([1.0, 1.0, 0.0, 1.0])
    games = np.array([0, 0, 1, 2])
    assert leave_one_cluster_out_mean(outcome, games) == pytest.approx([0.5, 0.5, 1.0, 2 / 3])


def test_scores_and_their_difference_against_a_baseline():
    predicted, outcome, baseline = np.array([0.9, 0.2]), np.array([1.0, 0.0]), np.array([0.5, 0.5])
    scores = compare_scores(predicted, outcome, baseline)
    assert scores["brier"][0] == pytest.approx((0.01 + 0.04) / 2)
    assert scores["baseline_brier"][0] == pytest.approx(0.25)
    assert scores["brier_difference"][0] == pytest.approx(0.025 - 0.25)
    assert scores["log_loss"][0] == pytest.approx(-(np.log(0.9) + np.log(0.8)) / 2)
    assert scores["bias"][0] == pytest.approx((-0.1 + 0.2) / 2)


def test_reliability_bins_accept_a_calibrated_prediction_and_catch_a_shifted_one():
    rng = np.random.default_rng(0)
    predicted = rng.uniform(size=20_000)
    outcome = (rng.uniform(size=predicted.size) < predicted).astype(float)
    bins = reliability_bins(predicted, outcome, bins=5)
    assert [row["count"] for row in bins] == pytest.approx([4000] * 5, rel=0.1)
    assert all(abs(row["observed"][0] - row["predicted"]) < 3 * row["observed"][1] for row in bins)
    assert all(row["observed"][1] == pytest.approx(np.sqrt(row["predicted"] * (1 - row["predicted"]) / row["count"]),
                                                   rel=0.1) for row in bins)  # binomial se, one value per game
    overconfident = np.clip(predicted + 0.1, 0, 1)
    shifted = reliability_bins(overconfident, outcome, bins=5)
    assert sum(abs(row["observed"][0] - row["predicted"]) > 3 * row["observed"][1] for row in shifted) >= 4


def test_fair_komi_fit_recovers_the_generating_komi_within_its_se():
    rng = np.random.default_rng(1)
    komi, black = logistic_games(rng, alpha=9.0, beta=0.5, count=4000, shift=5.0)  # komi not centred on 9
    fit = fit_fair_komi(komi, black)
    assert abs(fit["fair_komi"][0] - 9.0) < 3 * fit["fair_komi"][1] and 0 < fit["fair_komi"][1] < 0.3
    assert abs(fit["slope"][0] - 0.5) < 3 * fit["slope"][1]
    small = fit_fair_komi(*logistic_games(np.random.default_rng(2), 9.0, 0.5, 250, shift=5.0))
    assert small["fair_komi"][1] > 2 * fit["fair_komi"][1]  # se shrinks with the games
    assert np.isnan(fit_fair_komi(komi, np.ones_like(komi))["fair_komi"][0])  # Black always wins: no fit
    assert np.isnan(fit_fair_komi(komi, (komi < 9).astype(float))["fair_komi"][0])  # separable: no fit


def test_ols_slope():
    assert ols_slope([0, 4, 8], [1.0, 3.0, 5.0]) == pytest.approx(0.5)


def test_first_games_reads_each_lanes_first_game_from_the_frames():
    # Lane 0: a 3-ply game Black wins at komi 2.5, then an unfinished one; lane 1: a 2-ply game White wins at
    # komi −1.5; lane 2: never ends (left out).
    game_over = np.array([[0, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 0]], bool)
    value_target = np.array([[1.0, -1.0, 0.0], [-1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    value_mask = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 0], [0, 0, 0]], bool)
    alpha = np.array([[2.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [4.0, 0.0, 0.0], [9.0, 0.0, 0.0]])
    beta = np.full((4, 3), 0.5)
    komi = np.array([[2.5, -1.5, 0.5]] * 3 + [[7.5, 7.5, 7.5]])
    black_to_move = (np.arange(4) % 2 == 0)[:, None]
    signed = np.where(black_to_move, -komi, komi)
    games = first_games(game_over, value_target, value_mask, alpha, beta, signed, komi)
    assert games.komi.tolist() == [2.5, -1.5] and games.black_outcome.tolist() == [1.0, 0.0]
    assert games.position_game.tolist() == [0, 0, 0, 1, 1]
    assert games.position_outcome.tolist() == [1.0, 0.0, 1.0, 0.0, 1.0]
    sigmoid = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    assert games.position_predicted[:3] == pytest.approx(sigmoid(0.5 * np.array([2 - 2.5, -1 + 2.5, 4 - 2.5])),
                                                         abs=1e-6)


def test_calibration_prefers_the_true_sigmoid_to_the_komi_blind_rate_and_pools_networks():
    rng = np.random.default_rng(3)
    parts = []
    for alpha in (1.0, 9.0):  # two networks, each with its own games
        komi, black = logistic_games(rng, alpha, 0.4, 400)
        positions = np.repeat(black_winrate(alpha, 0.4, komi), 3)  # three positions a game, Black's view
        parts.append((alpha, HeldoutGames(komi, black, positions, np.repeat(black, 3), np.repeat(np.arange(400), 3))))
    pooled = concatenate([games for _, games in parts])
    assert pooled.position_game.max() == 799  # game indices stay distinct
    per_game_alpha = np.repeat([alpha for alpha, _ in parts], 400)
    result = calibration(pooled, per_game_alpha, np.full(800, 0.4), bins=5)
    for level in ("games", "positions"):
        difference, se = result[level]["brier_difference"]
        assert difference < -3 * se  # the sigmoid at each game's komi beats the komi-blind rate
        assert abs(result[level]["bias"][0]) < 3 * result[level]["bias"][1]
    assert result["positions"]["brier"][1] == pytest.approx(result["games"]["brier"][1], rel=0.05)  # clustered
    right = black_winrate(per_game_alpha, 0.4, pooled.komi)  # each game predicted from its own network
    assert result["games"]["brier"][0] == pytest.approx(np.mean((right - pooled.black_outcome) ** 2))
    wrong = black_winrate(5.0, 0.4, pooled.komi)  # one fair komi for both networks
    difference, se = compare_scores(wrong, pooled.black_outcome, right)["brier_difference"]
    assert difference > 3 * se



def test_presets_train_sai_go_and_the_evidence_preset_is_three_seeds_of_32_iterations():
    from experiments.configs import load_config

    tiny, evidence = load_config("sai-go-komi", "tiny"), load_config("sai-go-komi", "evidence")
    sai = load_config("sai-go", "tiny")
    for key in ("model", "search", "replay", "train"):
        assert tiny[key].to_dict() == sai[key].to_dict() == evidence[key].to_dict(), key
    assert tiny.selfplay.to_dict() == sai.selfplay.to_dict() == {
        **evidence.selfplay.to_dict(), "num_games": 64, "plies_per_iteration": 128}
    assert (evidence.selfplay.num_games, evidence.selfplay.plies_per_iteration) == (32, 512)
    # the evidence preset trains with the paper's value loss, branch points from empty-board games only and no
    # early pass, otherwise sai-go tiny's self-play
    assert tiny.method_options.to_dict() == sai.method_options.to_dict() == {
        **evidence.method_options.to_dict(), "value_loss": "tanh", "branch_from_branches": True, "pass_rule": "free",
        "queue_size": 64}
    assert (evidence.method_options.value_loss, evidence.method_options.branch_from_branches,
            evidence.method_options.pass_rule, evidence.method_options.queue_size) == ("paper", False,
                                                                                   "no_early_pass", 128)
    paper = load_config("sai-go", "paper")
    assert (paper.method_options.value_loss, paper.method_options.branch_from_branches) == ("paper", False)
    assert (sai.method_options.value_loss, sai.method_options.branch_from_branches) == ("tanh", True)
    assert (tiny.iterations, list(tiny.seeds)) == (sai.iterations, [0])
    assert (evidence.iterations, evidence.checkpoint.keep_period, list(evidence.seeds)) == (32, 4, [0, 1, 2])
    assert evidence.calibration.games == 256 and load_config("sai-go-komi", "paper").model.channels == 128


def test_calibration_games_are_played_at_the_training_lambda_unless_set(monkeypatch, go_game):
    from experiments.sai_go_komi import calibration_lambda
    from sai_go import calibration as module
    from experiments.configs import load_config

    assert calibration_lambda(load_config("sai-go-komi", "tiny")) == 0.5  # calibration.lam None: method_options.lam
    assert calibration_lambda(load_config("sai-go-komi", "tiny", ["method_options.lam=0.25"])) == 0.25
    assert calibration_lambda(load_config("sai-go-komi", "tiny", ["calibration.lam=0.0"])) == 0.0
    seen = []
    monkeypatch.setattr(module, "make_sai_play_fn", lambda game, network, search, config, options: seen.append(options))
    module.compiled_selfplay.__wrapped__(go_game, None, 4, 0.5)  # builds the play function, compiles nothing
    module.compiled_selfplay.__wrapped__(go_game, None, 4, 0.5, "no_losing_pass")
    assert (seen[0].lam, seen[0].branch_probability, seen[0].pass_rule) == (0.5, 0.0, "free")
    assert seen[1].pass_rule == "no_losing_pass"


def test_alpha_follows_its_self_plays_fair_komi_is_read_checkpoint_by_checkpoint():
    """Seed 0's α_∅ sits 2 above the komi fitted to each checkpoint's games (slope 1, gap 2); seed 1's stays at 5
    while its fit moves (slope 0); a checkpoint without a fit is left out of its seed's slope and gap."""
    from experiments.sai_go_komi import results, tracking

    fits = {0: [0.0, 4.0, 8.0, float("nan")], 1: [1.0, 3.0, 9.0, 7.0]}
    alphas = {0: [2.0, 6.0, 10.0, 40.0], 1: [5.0, 5.0, 5.0, 5.0]}
    rows = [{"step": 4 * index, "alpha": {seed: alphas[seed][index] for seed in fits},
             "fair_komi_fit": {seed: {"fair_komi": [fits[seed][index], 1.0]} for seed in fits}} for index in range(4)]
    follows = tracking(rows)
    assert follows["slope_alpha_on_fit"] == pytest.approx({0: 1.0, 1: 0.0})
    assert follows["gap"] == pytest.approx({0: 2.0, 1: 0.0}) and follows["fitted_steps"] == {0: 3, 1: 4}
    assert follows["slope_mean_se"] == pytest.approx([0.5, 0.5])  # two seeds: se = |1 − 0| / 2
    assert follows["per_step"][1]["gap"] == {0: 2.0, 1: 2.0}
    assert json.loads(json.dumps(follows))["fitted_steps"] == {"0": 3, "1": 4}  # summary.json holds it
    calibration = {"games": {"count": 768, "brier_difference": [-0.067, 0.008]}}
    summary = {"seeds": [0, 1], "tracking": follows,
               "per_step": [{**rows[-1], "alpha_mean_se": [22.5, 17.5], "fair_komi_fit_mean_se": [7.0, float("nan")],
                             "calibration": calibration}]}
    quantities = results(summary, None)
    assert (quantities["slope_alpha_on_fit"].value, quantities["slope_alpha_on_fit"].over) == (0.5, "seeds")
    assert quantities["last_alpha"].label == "α_∅ at iteration 12" and quantities["gap_alpha_minus_fit"].n == 2
    brier = quantities["brier_difference_last"]  # the held-out games of the last checkpoint, paired by game
    assert (brier.value, brier.error, brier.n, brier.over, brier.paired) == (-0.067, 0.008, 768, "games", True)
