"""Win probabilities and moves from Stockfish: the alter senior S, its MultiPV candidates, and the evaluator E.

Every win probability is from the view of the side to move in the board given: Stockfish's W/D/L (``UCI_ShowWDL``)
→ (W + D/2)/1000; a mate score gives 1 or 0; a position that is over by the rules gives its result (checkmate 0 for
the side to move, any draw ½; python-chess with draws claimable, as pgx ends threefold repetitions and 50-move games).
Engines see the game's move list (the board's move stack), never a bare FEN.

:meth:`StockfishOracle.evaluate` gives one position's :class:`Evaluation`: that W/D/L probability, the paper's
conversion of centipawns :func:`cptowl` (lc0's legacy cp → Q mapping, as the paper's reference code converts its
engine's scores; mate 1 for the side that mates, 0 for the side mated) and the centipawns themselves (mate in n:
±(100,000 − n), python-chess's ``mate_score``), which break ties between values.  Stockfish's W/D/L saturates (a
knight up already reads 1000/0/0), cptowl does not.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Protocol

import chess
import chess.engine

from zerolab import UCIEngine


#: cptowl's constants: lc0's legacy Q ↔ centipawn mapping cp = 290.680623072 · tan(1.548090806 · Q), win = (1 + Q)/2,
#: so win = ½ + atan(cp / 290.680623072) / (2 · 1.548090806) (the paper's reference code: the same two numbers).
CPTOWL_SCALE = 290.680623072
CPTOWL_DIVISOR = 3.096181612
#: A mate in n counts ±(MATE_CENTIPAWNS − n) centipawns (python-chess's ``mate_score``), a checkmate on the board
#: ±MATE_CENTIPAWNS: sooner mates rank higher when values tie.
MATE_CENTIPAWNS = 100_000
#: How an expector turns an engine's line into a win probability: ``wdl`` (W + D/2)/1000, ``cptowl`` the paper's.
EVALUATIONS = ("wdl", "cptowl")


def cptowl(centipawns: float) -> float:
    """The paper's win probability of a centipawn score: ½ + atan(cp / 290.680623072) / 3.096181612 (increasing,
    ½ at 0, cptowl(−cp) = 1 − cptowl(cp); below 1 for cp < 12,800)."""
    return 0.5 + math.atan(centipawns / CPTOWL_SCALE) / CPTOWL_DIVISOR


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """One position from the side to move's view.

    Attributes:
      wdl: (W + D/2)/1000 from the engine's W/D/L (NaN if it sent none); mate 1/0.
      cptowl: :func:`cptowl` of the centipawns, clipped to [0, 1]; mate 1 for the side that mates, 0 for the mated.
      centipawns: the score (mate in n: ±(100,000 − n); a game over by the rules: ±100,000 or 0 for a draw).
    """

    wdl: float
    cptowl: float
    centipawns: float

    def win(self, evaluation: str) -> float:
        """The win probability by ``evaluation`` (``wdl`` or ``cptowl``)."""
        if evaluation not in EVALUATIONS:
            raise ValueError(f"evaluation must be one of {EVALUATIONS}, got {evaluation!r}")
        return self.wdl if evaluation == "wdl" else self.cptowl

    def for_opponent(self) -> Evaluation:
        """The same position from the other side's view."""
        return Evaluation(1.0 - self.wdl, 1.0 - self.cptowl, -self.centipawns)


def result_evaluation(result: float) -> Evaluation:
    """A game over by the rules, from the view of the player whose score is ``result`` (1, ½ or 0)."""
    centipawns = 0.0 if result == 0.5 else math.copysign(MATE_CENTIPAWNS, result - 0.5)
    return Evaluation(float(result), float(result), centipawns)


class Oracle(Protocol):
    """What the expectors and the evaluator need from an engine (a mock in tests)."""

    def best_move(self, board: chess.Board) -> str: ...

    def top_moves(self, board: chess.Board, count: int) -> list[tuple[str, float]]: ...

    def win_probability(self, board: chess.Board) -> float: ...

    def evaluate(self, board: chess.Board) -> Evaluation: ...

    def new_game(self) -> None: ...


