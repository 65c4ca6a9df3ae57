"""Win probabilities and moves from Stockfish: the alter senior S, its MultiPV candidates, and the evaluator E.

Every win probability is from the view of the side to move in the board given: Stockfish's W/D/L (``UCI_ShowWDL``)
→ (W + D/2)/1000; a mate score gives 1 or 0; a position that is over by the rules gives its result (checkmate 0 for
the side to move, any draw ½; python-chess with draws claimable, as pgx ends threefold repetitions and 50-move games).
Engines see the game's move list (the board's move stack), never a bare FEN.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import chess
import chess.engine

from zerolab import UCIEngine


class Oracle(Protocol):
    """What the expectors and the evaluator need from an engine (a mock in tests)."""

    def best_move(self, board: chess.Board) -> str: ...

    def top_moves(self, board: chess.Board, count: int) -> list[tuple[str, float]]: ...

    def win_probability(self, board: chess.Board) -> float: ...

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


__all__ = ["Oracle", "StockfishOracle", "board_after", "engine_spec", "rules_result", "score_win_probability"]
