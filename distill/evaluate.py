"""Evaluation on held-out positions: action accuracy, Kendall's τ, log-loss, and two baselines.

For every test board a policy scores its legal moves (higher is better) and is compared with Stockfish's action
values Q_SF(s, a):

- **action accuracy**: the chance that the policy's move is one Stockfish rates best.  Ties count as they are:
  when the policy's top score is shared by several moves it picks one of them uniformly, and a move counts as
  correct when its Q_SF equals the board's maximum.  The expected accuracy is computed exactly
  (``|policy's best ∩ Stockfish's best| / |policy's best|``), not sampled.
- **Kendall's τ** (``kendall_tau``): τ-b between the policy's scores and Q_SF over the legal moves, averaged over
  boards — the usual rank correlation, with ties in either ranking handled by τ-b (``scipy.stats.kendalltau``'s
  default).  Boards with one move, or where Stockfish gives every move the same value, rank nothing and are
  left out for every policy; a policy that gives every move of a board the same score expresses no ranking and
  gets τ = 0 there (τ-b itself is undefined).
  The paper's code instead correlates the two ``argsort`` permutations (an index order, not ranks, so it measures
  something else when moves are listed in a different order); that number is reported as
  ``kendall_tau_argsort`` for comparison.
- **log-loss**: the mean cross-entropy of the predictor's outputs on the test boards: AV over every (board, move)
  value class, SV over the board's value class, BC over Stockfish's best move — each the training loss.

Every metric is first computed per board (:func:`board_metrics`), so two policies measured on the same boards can be
compared board by board: :func:`paired_difference` gives the mean per-board difference and its standard error,
:func:`compare_policies` does so for every pair of several policies, over all boards and over groups of them
(:func:`board_groups`: Stockfish's best move a capture, or quiet).  Pairing matters because boards differ far more in
difficulty than policies do: the same difference measured on two different sets of boards carries both sets' noise.

Baselines: ``uniform_random`` scores moves with independent uniform noise (its accuracy is the chance a random
legal move is best; its log-loss is that of a uniform distribution over the K bins, ``log K``, the loss of an AV
predictor that knows nothing) and ``material`` scores a move by the material balance after it, from the mover's
side (pawn 1, knight 3, bishop 3, rook 5, queen 9; a one-ply search).  The material baseline has no
distribution, so no log-loss (``None``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import chess
import numpy as np
import scipy.stats

PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}

COMPARED_METRICS = ("action_accuracy", "kendall_tau")
"""The per-board metrics :func:`compare_policies` pairs by default."""

MoveScorer = Callable[[Sequence[chess.Board], Sequence[Sequence[chess.Move]]], list[np.ndarray]]
"""``(boards, moves of each board) -> [k_i] scores for each board``."""


# --- rank statistics ---------------------------------------------------------------------------------------------------


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's τ-b of two [n] score vectors (``scipy.stats.kendalltau``); NaN when n < 2 or either is constant."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"kendall_tau needs two vectors of the same length, got {x.shape} and {y.shape}")
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan  # τ-b is undefined; scipy would say so with a warning
    return float(scipy.stats.kendalltau(x, y).statistic)


def kendall_tau_argsort(x: np.ndarray, y: np.ndarray) -> float:
    """τ between ``argsort(x)`` and ``argsort(y)`` (stable sorts), as the paper's code computes it."""
    return kendall_tau(np.argsort(x, kind="stable"), np.argsort(y, kind="stable"))


def expected_accuracy(scores: np.ndarray, action_values: np.ndarray) -> float:
    """Chance that a uniform pick among the top-scored moves is one of Stockfish's best moves."""
    scores, action_values = np.asarray(scores), np.asarray(action_values)
    chosen = scores == scores.max()
    best = action_values == action_values.max()
    return float(np.count_nonzero(chosen & best) / np.count_nonzero(chosen))


# --- baselines -----------------------------------------------------------------------------------------------------


def material_balance(board: chess.Board, color: chess.Color) -> int:
    """Material of ``color`` minus its opponent's."""
    total = 0
    for piece_type, value in PIECE_VALUES.items():
        total += value * (len(board.pieces(piece_type, color)) - len(board.pieces(piece_type, not color)))
    return total


def material_scores(boards: Sequence[chess.Board], moves: Sequence[Sequence[chess.Move]]) -> list[np.ndarray]:
    """The one-ply material policy: each move's material balance afterwards, for the side that played it."""
    results = []
    for board, board_moves in zip(boards, moves):
        mover, scores = board.turn, []
        for move in board_moves:
            board.push(move)
            scores.append(material_balance(board, mover))
            board.pop()
        results.append(np.asarray(scores, dtype=np.float64))
    return results


