"""The three predictors of the paper (section 2.2) and the policies they give (section 2.3).

Every predictor feeds the transformer 78 tokens: the 77 tokens of a position followed by one query token, and
reads its answer at that last position.

=====================  ============================  =============================  ================================
predictor              query token                   output (loss: cross-entropy)   policy: score of legal move a
=====================  ============================  =============================  ================================
``action_value`` (AV)  the action a                  K bins of Q(s, a)              E[Q(s, a)]
``state_value`` (SV)   the value query               K bins of V(s)                 1 − E[V(s')], s' the position a
                                                                                    leads to (the opponent's value)
``behavioral_cloning`` the policy query              1968 logits of the best move   log π(a | s) over legal moves
=====================  ============================  =============================  ================================

Token ids: 0–30 the position alphabet; the AV predictor's query tokens are ``31 + action``; SV and BC use the
single query token 31.  Win probabilities are always from the point of view of the side to move of the position
they belong to.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import chess
import jax
import jax.numpy as jnp
import numpy as np

from distill import bins, tokenizer
from distill.model import MODEL_SIZES, TransformerConfig, parameter_count
from zerolab import check_choice

ACTION_VALUE = "action_value"
STATE_VALUE = "state_value"
BEHAVIORAL_CLONING = "behavioral_cloning"
PREDICTOR_NAMES = (ACTION_VALUE, STATE_VALUE, BEHAVIORAL_CLONING)
SEQUENCE_LENGTH = tokenizer.SEQUENCE_LENGTH + 1
QUERY_TOKEN = tokenizer.NUM_CHARACTERS


@dataclasses.dataclass(frozen=True)
class Predictor:
    """One of :data:`PREDICTOR_NAMES` with its number of bins K (unused by behavioural cloning).

    A position record (``distill.data.records``) is a dict with ``fen``, ``moves`` [k] (UCI), ``action_values`` [k]
    and ``value``; an action-value record has ``fen``, ``move`` and ``action_value``.
    """

    name: str
    num_bins: int = 128

    def __post_init__(self):
        check_choice("train.predictor", self.name, PREDICTOR_NAMES)
        if self.name != BEHAVIORAL_CLONING and self.num_bins < 2:
            raise ValueError(f"num_bins must be at least 2, got {self.num_bins}")

    @property
    def scores_are_win_probabilities(self) -> bool:
        return self.name != BEHAVIORAL_CLONING

    @property
    def record_kind(self) -> str:
        """Which records train it: ``action_values`` (one per state-action pair) or ``positions``."""
        return "action_values" if self.name == ACTION_VALUE else "positions"

    @property
    def vocabulary_size(self) -> int:
        return QUERY_TOKEN + (tokenizer.NUM_ACTIONS if self.name == ACTION_VALUE else 1)

    @property
    def output_size(self) -> int:
        return tokenizer.NUM_ACTIONS if self.name == BEHAVIORAL_CLONING else self.num_bins

    def model_config(self, size: str, dtype: str = "float32", action_embedding: str = "table",
                     mark_action_squares: bool = False, normalization: str = "post") -> TransformerConfig:
        return TransformerConfig.from_size(size, vocabulary_size=self.vocabulary_size,
                                           sequence_length=SEQUENCE_LENGTH, output_size=self.output_size, dtype=dtype,
                                           action_embedding=action_embedding, mark_action_squares=mark_action_squares,
                                           normalization=normalization)

    # --- training examples -----------------------------------------------------------------------------------
    def training_example(self, record: dict[str, Any]) -> tuple[np.ndarray, int]:
        """([78] token ids, target class) of one record of kind :attr:`record_kind`."""
        state = tokenizer.tokenize(record["fen"])
        if self.name == ACTION_VALUE:
            query = QUERY_TOKEN + tokenizer.move_to_action(record["move"])
            return _append(state, query), int(bins.win_probability_to_bin(record["action_value"], self.num_bins))
        if self.name == STATE_VALUE:
            return _append(state, QUERY_TOKEN), int(bins.win_probability_to_bin(record["value"], self.num_bins))
        return _append(state, QUERY_TOKEN), tokenizer.move_to_action(best_move(record))

    # --- policies and evaluation -------------------------------------------------------------------------------
    def inputs(self, board: chess.Board, moves: Sequence[chess.Move]) -> np.ndarray:
        """[n, 78] token ids whose logits :meth:`move_scores` and :meth:`losses` read, for the legal ``moves``.

        AV: one row per move.  SV: the position itself, then one row per move's resulting position.  BC: the
        position itself.
        """
        state = tokenizer.tokenize(board.fen())
        if self.name == ACTION_VALUE:
            queries = QUERY_TOKEN + np.array([tokenizer.move_to_action(m) for m in moves], dtype=np.int32)
            return np.concatenate([np.repeat(state[None].astype(np.int32), len(moves), 0), queries[:, None]], 1)
        rows = [state]
        if self.name == STATE_VALUE:
            for move in moves:
                board.push(move)
                rows.append(tokenizer.tokenize(board.fen()))
                board.pop()
        states = np.stack(rows).astype(np.int32)
        return np.concatenate([states, np.full((len(rows), 1), QUERY_TOKEN, dtype=np.int32)], 1)

    def move_scores(self, logits: np.ndarray, moves: Sequence[chess.Move]) -> np.ndarray:
        """[k] score of each move from the [n, O] logits of :meth:`inputs` (higher is better).

        AV and SV: the win probability of the side to move after playing it.  BC: its log-probability among the
        legal moves.
        """
        if self.name == ACTION_VALUE:
            return bins.expected_win_probability_numpy(logits)
        if self.name == STATE_VALUE:
            return 1.0 - bins.expected_win_probability_numpy(logits[1:])
        actions = np.array([tokenizer.move_to_action(m) for m in moves], dtype=np.int64)
        legal_logits = np.asarray(logits[0], dtype=np.float64)[actions]
        return legal_logits - _logsumexp(legal_logits)

    def losses(self, logits: np.ndarray, record: dict[str, Any]) -> np.ndarray:
        """[m] cross-entropy of each supervised output in the logits of :meth:`inputs` for a position record."""
        if self.name == ACTION_VALUE:
            targets = bins.win_probability_to_bin(np.asarray(record["action_values"]), self.num_bins)
            return cross_entropy_numpy(logits, targets)
        if self.name == STATE_VALUE:
            target = bins.win_probability_to_bin(np.asarray([record["value"]]), self.num_bins)
            return cross_entropy_numpy(logits[:1], target)
        return cross_entropy_numpy(logits[:1], np.array([tokenizer.move_to_action(best_move(record))]))


def best_move(record: dict[str, Any]) -> str:
    """Stockfish's best move of a position record (the first of equal action values)."""
    return record["moves"][int(np.argmax(record["action_values"]))]


