"""The game interface every part of zerolab shares: a pgx environment plus what the rest needs to know."""

from __future__ import annotations

import jax
import pgx


class InvalidPositionError(ValueError):
    """A position (FEN, board) that cannot be set up; the message names the input and what was expected."""


class Game:
    """A pgx environment with its sizes.

    Attributes:
      name: the game's name in configs (``chess``, ``gardner_chess``, ``go``).
      env: the pgx environment; ``env.init`` / ``env.step`` are pure and vmappable.
      num_actions: size of the action space A.
      observation_shape: shape of one observation, e.g. ``(5, 5, 115)``.
    """

    def __init__(self, name: str, env: pgx.Env):
        self.name = name
        self.env = env
        state = jax.eval_shape(env.init, jax.random.key(0))
        self.num_actions = int(env.num_actions)
        self.observation_shape = tuple(state.observation.shape)

    def init(self, key: jax.Array) -> pgx.State:
        return self.env.init(key)

    def step(self, state: pgx.State, action: jax.Array) -> pgx.State:
        return self.env.step(state, action)

    @property
    def identity(self) -> tuple:
        """What makes two games the same game (used for equality and hashing, e.g. to share compiled functions)."""
        return (type(self).__name__, self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Game) and self.identity == other.identity

    def __hash__(self) -> int:
        return hash(self.identity)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, actions={self.num_actions}, observation={self.observation_shape})"
