"""A :class:`distill.engine.SearchlessEngine` as a ``zerolab.Agent``, so the arena can play it.

The arena hands over batched pgx states.  The core's board bridge (``zerolab.GameBoards``) turns each into a
python-chess board that carries the game so far (the moves since the agent's last call are read from pgx's
history), so the repetition workaround sees the real history; the boards of lanes it is not asked about (and of
plies it only observes, as a team member) are continued too.  The chosen UCI move goes back to a pgx action with
``ChessGame.uci_to_action``.
"""

from __future__ import annotations

import jax
import numpy as np
import pgx

from distill.engine import SearchlessEngine
from zerolab import Agent, ChessGame, GameBoards, lanes_to_answer


class SearchlessAgent(Agent):
    """Plays ``engine``'s moves on batches of pgx chess states."""

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

    def observe(self, states: pgx.State) -> None:
        self._boards.follow(states)

    def select_actions(self, states: pgx.State, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        """[B] pgx action ids of the ``active`` lanes; the others get action 0, which the arena ignores."""
        host_states = jax.device_get(states)
        answer = lanes_to_answer(host_states, active)
        actions = np.zeros(answer.shape[0], dtype=np.int32)
        running = np.flatnonzero(~np.asarray(host_states.terminated))
        unbatched = {int(i): jax.tree.map(lambda x: x[i], host_states) for i in running}
        boards = {i: self._boards.board(i, state) for i, state in unbatched.items()}  # every running game, in step
        playing = [i for i in unbatched if answer[i]]
        if not playing:
            return actions
        boards = [boards[i] for i in playing]
        rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel())
        for index, move in zip(playing, self.engine.choose_moves(boards, rng)):
            actions[index] = self.game.uci_to_action(move.uci(), unbatched[index])
        return actions


__all__ = ["SearchlessAgent"]