def cross_entropy(logits: jax.Array, targets: jax.Array) -> jax.Array:
    """[B] −log softmax(logits)[target] for logits [B, O] and int targets [B]."""
    log_probabilities = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -jnp.take_along_axis(log_probabilities, targets[:, None].astype(jnp.int32), axis=-1)[:, 0]


def cross_entropy_numpy(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    logits = np.asarray(logits, dtype=np.float64)
    log_probabilities = logits - _logsumexp(logits, axis=-1)[..., None]
    return -np.take_along_axis(log_probabilities, np.asarray(targets)[:, None].astype(np.int64), axis=-1)[:, 0]


def _logsumexp(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    peak = np.max(values, axis=axis, keepdims=True)
    total = np.log(np.sum(np.exp(values - peak), axis=axis, keepdims=True)) + peak
    return np.squeeze(total, axis=axis) if axis is not None else total.reshape(())


def _append(state: np.ndarray, query: int) -> np.ndarray:
    return np.concatenate([state.astype(np.int32), np.array([query], dtype=np.int32)])


__all__ = ["ACTION_VALUE", "BEHAVIORAL_CLONING", "PREDICTOR_NAMES", "Predictor", "QUERY_TOKEN", "SEQUENCE_LENGTH",
           "STATE_VALUE", "best_move", "cross_entropy"]


def main() -> None:
    """``python -m distill.predictors``: the parameter count of every model size for each predictor (K = 128)."""
    print(f"{'size':>10} {'layers':>6} {'width':>6} {'heads':>5} " + " ".join(f"{n:>20}" for n in PREDICTOR_NAMES))
    for size, shape in MODEL_SIZES.items():
        counts = [parameter_count(Predictor(name, 128).model_config(size)) for name in PREDICTOR_NAMES]
        print(f"{size:>10} {shape['num_layers']:>6} {shape['embedding_dim']:>6} {shape['num_heads']:>5} "
              + " ".join(f"{count:>20,}" for count in counts))


if __name__ == "__main__":
    main()
