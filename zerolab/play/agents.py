"""Agents: anything that picks moves for a batch of positions; the interface every agent shares and the pool that
builds and closes them.

An agent may be a network with a search (:class:`zerolab.play.search_agents.SearchAgent`), a searchless predictor
(:class:`zerolab.play.lc0_agents.PolicyAgent`), or an external program over UCI or GTP
(:mod:`zerolab.play.engine_agents`).  The arena plays agents against each other with pgx as the referee, so every agent
speaks pgx action ids.  An agent is made from a spec string by :func:`zerolab.play.agent_specs.make_agent`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
import pgx


class Agent(abc.ABC):
    """The base of every agent: picks one move per position of a batch of pgx states.

    ``select_actions`` is the one method an agent must write.  The others have defaults that do nothing (or name the
    agent as the mover of every move), so the arena and a :class:`zerolab.play.arena.TeamAgent` call them on any agent:

    * ``new_game()`` — before each batch of new games (engines clear their hash, predictors their history);
    * ``set_start_positions(start_fens)`` — after ``new_game()`` when the games start from given positions (one text
      per game lane), for agents that cannot read a game's earlier moves off its pgx state
      (:class:`~zerolab.play.engine_agents.GTPEngineAgent` gives GNU Go the moves of a Go start position);
    * ``observe(states)`` — shown the batched positions of a ply in which the agent moves in no game (the arena calls
      it on the side not to move, a team on the members its rule skips), so an agent that follows its games ply by
      ply (:class:`~zerolab.play.engine_agents.EngineAgent`'s boards) stays in step however long it is skipped;
    * ``mover_names(batch_size)`` and ``move_annotations(batch_size)`` — read by the arena after each
      ``select_actions``: who chose each lane's move (default: the agent itself; a team names its member) and notes
      on it for the game record (default: none; a team's rule says who moved and why);
    * ``close()`` — release external processes.

    Attributes:
      name: a short name for tables, PGN headers and Elo books.
    """

    name: str

    @abc.abstractmethod
    def select_actions(self, states: pgx.State, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        """[B] pgx action ids, one legal action for each position of the batched ``states`` that ``active`` [B]
        marks (None: every position whose game is running).

        Other positions may get any action; the arena ignores them.  An agent may answer them anyway (a batched
        search does), but an external engine should not be asked about them.
        """

    def new_game(self) -> None:
        """Called before each batch of new games."""

    def set_start_positions(self, start_fens: Sequence[str] | None) -> None:
        """The games of the next batch start from these positions (one text per lane; None: the standard start)."""

    def observe(self, states: pgx.State) -> None:
        """Shown the batched positions of a ply in which this agent moves in no game."""

    def mover_names(self, batch_size: int) -> list[str]:
        """[B] who chose each move of the last ``select_actions`` call (read by the arena for the game record)."""
        return [self.name] * batch_size

    def move_annotations(self, batch_size: int) -> list[dict[str, Any]]:
        """[B] notes (JSON values) on each move of the last ``select_actions`` call, for the game record."""
        return [{} for _ in range(batch_size)]

    def close(self) -> None:
        """Releases what the agent holds (external processes)."""


def lanes_to_answer(states: pgx.State, active: np.ndarray | None) -> np.ndarray:
    """[B] bool: the lanes an agent answers — ``active`` when given, else the positions whose game is running."""
    return ~np.asarray(states.terminated) if active is None else np.asarray(active, bool)


#: Builds one agent (called once, when it first plays).
AgentLoader = Callable[[], Agent]


class AgentPool:
    """Named agents built on first use, kept, and closed together (a context manager).

    ``pool[name]`` builds the agent of ``loaders[name]`` the first time and checks that it carries that name (the
    name its results are booked under); ``release(name)`` closes one built agent (built again if asked for later);
    ``close()`` closes every agent built (engines' processes).
    """

    def __init__(self, loaders: Mapping[str, AgentLoader]):
        self.loaders = dict(loaders)
        self.agents: dict[str, Agent] = {}

    def __getitem__(self, name: str) -> Agent:
        if name not in self.agents:
            if name not in self.loaders:
                raise KeyError(f"no agent named {name!r}; the agents are {sorted(self.loaders)}")
            agent = self.loaders[name]()
            if agent.name != name:
                agent.close()
                raise ValueError(f"the loader of {name!r} built an agent named {agent.name!r}")
            self.agents[name] = agent
        return self.agents[name]

    def release(self, name: str) -> None:
        """Closes ``name``'s agent if it was built (nothing otherwise)."""
        agent = self.agents.pop(name, None)
        if agent is not None:
            agent.close()

    def close(self) -> None:
        for agent in self.agents.values():
            agent.close()
        self.agents.clear()

    def __enter__(self) -> AgentPool:
        return self

    def __exit__(self, *exception) -> None:
        self.close()
