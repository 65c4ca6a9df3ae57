"""The seniors, juniors and brains that play in the frameworks: core agents (:class:`zerolab.Agent`) on batches
of pgx states (the referee's, lc0 observation), answering the lanes where ``active`` [B] is true.

Players that ask an engine (:class:`BoardAgent`) keep each lane's python-chess board with its move stack (engines
see the game's moves), continued by the core's :class:`zerolab.GameBoards` from every position they are shown:
asked to move or observing (a team shows its members every ply), so each board is continued one ply at a time.

* :class:`NetworkPlayer` — a zerolab agent on the states: the junior (maia's policy, :class:`zerolab.PolicyAgent`
  argmax or sampled) or the tree / attuned senior (:class:`zerolab.SearchAgent`, the network with zerolab's
  search); one jitted call per ply on the active lanes.
* :class:`EnginePlayer` — Stockfish (the alter senior S) on each active lane's board.
* Brains (HB, the :class:`Brain` protocol) name piece types: :class:`MoveBrain` (the type of any player's move).

The expectors (STT's and HB's) are :mod:`skill_compat.expectors`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, Protocol

import chess
import jax
import jax.numpy as jnp
import numpy as np

from skill_compat.frameworks import action_piece_types
from skill_compat.oracle import Oracle
from zerolab import Agent, GameBoards, lanes_to_answer

#: ``(states [K]) -> [K]`` actions of a junior model (maia's argmax); mocked in tests.
JuniorModel = Callable[[Any], np.ndarray]


def lane_state(states: Any, index: int) -> Any:
    """Lane ``index`` of batched ``states``."""
    return jax.tree.map(lambda leaf: leaf[index], states)


class BoardAgent(Agent):
    """An agent that reads each game's python-chess board (its move stack, for an engine): a
    :class:`zerolab.GameBoards` continued from every position the agent is shown, asked or observing."""

    def __init__(self, game: Any):
        self.game = game
        self._boards = GameBoards(game)

    def boards(self, states: Any, active: np.ndarray | None) -> tuple[Any, dict[int, chess.Board]]:
        """(the host states, ``{lane: board}`` of the ``active`` lanes); every running lane's board is continued."""
        host_states = jax.device_get(states)
        answer = lanes_to_answer(host_states, active)
        boards = {}
        for lane in np.flatnonzero(~np.asarray(host_states.terminated)):
            board = self._boards.board(int(lane), lane_state(host_states, lane))
            if answer[lane]:
                boards[int(lane)] = board
        return host_states, boards

    def observe(self, states: Any) -> None:
        self._boards.follow(states)

    def new_game(self) -> None:
        self._boards.reset()


@dataclasses.dataclass(frozen=True)
class BrainChoice:
    """A brain's answer: ``piece_type`` [B] (1 pawn … 6 king) and its own move ``move`` [B] (−1 when it has none)."""

    piece_type: np.ndarray
    move: np.ndarray


class Brain(Protocol):
    """A hand-and-brain brain: an agent (a team member, told of new games and shown the positions) that names a
    piece type in each active lane."""

    name: str

    def name_piece_types(self, states: Any, key: jax.Array, active: np.ndarray) -> BrainChoice: ...

    def new_game(self) -> None: ...

    def observe(self, states: Any) -> None: ...


@functools.lru_cache(maxsize=8)
def jitted_piece_types(game) -> Callable:
    return jax.jit(functools.partial(action_piece_types, game))


@jax.jit
def _gather_lanes(states: Any, indices: jax.Array) -> Any:
    """The lanes ``indices`` of batched ``states``, one compiled gather for the whole state."""
    return jax.tree.map(lambda leaf: leaf[indices], states)


class NetworkPlayer(Agent):
    """A zerolab agent of one batched call (a search, a policy) asked about the active lanes only.

    The call sees only the active lanes, gathered into a sub-batch of ⌈B/2⌉ positions when they fit (in lock-step
    framework games the team to move has at most half the lanes: each pairing is played with both colours), else
    the whole batch; so a search runs on half the positions and compiles for at most two batch sizes.
    """

    def __init__(self, agent: Any, name: str | None = None):
        self.agent = agent
        self.name = name or agent.name

    def select_actions(self, states: Any, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        active = lanes_to_answer(states, active)
        batch = len(active)
        lanes = np.flatnonzero(active)
        actions = np.zeros(batch, np.int32)
        if not len(lanes):
            return actions
        size = (batch + 1) // 2 if len(lanes) <= (batch + 1) // 2 else batch
        if size == batch:
            return np.asarray(self.agent.select_actions(states, key), np.int32)
        indices = np.concatenate([lanes, np.full(size - len(lanes), lanes[0])])
        gathered = _gather_lanes(states, jnp.asarray(indices))
        actions[lanes] = np.asarray(self.agent.select_actions(gathered, key), np.int32)[: len(lanes)]
        return actions

    def new_game(self) -> None:
        self.agent.new_game()

    def close(self) -> None:
        self.agent.close()


class EnginePlayer(BoardAgent):
    """An engine oracle's best move on each active lane's board (the alter senior S)."""

    def __init__(self, oracle: Oracle, game: Any, name: str = "stockfish"):
        super().__init__(game)
        self.oracle, self.name = oracle, name

    def select_actions(self, states: Any, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        del key
        host_states, boards = self.boards(states, active)
        actions = np.zeros(host_states.terminated.shape[0], np.int32)
        for lane, board in boards.items():
            actions[lane] = self.game.uci_to_action(self.oracle.best_move(board), lane_state(host_states, lane))
        return actions

    def new_game(self) -> None:
        super().new_game()
        self.oracle.new_game()


class MoveBrain(Agent):
    """A brain that names the piece type of a player's move (S, tree, attuned, the junior as brain); as an agent it
    plays that move."""

    def __init__(self, player: Agent, game: Any, name: str | None = None):
        self.player, self.game = player, game
        self.name = name or player.name
        self._types = jitted_piece_types(game)

    def select_actions(self, states: Any, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        return self.player.select_actions(states, key, active)

    def name_piece_types(self, states: Any, key: jax.Array, active: np.ndarray) -> BrainChoice:
        moves = np.asarray(self.player.select_actions(states, key, active), np.int32)
        types = np.asarray(self._types(states))
        return BrainChoice(piece_type=types[np.arange(len(moves)), moves], move=moves)

    def new_game(self) -> None:
        self.player.new_game()

    def observe(self, states: Any) -> None:
        self.player.observe(states)

    def close(self) -> None:
        self.player.close()


__all__ = ["BoardAgent", "BrainChoice", "Brain", "EnginePlayer", "MoveBrain", "NetworkPlayer", "jitted_piece_types",
           "lane_state"]
