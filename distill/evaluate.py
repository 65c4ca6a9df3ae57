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

Baselines: ``uniform_random`` scores moves with independent uniform noise (its accuracy is the chance a random
legal move is best; its log-loss is that of a uniform distribution over the K bins, ``log K``, the loss of an AV
predictor that knows nothing) and ``material`` scores a move by the material balance after it, from the mover's
side (pawn 1, knight 3, bishop 3, rook 5, queen 9; a one-ply search).  The material baseline has no
distribution, so no log-loss (``None``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import chess
import numpy as np
import scipy.stats

PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}

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


def ranking_metrics(records: Sequence[dict[str, Any]], scores: Sequence[np.ndarray]) -> dict[str, Any]:
    """Action accuracy and Kendall's τ (both variants) of per-record move scores against Stockfish's."""
    accuracies, taus, argsort_taus = [], [], []
    for record, board_scores in zip(records, scores, strict=True):
        action_values = np.asarray(record["action_values"])
        accuracies.append(expected_accuracy(board_scores, action_values))
        if len(action_values) < 2 or np.all(action_values == action_values[0]):
            continue  # Stockfish ranks nothing here: no τ for any policy
        tau = kendall_tau(board_scores, action_values)
        taus.append(0.0 if math.isnan(tau) else tau)  # a policy that ties every move agrees with no ranking
        argsort_taus.append(kendall_tau_argsort(board_scores, action_values))
    return {
        "action_accuracy": float(np.mean(accuracies)),
        "kendall_tau": float(np.mean(taus)) if taus else math.nan,
        "kendall_tau_argsort": float(np.mean(argsort_taus)) if argsort_taus else math.nan,
        "boards": len(accuracies),
        "boards_with_tau": len(taus),
    }


def policy_metrics(scorer: MoveScorer, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """:func:`ranking_metrics` of a move scorer on position records."""
    return ranking_metrics(records, score_records(scorer, records))


def predictor_metrics(scorer, records: Sequence[dict[str, Any]], batch_boards: int = 64) -> dict[str, Any]:
    """Ranking metrics and log-loss of a ``distill.engine.NeuralScorer``, from one forward pass per batch."""
    scores, losses = [], []
    for start in range(0, len(records), batch_boards):
        chunk = records[start:start + batch_boards]
        boards_moves = [board_and_moves(record) for record in chunk]
        all_logits = scorer.logits([board for board, _ in boards_moves], [moves for _, moves in boards_moves])
        for record, (_, moves), logits in zip(chunk, boards_moves, all_logits):
            scores.append(scorer.predictor.move_scores(logits, moves))
            losses.append(scorer.predictor.losses(logits, record))
    return {**ranking_metrics(records, scores), "log_loss": float(np.mean(np.concatenate(losses)))}


def baseline_metrics(records: Sequence[dict[str, Any]], num_bins: int | None, seed: int) -> dict[str, dict[str, Any]]:
    """Both baselines' metrics, keyed by name."""
    uniform = policy_metrics(uniform_random_scorer(seed), records)
    uniform["log_loss"] = math.log(num_bins) if num_bins else None
    material = policy_metrics(material_scores, records)
    material["log_loss"] = None
    return {"uniform_random": uniform, "material": material}


__all__ = ["MoveScorer", "baseline_metrics", "board_and_moves", "expected_accuracy", "kendall_tau",
           "kendall_tau_argsort", "material_balance", "material_scores", "policy_metrics", "predictor_metrics", "ranking_metrics",
           "score_records", "uniform_random_scorer"]
