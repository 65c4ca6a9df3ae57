"""The frameworks' teams as core team agents, and a batch of framework games played by the core's arena.

Every game starts from the standard position; the focal team plays White in even-numbered games and Black in odd ones
(:func:`skill_compat.frameworks.game_pairing`), all in one lock-step batch of :func:`zerolab.play.play_games` (the
alter team has the first move in the lanes where the focal team is Black).  For each batch a team recipe builds the
core's :class:`zerolab.play.TeamAgent`, whose rule makes the team's moves and annotates them:

* :class:`SttTeam` — a :class:`zerolab.play.MemberChoice`: the lane's bit at the game's ply gives the move to the
  senior (1) or the junior (0), who answers alone; annotations ``role`` (senior/junior) and ``player``.
* :class:`HbTeam` — :class:`HandAndBrain`: the brain names a piece type, the hand moves one with the two-stage draw,
  seeded per game and ply; annotations ``role`` (hand), ``player`` (the team), ``h0``, ``brain_move``,
  ``named_type``, ``interaction``.

pgx plays the moves and says when a game ends; a game reaching ``max_game_plies`` is a draw and counted as capped.
Engines see each lane's python-chess board with its move stack (:class:`skill_compat.players.BoardAgent`).

:func:`play_framework_games` returns, per game, a :class:`FrameworkGame`: its moves, the focal team's score and the
per-move records (``moves.jsonl`` rows before evaluation, see :mod:`skill_compat.records`): the arena's annotations
with the game's context (position, colour, team, the bits before the move).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any, Protocol

import chess
import jax
import jax.numpy as jnp
import numpy as np

from skill_compat.frameworks import (
    PIECE_TYPES,
    SENIOR,
    GameSlot,
    check_named_types,
    classify_interactions,
    format_bitstring,
    two_stage_hand,
)
from skill_compat.players import Brain, jitted_piece_types
from zerolab import Agent, ChessGame, GameRecord
from zerolab.play import MemberChoice, TeamAgent, TeamMoves, play_games


class HandPolicy(Protocol):
    """The hand of a hand-and-brain team: an agent with a policy over the legal moves (maia at T = 1)."""

    name: str

    def probabilities(self, states: Any) -> jax.Array:
        """[B, A] move probabilities over the legal moves."""


def stt_member_choice(bits: np.ndarray):
    """``(states, plies) -> [B]`` member of an STT team (0 the senior, 1 the junior) from each lane's bits
    ``[B, ≥ plies]``: the senior where the bit at the game's ply is 1."""

    def choose(states, plies: np.ndarray) -> np.ndarray:
        lane_bits = bits[np.arange(len(bits)), np.minimum(plies, bits.shape[1] - 1)]
        return np.where(lane_bits == SENIOR, 0, 1)

    return choose


@dataclasses.dataclass(frozen=True)
class SttTeam:
    """A tag team: ``senior`` plays the plies whose bit is 1, ``junior`` those whose bit is 0."""

    name: str
    senior: Agent
    junior: Agent

    def agent(self, bits: np.ndarray, game_keys: jax.Array) -> TeamAgent:
        """The team for a batch whose lanes read ``bits`` [B, ≥ plies]."""
        del game_keys
        return TeamAgent(self.name, [self.senior, self.junior], MemberChoice(stt_member_choice(bits),
                                                                             roles=("senior", "junior")))


@functools.lru_cache(maxsize=4)
def _per_game_hand():
    """The two-stage hand with one key per lane (a game's draws do not depend on its batch)."""

    def one(key, probabilities, types, named):
        h0, played = two_stage_hand(key, probabilities[None], types[None], named[None])
        return h0[0], played[0]

    return jax.jit(jax.vmap(one))


@dataclasses.dataclass(frozen=True)
class HandAndBrain:
    """The core :class:`zerolab.play.arena.TeamRule` of a hand-and-brain team: ``brain`` names a piece type in each lane
    (None: the hand plays alone, its free draw ``h0``); the hand draws ``h0`` from its policy and plays it when it has
    that type, else redraws among the type's moves (:func:`skill_compat.frameworks.two_stage_hand`), with the key of
    the lane's game (``game_keys`` [B]) and ply.  The hand is credited with every move."""

    team_name: str
    game: ChessGame
    brain: Brain | None
    hand: HandPolicy
    game_keys: jax.Array

    def __call__(self, members: Sequence[Agent], states: Any, key: jax.Array, active: np.ndarray) -> TeamMoves:
        batch = len(active)
        types = np.asarray(jitted_piece_types(self.game)(states))
        probabilities = jnp.asarray(self.hand.probabilities(states))
        if self.brain is None:
            named = np.zeros(batch, np.int32)
            brain_moves = np.full(batch, -1, np.int32)
        else:
            choice = self.brain.name_piece_types(states, key, active)
            named, brain_moves = np.asarray(choice.piece_type, np.int32), np.asarray(choice.move, np.int32)
            check_named_types(types, named, active)
        ply_keys = jax.vmap(jax.random.fold_in)(self.game_keys, jnp.asarray(self.game.plies_played(states)))
        h0, played = (np.asarray(x) for x in _per_game_hand()(ply_keys, probabilities, jnp.asarray(types),
                                                                 jnp.asarray(named)))
        if self.brain is None:
            played = h0
        has_brain_move = brain_moves >= 0
        interactions = np.full(batch, None, dtype=object)
        if has_brain_move.any():
            interactions[has_brain_move] = classify_interactions(h0, played, np.maximum(brain_moves, 0),
                                                                 types)[has_brain_move]
        host_states = jax.device_get(states)
        annotations: list[dict[str, Any]] = [{} for _ in range(batch)]
        for lane in np.flatnonzero(active):
            state = jax.tree.map(lambda leaf: leaf[lane], host_states)
            annotations[lane] = {
                "role": "hand", "player": self.team_name, "h0": self.game.action_to_uci(int(h0[lane]), state),
                "brain_move": (self.game.action_to_uci(int(brain_moves[lane]), state)
                               if brain_moves[lane] >= 0 else None),
                "named_type": PIECE_TYPES[named[lane] - 1] if named[lane] else None,
                "interaction": interactions[lane]}
        return TeamMoves(played.astype(np.int32), np.full(batch, len(members) - 1), annotations)


