"""Any zerolab agent as a UCI engine: :class:`AgentMoveChooser` puts an agent (a search, a team, an external engine, a
searchless predictor) behind :class:`zerolab.frontends.uci.UCIServer` (:func:`agent_server`), without the search
engine's time rule: the agent decides its own effort.  The UCI twin of :func:`zerolab.frontends.gtp.agent_chooser`.
"""

from __future__ import annotations

from typing import Any

import chess
import numpy as np

from zerolab.frontends.search_positions import batched, restricted
from zerolab.frontends.uci import UCIServer
from zerolab.frontends.uci_protocol import MoveChoice, SearchBudget
from zerolab.frontends.uci_search import ENGINE_AUTHOR


class AgentMoveChooser:
    """Any zerolab agent (``select_actions`` over pgx states: a search, a team, an external engine, a searchless
    predictor) as a :data:`zerolab.frontends.uci.ChooseMove` callback for 8×8 chess, the UCI twin of
    :func:`zerolab.frontends.gtp.agent_chooser`.  The GUI's board becomes a pgx state with its history
    (:class:`zerolab.games.board.StateTracker`); ``searchmoves`` restrict the state's legal actions.  Each call gets a new
    key split from ``seed``."""

    def __init__(self, agent: Any, seed: int = 0):
        import jax

        from zerolab.games.board import StateTracker
        from zerolab.games import make_game

        self.agent = agent
        self.game = getattr(agent, "game", None) or make_game("chess")
        if getattr(self.game, "board_size", None) != 8:
            raise ValueError(f"a UCI engine plays 8x8 chess; agent {getattr(agent, 'name', agent)!r} plays "
                             f"{self.game.name}")
        self.positions = StateTracker(self.game)
        self.key = jax.random.key(seed)

    def __call__(self, board: chess.Board, budget: SearchBudget) -> MoveChoice:
        import jax

        state = self.positions.state(board)
        if budget.search_moves:
            state = restricted(self.game, state, budget.search_moves)
        self.key, key = jax.random.split(self.key)
        action = int(np.asarray(self.agent.select_actions(batched(state), key))[0])
        return MoveChoice(self.game.action_to_uci(action, state))

    def new_game(self) -> None:
        self.positions.reset()
        self.agent.new_game()


def agent_server(agent: Any, name: str | None = None, seed: int = 0) -> UCIServer:
    """A UCI server in front of any zerolab agent (see :class:`AgentMoveChooser`)."""
    chooser = AgentMoveChooser(agent, seed)
    return UCIServer(name or f"zerolab {agent.name}", ENGINE_AUTHOR, chooser, on_new_game=chooser.new_game)


__all__ = ["AgentMoveChooser", "agent_server"]
