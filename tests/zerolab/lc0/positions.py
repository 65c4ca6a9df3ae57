"""Positions reached by play for the lc0 tests: random games from the start and from FENs chosen to reach castling
both ways, en passant, every promotion (both colours) and repetitions; each position with its game's moves."""

from __future__ import annotations

import dataclasses
import functools

import chess
import jax
import numpy as np

FEN_ROOTS = (
    None,  # the standard start position
    "r3k2r/pppq1ppp/2npbn2/4p3/4P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 0 1",  # both sides may castle both ways
    "r3k2r/pppq1ppp/2npbn2/4p3/4P3/2NPBN2/PPPQ1PPP/R3K2R b KQkq - 3 9",
    "1n2k3/PPP5/8/8/8/8/5ppp/4K1N1 w - - 0 1",  # promotions for both colours, with captures
    "4k1n1/5PPP/8/8/8/8/ppp5/1N2K3 b - - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant that can be taken
    "rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq d3 0 2",
    "rnbqkbnr/pppp1ppp/8/4p3/8/8/PPPPPPPP/RNBQKBNR w KQkq e6 0 2",  # en-passant square no pawn can take
    "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1",
    "rnbqkb1r/pppp1ppp/5n2/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",  # no en passant
)
REPETITION_MOVES = ("g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8")


@dataclasses.dataclass(frozen=True)
class Position:
    root_fen: str | None
    moves: tuple[str, ...]

    def board(self) -> chess.Board:
        board = chess.Board(self.root_fen) if self.root_fen else chess.Board()
        for move in self.moves:
            board.push_uci(move)
        return board


def _choose(board: chess.Board, rng: np.random.Generator) -> chess.Move:
    moves = list(board.legal_moves)
    special = [m for m in moves if m.promotion or board.is_castling(m) or board.is_en_passant(m)]
    if special and rng.random() < 0.7:
        return special[rng.integers(len(special))]
    return moves[rng.integers(len(moves))]


@functools.cache
def game_positions(games_per_root: int = 2, max_plies: int = 24, seed: int = 0) -> tuple[Position, ...]:
    """Every position of ``games_per_root`` random games from each root (the first game from the start position
    begins with a knight shuffle that repeats positions)."""
    rng = np.random.default_rng(seed)
    positions = []
    for root in FEN_ROOTS:
        for game_index in range(games_per_root):
            board = chess.Board(root) if root else chess.Board()
            moves: list[str] = []
            positions.append(Position(root, ()))
            scripted = list(REPETITION_MOVES) if root is None and game_index == 0 else []
            for _ in range(max_plies):
                if board.is_game_over(claim_draw=False):
                    break
                move = chess.Move.from_uci(scripted.pop(0)) if scripted else _choose(board, rng)
                board.push(move)
                moves.append(move.uci())
                positions.append(Position(root, tuple(moves)))
    return tuple(positions)


def pgx_states(game, positions) -> list:
    """The pgx state of each position, reached by stepping ``game`` through its moves (history included)."""
    step = game.jitted_step
    states, cache = [], {}
    for position in positions:
        key = (position.root_fen, position.moves[:-1])
        if position.moves and key in cache:
            previous = cache[key]
            state = step(previous, game.uci_to_action(position.moves[-1], previous))
        else:
            state = game.from_fen(position.root_fen) if position.root_fen else game.init(jax.random.key(0))
            for move in position.moves:
                state = step(state, game.uci_to_action(move, state))
        cache[(position.root_fen, position.moves)] = state
        states.append(state)
    return states


def stack(states) -> object:
    return jax.tree.map(lambda *leaves: np.stack(leaves), *states)