@dataclasses.dataclass(frozen=True)
class HbTeam:
    """A hand-and-brain team: ``brain`` names a piece type (None: the hand plays alone, its free draw ``h0``);
    ``hand`` gives the hand's policy over legal moves (maia at T = 1)."""

    name: str
    brain: Brain | None
    hand: HandPolicy
    game: ChessGame

    def agent(self, bits: np.ndarray, game_keys: jax.Array) -> TeamAgent:
        """The team for a batch whose lanes' games have the hand keys ``game_keys`` [B]."""
        del bits
        members = ([] if self.brain is None else [self.brain]) + [self.hand]
        return TeamAgent(self.name, members, HandAndBrain(self.name, self.game, self.brain, self.hand, game_keys))


@dataclasses.dataclass
class FrameworkGame:
    """One finished game: ``focal_score`` 1 / ½ / 0, ``capped`` when it hit the ply cap (a draw)."""

    index: int
    focal_is_white: bool
    moves: list[str]
    focal_score: float
    plies: int
    capped: bool
    records: list[dict]
    bitstring: str | None = None
    seed: int | None = None

    def summary(self) -> dict:
        return {"game": self.index, "focal_is_white": self.focal_is_white, "focal_score": self.focal_score,
                "plies": self.plies, "capped": self.capped, "moves": self.moves, "bitstring": self.bitstring,
                "seed": self.seed}


def move_records(slot: GameSlot, record: GameRecord, team_names: tuple[str, str],
                 bits: np.ndarray | None) -> list[dict]:
    """The game's ``moves.jsonl`` rows before evaluation: each move with its position (FEN before it), colour, team
    (``focal``/``alter`` and its name), the mover's annotations and, in STT, the bits of the earlier plies."""
    board = chess.Board()
    rows = []
    annotations = record.annotations or [{} for _ in record.moves]
    for ply, (move, annotation) in enumerate(zip(record.moves, annotations)):
        focal = (ply % 2 == 0) == slot.focal_is_white
        row = {"game": slot.index, "ply": ply, "fen": board.fen(), "move": move,
               "colour": "white" if ply % 2 == 0 else "black", "team": "focal" if focal else "alter",
               "team_name": team_names[0] if focal else team_names[1], **annotation}
        if bits is not None:
            row["bits_before"] = format_bitstring(bits[:ply])
        rows.append(row)
        board.push_uci(move)
    return rows


def play_framework_games(game: ChessGame, focal: SttTeam | HbTeam, alter: SttTeam | HbTeam,
                         slots: Sequence[GameSlot], key: jax.Array, max_game_plies: int,
                         bitstrings: np.ndarray | None = None, hand_seed: int = 0, progress=None) -> list[FrameworkGame]:
    """Plays the games of ``slots`` in one lock-step batch of the core's arena (see the module docstring).

    ``bitstrings`` [P, ≥ max_game_plies]: STT's, row ``slot.pairing`` for each game (both teams read it); HB games
    use ``hand_seed`` with the pairing folded in, so both colours of a pairing get the same hand keys.
    """
    if not isinstance(game, ChessGame) or game.board_size != 8:
        raise ValueError(f"the frameworks play 8x8 chess, not {getattr(game, 'name', game)!r}")
    if max_game_plies < 1:
        raise ValueError(f"max_game_plies must be positive, got {max_game_plies}")
    batch = len(slots)
    if bitstrings is not None:
        bitstrings = np.asarray(bitstrings)
        if bitstrings.ndim != 2 or bitstrings.shape[1] < max_game_plies:
            raise ValueError(f"bitstrings must be [pairings, >= {max_game_plies}] bits, got shape {bitstrings.shape}")
        bits = bitstrings[[slot.pairing for slot in slots]]
    else:
        bits = np.ones((batch, max_game_plies), np.uint8)
    game_keys = jnp.stack([jax.random.fold_in(jax.random.key(hand_seed), slot.pairing) for slot in slots])
    focal_is_white = np.array([slot.focal_is_white for slot in slots])
    records = play_games(game, focal.agent(bits, game_keys), alter.agent(bits, game_keys), batch, key,
                         max_game_plies, progress, second_moves_first=~focal_is_white)
    games = []
    for lane, (slot, record) in enumerate(zip(slots, records)):
        focal_score = record.first_player_score if slot.focal_is_white else 1.0 - record.first_player_score
        games.append(FrameworkGame(
            index=slot.index, focal_is_white=slot.focal_is_white, moves=record.moves, focal_score=float(focal_score),
            plies=record.plies, capped=record.capped,
            records=move_records(slot, record, (focal.name, alter.name), bits[lane] if bitstrings is not None else None),
            bitstring=format_bitstring(bits[lane]) if bitstrings is not None else None,
            seed=None if bitstrings is not None else hand_seed))
    return games


__all__ = ["FrameworkGame", "HandAndBrain", "HandPolicy", "HbTeam", "SttTeam", "move_records", "play_framework_games",
           "stt_member_choice"]
