"""The host framework driver: a batch of framework games in lock step, pgx as the referee, one record per move.

Every game starts from the standard position; the focal team plays White in even-numbered games and Black in odd
ones (:func:`skill_compat.frameworks.game_pairing`).  Each ply, the team to move in each lane decides through its
framework (:class:`SttTeam`: the lane's bit picks senior or junior; :class:`HbTeam`: the brain names a piece type, the
hand moves one with the two-stage draw, seeded per game and ply), pgx plays the move and says when the game ends; a
game reaching ``max_game_plies`` is a draw and counted as capped.  Engines see each lane's python-chess board with
its move stack.

:func:`play_framework_games` returns, per game, a :class:`FrameworkGame`: its moves, the focal team's score and the
per-move records (``moves.jsonl`` rows before evaluation, see :mod:`skill_compat.records`).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Sequence
from typing import Any

import chess
import jax
import jax.numpy as jnp
import numpy as np

from skill_compat.frameworks import (
    JUNIOR,
    PIECE_TYPES,
    SENIOR,
    GameSlot,
    check_named_types,
    classify_interactions,
    format_bitstring,
    two_stage_hand,
)
from skill_compat.players import Brain, Player, Positions, batched_step, jitted_piece_types
from zerolab.api import ChessGame

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class SttTeam:
    """A tag team: ``senior`` plays the plies whose bit is 1, ``junior`` those whose bit is 0."""

    name: str
    senior: Player
    junior: Player

    def move(self, positions: Positions, key: jax.Array, active: np.ndarray, ply: int,
             bits: np.ndarray, game_keys: jax.Array) -> tuple[np.ndarray, list[dict]]:
        del game_keys
        roles = bits[:, ply].astype(bool)
        actions = np.zeros(len(positions.boards), np.int32)
        senior_key, junior_key = jax.random.split(key)
        for role, player, role_key in ((True, self.senior, senior_key), (False, self.junior, junior_key)):
            lanes = active & (roles == role)
            if lanes.any():
                actions[lanes] = player.select_actions(positions, role_key, lanes)[lanes]
        infos = [{"role": "senior" if roles[lane] else "junior",
                  "player": (self.senior if roles[lane] else self.junior).name} for lane in range(len(actions))]
        return actions, infos

    def new_game(self) -> None:
        for player in (self.senior, self.junior):
            getattr(player, "new_game", lambda: None)()


@functools.lru_cache(maxsize=4)
def _per_game_hand():
    """The two-stage hand with one key per lane (a game's draws do not depend on its batch)."""

    def one(key, probabilities, types, named):
        h0, played = two_stage_hand(key, probabilities[None], types[None], named[None])
        return h0[0], played[0]

    return jax.jit(jax.vmap(one))


@dataclasses.dataclass
class HbTeam:
    """A hand-and-brain team: ``brain`` names a piece type (None: the hand plays alone, its free draw ``h0``);
    ``hand`` gives the hand's policy over legal moves [B, A] (maia at T = 1)."""

    name: str
    brain: Brain | None
    hand: Any  # (states [B]) -> [B, A] probabilities
    game: ChessGame

    def move(self, positions: Positions, key: jax.Array, active: np.ndarray, ply: int,
             bits: np.ndarray, game_keys: jax.Array) -> tuple[np.ndarray, list[dict]]:
        del bits
        batch = len(positions.boards)
        types = np.asarray(jitted_piece_types(self.game)(positions.states))
        probabilities = jnp.asarray(self.hand(positions.states))
        if self.brain is None:
            named = np.zeros(batch, np.int32)
            brain_moves = np.full(batch, -1, np.int32)
        else:
            choice = self.brain.name_piece_types(positions, key, active)
            named, brain_moves = np.asarray(choice.piece_type, np.int32), np.asarray(choice.move, np.int32)
            check_named_types(types, named, active)
        ply_keys = jax.vmap(lambda game_key: jax.random.fold_in(game_key, ply))(game_keys)
        h0, played = (np.asarray(x) for x in _per_game_hand()(ply_keys, probabilities, jnp.asarray(types),
                                                                 jnp.asarray(named)))
        if self.brain is None:
            played = h0
        has_brain_move = brain_moves >= 0
        interactions = np.full(batch, None, dtype=object)
        if has_brain_move.any():
            interactions[has_brain_move] = classify_interactions(h0, played, np.maximum(brain_moves, 0),
                                                                 types)[has_brain_move]
        infos = []
        for lane in range(batch):
            info = {"role": "hand", "player": self.name, "h0": None, "brain_move": None,
                    "named_type": PIECE_TYPES[named[lane] - 1] if named[lane] else None,
                    "interaction": interactions[lane]}
            if active[lane]:
                state = positions.state(lane)
                info["h0"] = self.game.action_to_uci(int(h0[lane]), state)
                if brain_moves[lane] >= 0:
                    info["brain_move"] = self.game.action_to_uci(int(brain_moves[lane]), state)
            infos.append(info)
        return played.astype(np.int32), infos

    def new_game(self) -> None:
        if self.brain is not None:
            getattr(self.brain, "new_game", lambda: None)()


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


def _stack(states: Sequence[Any]) -> Any:
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)


