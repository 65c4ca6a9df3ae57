"""The game interface every part of zerolab shares: a pgx environment plus what the rest needs to know."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import pgx

from zerolab.games.fen import InvalidPositionError  # defined with the FEN rules, which import no pgx


def plies_played(states: pgx.State) -> jax.Array:
    """[B] int32 (or a scalar for one state): plies played since each game's start position, for any pgx game (pgx
    counts every ``step``); for callers that hold states but not their :class:`Game`."""
    return states._step_count


class ObservationPlanes(NamedTuple):
    """What a game's observation channels (its last axis) hold in every position, per channel: ``constant``, the same
    value at every position of the board (side to move, castling rights, move counters); ``binary``, only 0 and 1
    (pieces, repetitions, stones).  Frames store a constant channel as one value and a binary one as bits
    (:mod:`zerolab.selfplay.frames`); self-play checks both claims on every frame it stores."""

    constant: tuple[bool, ...]
    binary: tuple[bool, ...]


class Game:
    """A pgx environment with its sizes.

    Attributes:
      name: the game's name in configs (``chess``, ``gardner_chess``, ``go``).
      env: the pgx environment; ``env.init`` / ``env.step`` are pure and vmappable.
      num_actions: size of the action space A.
      observation_shape: shape of one observation, e.g. ``(5, 5, 115)``.

    The compiled rules (:attr:`batched_init`, :attr:`batched_step`, :attr:`jitted_step`) are compiled once per game
    (equal games share them), so every part that plays moves on the host uses the same programs.
    """

    def __init__(self, name: str, env: pgx.Env):
        self.name = name
        self.env = env
        state = jax.eval_shape(env.init, jax.random.key(0))
        # pgx's ``env.num_actions`` runs ``init`` op by op (a hundred small compilations); its shapes say the same
        self.num_actions = int(state.legal_action_mask.shape[0])
        self.observation_shape = tuple(state.observation.shape)
        self._state_shapes = state

    #: The most legal actions of any position, K: the search tree's slots a node (:mod:`zerolab.search.tree`).  A
    #: game that does not know its own keeps the whole action space (the dense layout).
    @property
    def max_legal_actions(self) -> int:
        return self.num_actions

    @property
    def observation_planes(self) -> ObservationPlanes:
        """The kinds of the observation's channels (:class:`ObservationPlanes`).  The default knows only the dtype:
        boolean planes (Go) are binary, others are stored as float16 values."""
        channels = self.observation_shape[-1]
        binary = self._state_shapes.observation.dtype == jnp.bool_
        return ObservationPlanes(constant=(False,) * channels, binary=(binary,) * channels)

    def init(self, key: jax.Array) -> pgx.State:
        return self.env.init(key)

    def step(self, state: pgx.State, action: jax.Array) -> pgx.State:
        return self.env.step(state, action)

    def plies_played(self, states: pgx.State) -> jax.Array:
        """[B] int32 (or a scalar for one state): plies played since each game's start position."""
        return plies_played(states)

    # --- the compact form of a state, as the search tree keeps it ----------------------------------------------
    def pack_state(self, states: pgx.State) -> pgx.State:
        """``states`` (any batch shape) as the search tree stores them: without the two arrays ``step`` computes anew
        — the observation planes and the legal action mask — and with every other boolean array of 16 or more
        entries packed 8 to a byte along its last axis.

        :meth:`unpack_state` restores a state that ``step`` treats exactly as the original for every action the
        original allows (``tests/zerolab/test_compact_tree.py``): pgx reads the stored mask only to punish an illegal
        action, which a search never takes (its slots hold the node's legal actions), and a finished game, whose
        mask pgx sets to all actions, is restored as it was.  Dropping the mask saves a chess node 584 bytes and the
        search a pack and an unpack of it at every expansion."""
        batch_shape = states.current_player.shape
        dropped = {"observation": jnp.zeros(batch_shape + (0,), jnp.uint8),
                   "legal_action_mask": jnp.zeros(batch_shape + (0,), jnp.bool_)}
        dropped_shapes = {name: jax.ShapeDtypeStruct((0,), array.dtype) for name, array in dropped.items()}
        return jax.tree.map(self._pack_leaf, states.replace(**dropped), self._state_shapes.replace(**dropped_shapes))

    def unpack_state(self, packed: pgx.State) -> pgx.State:
        """The inverse of :meth:`pack_state`: the observation comes back as zeros (``step`` recomputes it) and the
        legal action mask as all actions (``step`` recomputes it; pgx's own mask of a finished game)."""
        batch_shape = packed.current_player.shape
        state = jax.tree.map(self._unpack_leaf, packed, self._state_shapes)
        return state.replace(observation=jnp.zeros(batch_shape + self.observation_shape,
                                                   self._state_shapes.observation.dtype),
                             legal_action_mask=jnp.ones(batch_shape + (self.num_actions,), jnp.bool_))

    @staticmethod
    def _packed(shape: jax.ShapeDtypeStruct) -> bool:
        return shape.dtype == jnp.bool_ and len(shape.shape) > 0 and shape.shape[-1] >= 16

    def _pack_leaf(self, leaf, shape):
        return jnp.packbits(leaf, axis=-1) if self._packed(shape) else leaf

    def _unpack_leaf(self, leaf, shape):
        if not self._packed(shape) or leaf.ndim == 0 or leaf.shape[-1] == 0:
            return leaf
        return jnp.unpackbits(leaf, axis=-1, count=shape.shape[-1]).astype(jnp.bool_)

    @property
    def batched_init(self) -> Callable[[jax.Array], pgx.State]:
        """Jitted ``init`` over a batch of keys [B] (compiled once per game)."""
        return _compiled_rules(self)[0]

    @property
    def batched_step(self) -> Callable[[pgx.State, jax.Array], pgx.State]:
        """Jitted ``step`` over a batch of states [B] and actions [B] (compiled once per game)."""
        return _compiled_rules(self)[1]

    @property
    def jitted_step(self) -> Callable[[pgx.State, jax.Array], pgx.State]:
        """Jitted ``step`` of one state and one action (compiled once per game)."""
        return _compiled_rules(self)[2]

    # --- move text and game records (overridden by each game) ------------------------------------------------
    #: File format of this game's records: ``"pgn"`` (8×8 chess, SAN), ``"pgn-gardner"`` (5×5, long algebraic with
    #: a Variant header), ``"sgf"`` (Go), or None when the game has no record format.
    move_record_format: str | None = None

    def action_to_text(self, action: int, state: pgx.State) -> str:
        """The move ``action`` of the unbatched ``state`` as text (UCI for chess, a GTP vertex for Go)."""
        return str(int(action))

    def text_to_action(self, text: str, state: pgx.State) -> int:
        """Inverse of :meth:`action_to_text`; raises ``ValueError`` naming the text for a malformed or illegal move."""
        try:
            action = int(text)
        except ValueError:
            raise ValueError(f"malformed move {text!r} for {self.name}: expected an action number") from None
        if not 0 <= action < self.num_actions or not bool(state.legal_action_mask[action]):
            raise ValueError(f"illegal move {text!r} for {self.name}")
        return action

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


@functools.lru_cache(maxsize=32)
def _compiled_rules(game: Game) -> tuple[Callable, Callable, Callable]:
    """``(batched init, batched step, one-state step)`` of ``game``, jitted once per game (equal games share them)."""
    return jax.jit(jax.vmap(game.init)), jax.jit(jax.vmap(game.step)), jax.jit(game.step)
