"""Agents: anything that picks moves for a batch of positions.

An agent may be a network with a search, a searchless predictor, or an external program over UCI/GTP.  The arena
plays agents against each other with pgx as the referee, so every agent speaks pgx action ids.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import jax
import numpy as np
import pgx


@runtime_checkable
class Agent(Protocol):
    """Picks one move per position.

    Attributes:
      name: a short name for tables, PGN headers and Elo books.
    """

    name: str

    def select_actions(self, states: pgx.State, key: jax.Array) -> np.ndarray:
        """[B] pgx action ids, one legal action per position of the batched ``states``.

        Positions whose game has ended (``states.terminated``) may get any action; the arena ignores them.
        """
        ...

    def new_game(self) -> None:
        """Called before each batch of new games (engines clear their hash, predictors their history)."""
        ...
