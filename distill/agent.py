"""A :class:`distill.engine.SearchlessEngine` as a ``zerolab.agents.Agent``, so the arena can play it.

The arena hands over batched pgx states.  Each is converted to FEN (``ChessGame.to_fen``) and to a python-chess
board that carries the game so far: the agent remembers the board after its own last move in each game of the
batch and finds the opponent's reply as the legal move that leads to the new position, so the repetition
workaround sees the real history.  The chosen UCI move goes back to a pgx action with ``ChessGame.uci_to_action``.
"""

from __future__ import annotations

import chess
import jax
import numpy as np
import pgx

from distill.data.pgn import board_key
from distill.engine import SearchlessEngine
from zerolab.api import ChessGame


class SearchlessAgent:
    """Plays ``engine``'s moves on batches of pgx chess states (implements ``zerolab.agents.Agent``)."""

    def __init__(self, engine: SearchlessEngine, game: ChessGame | None = None, name: str | None = None):
        self.engine = engine
        self.game = game or ChessGame("chess")
        if self.game.board_size != 8:
            raise ValueError(f"searchless engines play 8x8 chess, not {self.game.name}")
        self.name = name or engine.name
        self._boards: dict[int, chess.Board] = {}

    def new_game(self) -> None:
        self._boards.clear()
        self.engine.new_game()

    def select_actions(self, states: pgx.State, key: jax.Array) -> np.ndarray:
        """[B] pgx action ids; finished games get action 0, which the arena ignores."""
        host_states = jax.device_get(states)
        batch_size = int(np.asarray(host_states.terminated).shape[0])
        actions = np.zeros(batch_size, dtype=np.int32)
        playing = [i for i in range(batch_size) if not bool(host_states.terminated[i])]
        if not playing:
            return actions
        unbatched = {i: jax.tree.map(lambda x: x[i], host_states) for i in playing}
        boards = [self._board(i, self.game.to_fen(unbatched[i])) for i in playing]
        rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel())
        for index, board, move in zip(playing, boards, self.engine.choose_moves(boards, rng)):
            actions[index] = self.game.uci_to_action(move.uci(), unbatched[index])
            board.push(move)
            self._boards[index] = board
        return actions

    def _board(self, index: int, fen: str) -> chess.Board:
        """The game ``index`` continued to ``fen`` by the opponent's move, or a new board at ``fen``."""
        fen = self.game.validate_fen(fen)
        previous = self._boards.get(index)
        if previous is not None:
            for move in previous.legal_moves:
                previous.push(move)
                if board_key(previous.fen()) == board_key(fen):
                    return previous
                previous.pop()
        return chess.Board(fen)


__all__ = ["SearchlessAgent"]