def uniform_random_scorer(seed: int) -> MoveScorer:
    """The uniform-random policy: independent uniform scores (a random order of the moves)."""
    rng = np.random.default_rng(seed)
    return lambda boards, moves: [rng.random(len(board_moves)) for board_moves in moves]


# --- evaluation -----------------------------------------------------------------------------------------------------


def board_and_moves(record: dict[str, Any]) -> tuple[chess.Board, list[chess.Move]]:
    return chess.Board(record["fen"]), [chess.Move.from_uci(move) for move in record["moves"]]


def score_records(scorer: MoveScorer, records: Sequence[dict[str, Any]], batch_boards: int = 64) -> list[np.ndarray]:
    """The scorer's [k] scores of the moves of every position record, in the records' move order."""
    scores: list[np.ndarray] = []
    for start in range(0, len(records), batch_boards):
        boards_moves = [board_and_moves(record) for record in records[start:start + batch_boards]]
        scores.extend(scorer([board for board, _ in boards_moves], [moves for _, moves in boards_moves]))
    return scores


def board_metrics(records: Sequence[dict[str, Any]], scores: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Per-board metrics of per-record move scores against Stockfish's, each [N] over the records in order.

    ``action_accuracy``; ``kendall_tau`` and ``kendall_tau_argsort``, NaN on boards where Stockfish ranks nothing
    (one move, or every move valued the same: left out for every policy alike).  Averaging them gives
    :func:`ranking_metrics`; pairing two policies' arrays board by board gives :func:`paired_difference`.
    """
    accuracies, taus, argsort_taus = [], [], []
    for record, board_scores in zip(records, scores, strict=True):
        action_values = np.asarray(record["action_values"])
        accuracies.append(expected_accuracy(board_scores, action_values))
        if len(action_values) < 2 or np.all(action_values == action_values[0]):
            taus.append(math.nan)
            argsort_taus.append(math.nan)
            continue
        tau = kendall_tau(board_scores, action_values)
        taus.append(0.0 if math.isnan(tau) else tau)  # a policy that ties every move agrees with no ranking
        argsort_taus.append(kendall_tau_argsort(board_scores, action_values))
    return {"action_accuracy": np.asarray(accuracies, dtype=np.float64), "kendall_tau": np.asarray(taus, np.float64),
            "kendall_tau_argsort": np.asarray(argsort_taus, dtype=np.float64)}


def summarize_boards(per_board: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The means of :func:`board_metrics` (τ over the boards where it is defined) and the board counts."""
    accuracy, tau = np.asarray(per_board["action_accuracy"]), np.asarray(per_board["kendall_tau"])
    ranked = np.isfinite(tau)
    return {
        "action_accuracy": float(np.mean(accuracy)) if len(accuracy) else math.nan,
        "kendall_tau": float(np.mean(tau[ranked])) if ranked.any() else math.nan,
        "kendall_tau_argsort": float(np.nanmean(per_board["kendall_tau_argsort"])) if ranked.any() else math.nan,
        "boards": len(accuracy),
        "boards_with_tau": int(np.count_nonzero(ranked)),
    }


def ranking_metrics(records: Sequence[dict[str, Any]], scores: Sequence[np.ndarray]) -> dict[str, Any]:
    """Action accuracy and Kendall's τ (both variants) of per-record move scores against Stockfish's."""
    return summarize_boards(board_metrics(records, scores))


def policy_metrics(scorer: MoveScorer, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """:func:`ranking_metrics` of a move scorer on position records."""
    return ranking_metrics(records, score_records(scorer, records))


def predictor_scores(scorer, records: Sequence[dict[str, Any]],
                     batch_boards: int = 64) -> tuple[list[np.ndarray], float]:
    """A ``distill.engine.NeuralScorer``'s [k] move scores of every record and its mean log-loss on them, from one
    forward pass per batch of boards."""
    scores, losses = [], []
    for start in range(0, len(records), batch_boards):
        chunk = records[start:start + batch_boards]
        boards_moves = [board_and_moves(record) for record in chunk]
        all_logits = scorer.logits([board for board, _ in boards_moves], [moves for _, moves in boards_moves])
        for record, (_, moves), logits in zip(chunk, boards_moves, all_logits):
            scores.append(scorer.predictor.move_scores(logits, moves))
            losses.append(scorer.predictor.losses(logits, record))
    return scores, float(np.mean(np.concatenate(losses))) if losses else math.nan


def predictor_metrics(scorer, records: Sequence[dict[str, Any]], batch_boards: int = 64) -> dict[str, Any]:
    """Ranking metrics and log-loss of a ``distill.engine.NeuralScorer``."""
    scores, log_loss = predictor_scores(scorer, records, batch_boards)
    return {**ranking_metrics(records, scores), "log_loss": log_loss}


def baseline_board_metrics(records: Sequence[dict[str, Any]], seed: int) -> dict[str, dict[str, np.ndarray]]:
    """:func:`board_metrics` of both baselines (``uniform_random`` seeded by ``seed``, ``material``), keyed by name."""
    return {"uniform_random": board_metrics(records, score_records(uniform_random_scorer(seed), records)),
            "material": board_metrics(records, score_records(material_scores, records))}


def baseline_summaries(per_board: Mapping[str, Mapping[str, np.ndarray]],
                       num_bins: int | None) -> dict[str, dict[str, Any]]:
    """The baselines' metrics from their :func:`baseline_board_metrics`: the uniform policy's log-loss is that of K
    equal bins (``log K``), the material policy has none."""
    return {"uniform_random": {**summarize_boards(per_board["uniform_random"]),
                               "log_loss": math.log(num_bins) if num_bins else None},
            "material": {**summarize_boards(per_board["material"]), "log_loss": None}}


def baseline_metrics(records: Sequence[dict[str, Any]], num_bins: int | None, seed: int) -> dict[str, dict[str, Any]]:
    """Both baselines' metrics, keyed by name."""
    return baseline_summaries(baseline_board_metrics(records, seed), num_bins)


# --- paired comparisons over the same boards ------------------------------------------------------------------


def paired_difference(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Mean per-board difference ``a − b`` of two policies' [N] metrics on the same boards, with its standard error.

    The differences are taken board by board (boards where either is NaN are left out), so what the two policies
    share — how hard each board is — cancels; the standard error is that of the mean of the N differences,
    ``std(a − b, ddof=1) / √N`` (NaN with fewer than two boards).
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired_difference needs two per-board vectors of the same length, got {a.shape} and "
                         f"{b.shape}")
    differences = (a - b)[np.isfinite(a) & np.isfinite(b)]
    count = len(differences)
    return {"difference": float(np.mean(differences)) if count else math.nan,
            "standard_error": float(np.std(differences, ddof=1) / math.sqrt(count)) if count > 1 else math.nan,
            "boards": count}


def best_move_is_capture(records: Sequence[dict[str, Any]]) -> np.ndarray:
    """[N] bool: Stockfish's best move of each position record (``distill.predictors.best_move``) is a capture."""
    from distill.predictors import best_move

    return np.array([chess.Board(record["fen"]).is_capture(chess.Move.from_uci(best_move(record)))
                     for record in records], dtype=bool)


def board_groups(records: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    """[N] masks of the groups that comparisons are split by: ``all`` boards, and those whose best move (Stockfish's)
    is a capture or a quiet move — the material policy is strong on the first and blind on the second."""
    capture = best_move_is_capture(records)
    return {"all": np.ones(len(records), dtype=bool), "best_move_capture": capture, "best_move_quiet": ~capture}


def compare_policies(per_board: Mapping[str, Mapping[str, np.ndarray]], groups: Mapping[str, np.ndarray],
                     metrics: Sequence[str] = COMPARED_METRICS) -> dict[str, Any]:
    """Every policy's means and every pair's paired difference, in each group of the same boards.

    ``per_board`` maps a policy's name to its :func:`board_metrics` on the same N boards (in the same order);
    ``groups`` maps a group's name to an [N] mask.  Returns ``{group: {"boards": n, "policies": {name: {metric:
    mean}}, "differences": {"a - b": {metric: paired_difference}}}}`` for each pair ``(a, b)`` in the order of
    ``per_board`` (a before b).
    """
    comparison: dict[str, Any] = {}
    for group, mask in groups.items():
        mask = np.asarray(mask, dtype=bool)
        selected = {name: {metric: np.asarray(values[metric])[mask] for metric in metrics}
                    for name, values in per_board.items()}
        comparison[group] = {
            "boards": int(np.count_nonzero(mask)),
            "policies": {name: {metric: float(np.nanmean(values[metric])) if np.isfinite(values[metric]).any()
                                else math.nan for metric in metrics} for name, values in selected.items()},
            "differences": {f"{a} - {b}": {metric: paired_difference(selected[a][metric], selected[b][metric])
                                           for metric in metrics}
                            for a, b in itertools.combinations(selected, 2)},
        }
    return comparison


__all__ = ["COMPARED_METRICS", "MoveScorer", "baseline_board_metrics", "baseline_metrics", "baseline_summaries",
           "best_move_is_capture", "board_and_moves", "board_groups", "board_metrics", "compare_policies",
           "expected_accuracy", "kendall_tau", "kendall_tau_argsort", "material_balance", "material_scores",
           "paired_difference", "policy_metrics", "predictor_metrics", "predictor_scores", "ranking_metrics",
           "score_records", "summarize_boards", "uniform_random_scorer"]
