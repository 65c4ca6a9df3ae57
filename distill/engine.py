"""Searchless engines: a trained predictor turned into a policy (the paper's section 2.3), with its workarounds.

:class:`NeuralScorer` runs the network on the host's boards: it gathers the inputs of many boards into one
batch, pads it to a power of two (so a handful of shapes are ever compiled) and splits the logits back per board.
:class:`SearchlessEngine` picks moves from the scores:

- AV and SV choose the move of highest win probability, BC the most probable move;
- **repetition workaround**: a move after which a draw by threefold repetition can be claimed, or fivefold
  repetition holds, scores 0.5 (a draw) for the value predictors — without it a winning engine shuffles;
- **decisiveness workaround** (paper section 5): when the five best moves all score above 0.99 the network cannot
  tell which wins fastest, so Stockfish (``decisive_engine``) chooses among those five by searching the position
  after each and taking the one worst for the opponent;
- **opening temperature**: during the first ``temperature_full_moves`` full moves of a game a move is sampled from
  ``softmax(score / temperature)`` (win probabilities for AV and SV, log-probabilities for BC) so that games
  between deterministic engines differ; afterwards, and with ``temperature=0``, the best move is played.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import chess
import chess.engine
import jax
import numpy as np

from distill.model import TransformerConfig, init_params, jitted_apply
from distill.predictors import Predictor

DECISIVE_THRESHOLD = 0.99
DECISIVE_CANDIDATES = 5
SMALLEST_BUCKET = 64


def make_logits_fn(model_config: TransformerConfig, max_batch: int = 1024) -> Callable[[Any, np.ndarray], np.ndarray]:
    """``(params, tokens [N, T]) -> logits [N, O]`` on the host, in jitted batches padded to powers of two."""
    forward = jitted_apply(model_config)

    def logits(params: Any, tokens: np.ndarray) -> np.ndarray:
        outputs = []
        for start in range(0, len(tokens), max_batch):
            chunk = tokens[start:start + max_batch]
            size = min(max(SMALLEST_BUCKET, 1 << (len(chunk) - 1).bit_length()), max_batch)
            padded = np.zeros((size, tokens.shape[1]), dtype=np.int32)
            padded[:len(chunk)] = chunk
            outputs.append(np.asarray(forward(params, padded))[:len(chunk)])
        return np.concatenate(outputs) if outputs else np.zeros((0, model_config.output_size), np.float32)

    return logits


class NeuralScorer:
    """A predictor's network as a move scorer ``(boards, moves) -> [k] scores per board`` (see ``evaluate``)."""

    def __init__(self, predictor: Predictor, model_config: TransformerConfig, params: Any, max_batch: int = 1024):
        self.predictor = predictor
        self.model_config = model_config
        self.params = params
        self._logits = make_logits_fn(model_config, max_batch)

    @classmethod
    def random_init(cls, predictor: Predictor, model_size: str, seed: int = 0) -> NeuralScorer:
        """An untrained network (for smoke tests of engines and the UCI front end)."""
        model_config = predictor.model_config(model_size)
        return cls(predictor, model_config, init_params(model_config, jax.random.key(seed)))

    def logits(self, boards: Sequence[chess.Board], moves: Sequence[Sequence[chess.Move]]) -> list[np.ndarray]:
        """[n_i, O] logits of each board's :meth:`Predictor.inputs`, from one batched forward pass."""
        inputs = [self.predictor.inputs(board, board_moves) for board, board_moves in zip(boards, moves)]
        if not inputs:
            return []
        flat = self._logits(self.params, np.concatenate(inputs))
        return np.split(flat, np.cumsum([len(rows) for rows in inputs])[:-1])

    def __call__(self, boards: Sequence[chess.Board], moves: Sequence[Sequence[chess.Move]]) -> list[np.ndarray]:
        return [self.predictor.move_scores(logits, board_moves)
                for logits, board_moves in zip(self.logits(boards, moves), moves)]


@dataclasses.dataclass
class EngineOptions:
    """How a :class:`SearchlessEngine` plays (see the module docstring)."""

    repetition_workaround: bool = True
    decisive_engine: str | None = None
    decisive_limit_nodes: int = 10_000
    temperature: float = 0.0
    temperature_full_moves: int = 5


