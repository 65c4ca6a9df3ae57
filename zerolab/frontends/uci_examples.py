"""Example agents behind the UCI server, without JAX: for tests and for checking a chess tool's set-up.

``python -m zerolab.frontends.uci_examples --example random|greedy [--seed N]`` runs :class:`RandomMover` (a uniformly
random legal move) or :class:`GreedyMaterialMover` (mates, else the most material) as a UCI engine on stdin/stdout.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence

import chess

from zerolab.frontends.uci import UCIServer, main_loop
from zerolab.frontends.uci_protocol import MoveChoice, SearchBudget


class RandomMover:
    """Plays a uniformly random legal move (seeded, so games are reproducible)."""

    def __init__(self, seed: int = 0):
        self._random = random.Random(seed)

    def __call__(self, board: chess.Board, budget: SearchBudget) -> MoveChoice:
        moves = sorted(board.legal_moves, key=lambda move: move.uci())
        return MoveChoice(self._random.choice(moves), nodes=len(moves), depth=1)


PIECE_VALUES = {chess.PAWN: 100, chess.KNIGHT: 300, chess.BISHOP: 300, chess.ROOK: 500, chess.QUEEN: 900, chess.KING: 0}


class GreedyMaterialMover:
    """Mates when it can, else takes the most material (promotions count), cheapest attacker first; ties at random."""

    def __init__(self, seed: int = 0):
        self._random = random.Random(seed)

    def move_value(self, board: chess.Board, move: chess.Move) -> int:
        """Material gained by ``move`` in centipawns (a mate counts 100000), not looking at replies."""
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return 100_000
        value = 0
        if board.is_en_passant(move):
            value += PIECE_VALUES[chess.PAWN]
        elif board.piece_type_at(move.to_square) is not None:
            victim, attacker = board.piece_type_at(move.to_square), board.piece_type_at(move.from_square)
            value += PIECE_VALUES[victim] - PIECE_VALUES[attacker] // 100  # the cheapest attacker breaks ties
        if move.promotion:
            value += PIECE_VALUES[move.promotion] - PIECE_VALUES[chess.PAWN]
        return value

    def __call__(self, board: chess.Board, budget: SearchBudget) -> MoveChoice:
        scored = [(self.move_value(board, move), move.uci()) for move in board.legal_moves]
        best = max(value for value, _ in scored)
        choice = self._random.choice(sorted(uci for value, uci in scored if value == best))
        return MoveChoice(choice, score_centipawns=min(best, 10_000), nodes=len(scored), depth=1)


EXAMPLE_AGENTS = {"random": RandomMover, "greedy": GreedyMaterialMover}


def example_server(agent: str = "random", seed: int = 0) -> UCIServer:
    """A server around one of :data:`EXAMPLE_AGENTS`."""
    if agent not in EXAMPLE_AGENTS:
        raise ValueError(f"unknown example agent {agent!r}; expected one of {', '.join(EXAMPLE_AGENTS)}")
    return UCIServer(f"zerolab-{agent}", "zerolab", EXAMPLE_AGENTS[agent](seed))


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m zerolab.frontends.uci_examples --example random|greedy [--seed N]``: run an example agent as a UCI engine."""
    parser = argparse.ArgumentParser(prog="python -m zerolab.frontends.uci_examples", description=main.__doc__)
    parser.add_argument("--example", choices=sorted(EXAMPLE_AGENTS), required=True, help="the example agent to run")
    parser.add_argument("--seed", type=int, default=0, help="seed of the agent's random choices")
    arguments = parser.parse_args(argv)
    main_loop(example_server(arguments.example, arguments.seed))


if __name__ == "__main__":
    main()


__all__ = ["EXAMPLE_AGENTS", "GreedyMaterialMover", "PIECE_VALUES", "RandomMover", "example_server", "main"]
