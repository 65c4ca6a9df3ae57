"""Arena: matches between two agents with pgx as the referee.

``play_match`` plays ``num_games`` games in two lock-step batches — agent A with the first move in one, agent B in the
other — so colours alternate evenly and each agent is called on one fixed-size batch per ply.  Every move is applied
by pgx, which decides when a game ends and who won; a game that reaches ``max_game_plies`` is a draw.  Results are
W/D/L from A's side; games are written in the game's record format by :mod:`zerolab.pgn`.
"""

from __future__ import annotations

import dataclasses
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pgx

from zerolab.agents import Agent
from zerolab.elo import MatchResult
from zerolab.games import Game
from zerolab.pgn import GameRecord, write_games
from zerolab.progress import progress_bar


@dataclasses.dataclass
class Match:
    """A played match: its W/D/L from ``result.player_a``'s side (an :class:`zerolab.elo.MatchResult`) and its games."""

    result: MatchResult
    games: list[GameRecord]

    @property
    def score(self) -> float:
        """Score of player A: (wins + draws / 2) / games."""
        return (self.result.wins + 0.5 * self.result.draws) / max(self.result.games, 1)

    def summary(self) -> dict:
        return {**self.result.to_dict(), "games": self.result.games, "score": self.score}


def _select(tree, index: int):
    return jax.tree.map(lambda x: x[index], tree)


def play_games(game: Game, first: Agent, second: Agent, num_games: int, key: jax.Array, max_game_plies: int,
               progress=None) -> list[GameRecord]:
    """``num_games`` games in lock step, ``first`` moving first in all of them."""
    init = jax.jit(jax.vmap(game.init))
    step = jax.jit(jax.vmap(game.step))
    key, init_key = jax.random.split(key)
    states = init(jax.random.split(init_key, num_games))
    first.new_game()
    second.new_game()
    moves: list[list[str]] = [[] for _ in range(num_games)]
    scores = np.zeros(num_games)  # from the first player's side, once finished
    finished = np.zeros(num_games, bool)
    plies = np.zeros(num_games, np.int32)
    for ply in range(max_game_plies):
        mover = first if ply % 2 == 0 else second
        key, move_key = jax.random.split(key)
        actions = np.asarray(mover.select_actions(states, move_key), np.int32)
        host_states = jax.device_get(states)
        for index in np.flatnonzero(~finished):
            moves[index].append(game.action_to_text(int(actions[index]), _select(host_states, index)))
        mover_id = np.asarray(states.current_player)
        states = step(states, jnp.asarray(actions))
        rewards = np.asarray(states.rewards)[np.arange(num_games), mover_id]
        newly_over = np.asarray(states.terminated) & ~finished
        mover_score = (rewards + 1) / 2  # reward of the player who just moved, as a score
        scores[newly_over] = mover_score[newly_over] if ply % 2 == 0 else 1 - mover_score[newly_over]
        plies[newly_over] = ply + 1
        if progress is not None:
            progress.advance(int(newly_over.sum()))
        finished |= newly_over
        if finished.all():
            break
    capped = ~finished
    scores[capped] = 0.5
    plies[capped] = max_game_plies
    if progress is not None:
        progress.advance(int(capped.sum()))
    return [GameRecord(first.name, second.name, moves[i], float(scores[i]), int(plies[i]), bool(capped[i]))
            for i in range(num_games)]


def play_match(game: Game, agent_a: Agent, agent_b: Agent, num_games: int, key: jax.Array,
               max_game_plies: int = 512, show_progress: bool = True) -> Match:
    """``num_games`` games (an even number: half with each agent moving first); W/D/L from ``agent_a``'s side."""
    if num_games < 2 or num_games % 2:
        raise ValueError(f"num_games must be an even number of at least 2, got {num_games}")
    if agent_a.name == agent_b.name:
        raise ValueError(f"the two agents need different names, both are {agent_a.name!r}")
    key_a, key_b = jax.random.split(key)
    with progress_bar(f"{agent_a.name} vs {agent_b.name}", num_games, unit="game", enabled=show_progress) as bar:
        records = play_games(game, agent_a, agent_b, num_games // 2, key_a, max_game_plies, bar)
        records += play_games(game, agent_b, agent_a, num_games // 2, key_b, max_game_plies, bar)
    scores_a = [r.first_player_score if r.first_player == agent_a.name else 1 - r.first_player_score for r in records]
    result = MatchResult(agent_a.name, agent_b.name, wins=sum(s == 1 for s in scores_a),
                         draws=sum(s == 0.5 for s in scores_a), losses=sum(s == 0 for s in scores_a))
    return Match(result, records)


def write_pgn(game: Game, match: Match, path: str | pathlib.Path, event: str = "zerolab match") -> pathlib.Path:
    return write_games(game, match.games, path, event)