class SearchlessEngine:
    """Plays the best-scored legal move of a :class:`NeuralScorer`, with the workarounds of the module docstring.

    Boards carry their move stack, which the repetition workaround reads; a board without one is a game that
    starts there.  ``decisive_engine`` is an engine spec (``stockfish:nodes=10000``) opened on first use; call
    :meth:`close` (or use ``with``) to stop it.
    """

    def __init__(self, scorer: NeuralScorer, options: EngineOptions | None = None, name: str | None = None):
        self.scorer = scorer
        self.options = options or EngineOptions()
        self.name = name or f"searchless-{scorer.predictor.name}"
        self._decisive = None

    def scores(self, boards: Sequence[chess.Board]) -> list[tuple[list[chess.Move], np.ndarray]]:
        """Each board's legal moves and their scores, after the repetition workaround."""
        moves = [list(board.legal_moves) for board in boards]
        results = []
        for board, board_moves, scores in zip(boards, moves, self.scorer(boards, moves)):
            if self.options.repetition_workaround and self.scorer.predictor.scores_are_win_probabilities:
                scores = np.where(allows_repetition_draw(board, board_moves), 0.5, scores)
            results.append((board_moves, scores))
        return results

    def decide(self, boards: Sequence[chess.Board],
               rng: np.random.Generator | None = None) -> list[tuple[chess.Move, float]]:
        """``(move, its score)`` for each board (each board must have a legal move)."""
        for board in boards:
            if not any(board.legal_moves):
                raise ValueError(f"no legal move in {board.fen()}: the game is over")
        decisions = []
        for board, (moves, scores) in zip(boards, self.scores(boards)):
            index = self._pick(board, moves, scores, rng)
            decisions.append((moves[index], float(scores[index])))
        return decisions

    def choose_moves(self, boards: Sequence[chess.Board], rng: np.random.Generator | None = None) -> list[chess.Move]:
        """One move per board (each board must have a legal move)."""
        return [move for move, _ in self.decide(boards, rng)]

    def choose_move(self, board: chess.Board, rng: np.random.Generator | None = None) -> chess.Move:
        return self.choose_moves([board], rng)[0]

    def _pick(self, board: chess.Board, moves: list[chess.Move], scores: np.ndarray,
              rng: np.random.Generator | None) -> int:
        options = self.options
        if rng is not None and options.temperature > 0 and board.fullmove_number <= options.temperature_full_moves:
            logits = scores / options.temperature
            probabilities = np.exp(logits - logits.max())
            return int(rng.choice(len(moves), p=probabilities / probabilities.sum()))
        order = np.argsort(-scores, kind="stable")
        if (options.decisive_engine and self.scorer.predictor.scores_are_win_probabilities
                and len(moves) >= DECISIVE_CANDIDATES and scores[order[DECISIVE_CANDIDATES - 1]] > DECISIVE_THRESHOLD):
            return int(self._decide(order[:DECISIVE_CANDIDATES], moves, board))
        return int(order[0])

    def _decide(self, candidates: np.ndarray, moves: list[chess.Move], board: chess.Board) -> int:
        """Stockfish's pick among winning candidates: the one after which the opponent's score is lowest."""
        for index in candidates:
            board.push(moves[index])
            mate = board.is_checkmate()
            board.pop()
            if mate:
                return index
        if self._decisive is None:
            from zerolab import UCIEngine

            self._decisive = UCIEngine(self.options.decisive_engine).open()
        limit = chess.engine.Limit(nodes=self.options.decisive_limit_nodes)
        opponent_scores = {}
        for index in candidates:  # Stockfish is sent the game's moves, so it sees repetitions
            board.push(moves[index])
            try:
                opponent_scores[index] = self._decisive.analyse(board, limit)["score"].relative
            finally:
                board.pop()
        return min(candidates, key=lambda index: opponent_scores[index])

    def new_game(self) -> None:
        if self._decisive is not None:
            self._decisive.new_game()

    def close(self) -> None:
        if self._decisive is not None:
            self._decisive.close()
            self._decisive = None

    def __enter__(self) -> SearchlessEngine:
        return self

    def __exit__(self, *exception_info) -> None:
        self.close()


def allows_repetition_draw(board: chess.Board, moves: Sequence[chess.Move]) -> np.ndarray:
    """[k] bool: after the move a threefold repetition can be claimed or fivefold repetition holds."""
    if not board.move_stack:  # no history: no position can have occurred before
        return np.zeros(len(moves), dtype=bool)
    flags = []
    for move in moves:
        board.push(move)
        flags.append(board.is_fivefold_repetition() or board.can_claim_threefold_repetition())
        board.pop()
    return np.asarray(flags, dtype=bool)


__all__ = ["EngineOptions", "NeuralScorer", "SearchlessEngine", "allows_repetition_draw", "make_logits_fn"]