def play_framework_games(game: ChessGame, focal: SttTeam | HbTeam, alter: SttTeam | HbTeam,
                         slots: Sequence[GameSlot], key: jax.Array, max_game_plies: int,
                         bitstrings: np.ndarray | None = None, hand_seed: int = 0, progress=None) -> list[FrameworkGame]:
    """Plays the games of ``slots`` in one lock-step batch (see the module docstring).

    ``bitstrings`` [P, ≥ max_game_plies]: STT's, row ``slot.pairing`` for each game (both teams read it); HB games
    use ``hand_seed`` with the pairing folded in, so both colours of a pairing get the same hand keys.
    """
    if not isinstance(game, ChessGame) or game.board_size != 8:
        raise ValueError(f"the frameworks play 8x8 chess, not {getattr(game, 'name', game)!r}")
    if max_game_plies < 1:
        raise ValueError(f"max_game_plies must be positive, got {max_game_plies}")
    batch = len(slots)
    focal_white = np.array([slot.focal_is_white for slot in slots])
    if bitstrings is not None:
        bitstrings = np.asarray(bitstrings)
        if bitstrings.ndim != 2 or bitstrings.shape[1] < max_game_plies:
            raise ValueError(f"bitstrings must be [pairings, >= {max_game_plies}] bits, got shape {bitstrings.shape}")
        bits = bitstrings[[slot.pairing for slot in slots]]
    else:
        bits = np.ones((batch, max_game_plies), np.uint8)
    game_keys = jnp.stack([jax.random.fold_in(jax.random.key(hand_seed), slot.pairing) for slot in slots])
    step = batched_step(game)
    states = _stack([game.init(jax.random.key(0))] * batch)
    boards = [chess.Board() for _ in range(batch)]
    focal.new_game()
    alter.new_game()
    finished = np.zeros(batch, bool)
    scores = np.full(batch, 0.5)  # the focal team's
    plies = np.full(batch, max_game_plies)
    records: list[list[dict]] = [[] for _ in range(batch)]
    for ply in range(max_game_plies):
        key, focal_key, alter_key = jax.random.split(key, 3)
        running = ~finished
        focal_moves = running & ((ply % 2 == 0) == focal_white)
        alter_moves = running & ~focal_moves
        positions = Positions(states, boards)
        actions = np.zeros(batch, np.int32)
        infos: list[dict | None] = [None] * batch
        for team, lanes, team_key, side in ((focal, focal_moves, focal_key, "focal"),
                                            (alter, alter_moves, alter_key, "alter")):
            if not lanes.any():
                continue
            team_actions, team_infos = team.move(positions, team_key, lanes, ply, bits, game_keys)
            actions[lanes] = team_actions[lanes]
            for lane in np.flatnonzero(lanes):
                infos[lane] = {"team": side, "team_name": team.name, **team_infos[lane]}
        host_states = jax.device_get(states)
        movers = np.asarray(host_states.current_player)
        for lane in np.flatnonzero(running):
            state = jax.tree.map(lambda leaf: leaf[lane], host_states)
            if not bool(state.legal_action_mask[actions[lane]]):
                raise RuntimeError(f"game {slots[lane].index}, ply {ply}: {infos[lane]['player']} chose an illegal "
                                   f"action {actions[lane]} in {boards[lane].fen()}")
            move = game.action_to_uci(int(actions[lane]), state)
            record = {"game": slots[lane].index, "ply": ply, "fen": boards[lane].fen(), "move": move,
                      "colour": "white" if ply % 2 == 0 else "black", **infos[lane]}
            if bitstrings is not None:
                record["bits_before"] = format_bitstring(bits[lane, :ply])
            records[lane].append(record)
            boards[lane].push_uci(move)
        states = step(states, jnp.asarray(actions))
        over = np.asarray(states.terminated) & running
        rewards = np.asarray(states.rewards)[np.arange(batch), movers]
        for lane in np.flatnonzero(over):
            mover_score = (rewards[lane] + 1) / 2
            scores[lane] = mover_score if focal_moves[lane] else 1 - mover_score
            plies[lane] = ply + 1
        finished |= over
        if progress is not None:
            progress.advance(int(over.sum()))
        if finished.all():
            break
    if progress is not None:
        progress.advance(int((~finished).sum()))
    games = []
    for lane, slot in enumerate(slots):
        games.append(FrameworkGame(
            index=slot.index, focal_is_white=bool(focal_white[lane]), moves=[r["move"] for r in records[lane]],
            focal_score=float(scores[lane]), plies=int(plies[lane]), capped=bool(not finished[lane]),
            records=records[lane], bitstring=format_bitstring(bits[lane]) if bitstrings is not None else None,
            seed=None if bitstrings is not None else hand_seed))
    return games


__all__ = ["FrameworkGame", "HbTeam", "SttTeam", "play_framework_games", "JUNIOR", "SENIOR"]
