"""A :class:`distill.engine.SearchlessEngine` as a ``zerolab.play.agents.Agent``, so the arena can play it.

The arena hands over batched pgx states.  The core's board bridge (``zerolab.api.GameBoards``) turns each into a
python-chess board that carries the game so far (the moves since the agent's last call are read from pgx's
history), so the repetition workaround sees the real history.  The chosen UCI move goes back to a pgx action with
``ChessGame.uci_to_action``.
"""

from __future__ import annotations

import jax
import numpy as np
import pgx

from distill.engine import SearchlessEngine
from zerolab.api import ChessGame, GameBoards


class SearchlessAgent:
    """Plays ``engine``'s moves on batches of pgx chess states (implements ``zerolab.play.agents.Agent``)."""

    def __init__(self, engine: SearchlessEngine, game: ChessGame | None = None, name: str | None = None):
        self.engine = engine
        self.game = game or ChessGame("chess")
        if self.game.board_size != 8:
            raise ValueError(f"searchless engines play 8x8 chess, not {self.game.name}")
        self.name = name or engine.name
        self._boards = GameBoards(self.game)

    def new_game(self) -> None:
        self._boards.reset()
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
        boards = [self._boards.board(i, unbatched[i]) for i in playing]
        rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel())
        for index, move in zip(playing, self.engine.choose_moves(boards, rng)):
            actions[index] = self.game.uci_to_action(move.uci(), unbatched[index])
        return actions


__all__ = ["SearchlessAgent"]