def rules_result(board: chess.Board) -> float | None:
    """The side to move's score when the game is over by the rules (draws claimable), else None."""
    outcome = board.outcome(claim_draw=True)
    if outcome is None:
        return None
    if outcome.winner is None:
        return 0.5
    return 1.0 if outcome.winner == board.turn else 0.0


def score_win_probability(info: chess.engine.InfoDict) -> float:
    """Side-to-move win probability of one analysis line: mate → 1/0, else (W + D/2)/1000 from its W/D/L."""
    score = info["score"].relative
    if score.is_mate():
        return 1.0 if score.mate() > 0 else 0.0
    wdl = info.get("wdl")
    if wdl is None:
        raise ValueError("the engine sent no W/D/L: it needs option.UCI_ShowWDL=true")
    return float(wdl.relative.expectation())


def score_evaluation(info: chess.engine.InfoDict) -> Evaluation:
    """:class:`Evaluation` of one analysis line (side to move's view): W/D/L, cptowl and centipawns of its score."""
    score = info["score"].relative
    centipawns = float(score.score(mate_score=MATE_CENTIPAWNS))
    wdl = info.get("wdl")
    if score.is_mate():
        win = 1.0 if score.mate() > 0 else 0.0
        return Evaluation(win, win, centipawns)
    return Evaluation(math.nan if wdl is None else float(wdl.relative.expectation()),
                      min(max(cptowl(centipawns), 0.0), 1.0), centipawns)


def engine_spec(engine: str, nodes: int, threads: int = 1, hash_megabytes: int = 16) -> str:
    """A Stockfish spec with a fixed node budget, ``threads`` threads and W/D/L output."""
    if nodes < 1:
        raise ValueError(f"engine nodes must be positive, got {nodes}")
    return f"{engine}:nodes={nodes},threads={threads},hash={hash_megabytes},option.UCI_ShowWDL=true"


class StockfishOracle:
    """One Stockfish process answering at a fixed node budget; :meth:`with_nodes` shares the process at another."""

    def __init__(self, engine: str = "stockfish", nodes: int = 2000, threads: int = 1, *,
                 process: UCIEngine | None = None):
        self.nodes = int(nodes)
        self.engine = process or UCIEngine(engine_spec(engine, self.nodes, threads))
        self.limit = chess.engine.Limit(nodes=self.nodes)
        self.calls = 0

    def with_nodes(self, nodes: int) -> StockfishOracle:
        return StockfishOracle(nodes=nodes, process=self.engine)

    def best_move(self, board: chess.Board) -> str:
        self.calls += 1
        return self.engine.play(board, self.limit)

    def top_moves(self, board: chess.Board, count: int) -> list[tuple[str, float]]:
        """Up to ``count`` moves (MultiPV), best first, with the mover's win probability of each."""
        self.calls += 1
        lines = self.engine.analyse(board, self.limit, multipv=count)
        return [(line["pv"][0].uci(), score_win_probability(line)) for line in lines if line.get("pv")]

    def win_probability(self, board: chess.Board) -> float:
        result = rules_result(board)
        if result is not None:
            return result
        self.calls += 1
        return score_win_probability(self.engine.analyse(board, self.limit))

    def evaluate(self, board: chess.Board) -> Evaluation:
        """The position's :class:`Evaluation` (side to move's view); a position over by the rules its result."""
        result = rules_result(board)
        if result is not None:
            return result_evaluation(result)
        self.calls += 1
        return score_evaluation(self.engine.analyse(board, self.limit))

    def new_game(self) -> None:
        self.engine.new_game()

    def close(self) -> None:
        self.engine.close()


def board_after(board: chess.Board, moves: Sequence[str]) -> chess.Board:
    """A copy of ``board`` (with its move stack) after the UCI ``moves``."""
    board = board.copy()
    for move in moves:
        board.push_uci(move)
    return board


__all__ = ["CPTOWL_DIVISOR", "CPTOWL_SCALE", "EVALUATIONS", "Evaluation", "MATE_CENTIPAWNS", "Oracle",
           "StockfishOracle", "board_after", "cptowl", "engine_spec", "result_evaluation", "rules_result",
           "score_evaluation", "score_win_probability"]
