"""Arena: matches between two agents with pgx as the referee.

``play_match`` plays ``num_games`` games in two lock-step batches — agent A with the first move in one, agent B in the
other — so colours alternate evenly and each agent is called on one fixed-size batch per ply.  Every move is applied
by pgx, which decides when a game ends and who won; a game that reaches ``max_game_plies`` is a draw.  Results are
W/D/L from A's side; games are written in the game's record format by :mod:`zerolab.games.pgn` (and as JSON lines with
the moves and who chose each, :func:`zerolab.games.pgn.write_game_records`).  Games may start from given FENs (each played
with both colours; for Go, move lists from the empty board, e.g. a handicap: :meth:`zerolab.games.go.GoGame.from_fen`;
agents with the optional ``set_start_positions`` hook are told them), and an agent may be a :class:`TeamAgent` whose
members share the moves by a rule.  The batched
``init``/``step`` are compiled once per game (:func:`compiled_rules`).
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pgx

from zerolab.play.agents import Agent
from zerolab.play.results import MatchResult
from zerolab.games import Game
from zerolab.games.pgn import GameRecord, write_games
from zerolab.progress import progress_bar


@dataclasses.dataclass
class Match:
    """A played match: its W/D/L from ``result.player_a``'s side (an :class:`zerolab.play.results.MatchResult`) and its games."""

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


@functools.lru_cache(maxsize=16)
def compiled_rules(game: Game) -> tuple[Callable, Callable]:
    """The batched, jitted ``init(keys)`` and ``step(states, actions)`` of ``game``, compiled once per game."""
    return jax.jit(jax.vmap(game.init)), jax.jit(jax.vmap(game.step))


#: ``(states, plies) -> [B] member index``: which member of a :class:`TeamAgent` moves in each position
#: (``plies`` [B]: the moves played so far in each game, from its start position).
TeamRule = Callable[[pgx.State, np.ndarray], np.ndarray]


class TeamAgent:
    """Several agents playing as one: each position is delegated to one member chosen by ``rule``.

    ``last_movers`` names, after each call, the member that chose each position's move (``team/member``); the arena
    writes them into the game records' ``movers``.  A member that moves in none of the positions is shown them
    through its ``observe(states)`` when it has one (an :class:`zerolab.play.agents.EngineAgent` keeps its boards, and so
    the game's moves, in step however many plies the rule skips it).
    """

    def __init__(self, name: str, members: Sequence[Agent], rule: TeamRule):
        if not members:
            raise ValueError(f"team {name!r} needs at least one member")
        self.name = name
        self.members = list(members)
        self.rule = rule
        self.last_movers: list[str] = []

    def select_actions(self, states: pgx.State, key: jax.Array) -> np.ndarray:
        choice = np.asarray(self.rule(states, np.asarray(states._step_count)), np.int64)
        batch = np.asarray(states.terminated).shape[0]
        if choice.shape != (batch,) or (choice < 0).any() or (choice >= len(self.members)).any():
            raise ValueError(f"team {self.name!r}: the rule must return [{batch}] member indices in "
                             f"[0, {len(self.members)}), got {choice!r}")
        actions = np.zeros(batch, np.int32)
        for index, member in enumerate(self.members):
            if not (choice == index).any():
                getattr(member, "observe", lambda states: None)(states)
                continue
            member_actions = np.asarray(member.select_actions(states, jax.random.fold_in(key, index)))
            actions[choice == index] = member_actions[choice == index]
        self.last_movers = [f"{self.name}/{self.members[index].name}" for index in choice]
        return actions

    def new_game(self) -> None:
        for member in self.members:
            member.new_game()

    def set_start_positions(self, start_fens: Sequence[str] | None) -> None:
        for member in self.members:
            getattr(member, "set_start_positions", lambda start_fens: None)(start_fens)


def _movers(agent: Agent, batch: int) -> list[str]:
    return agent.last_movers if isinstance(agent, TeamAgent) else [agent.name] * batch


def start_states(game: Game, num_games: int, key: jax.Array, start_fens: Sequence[str] | None) -> pgx.State:
    """Batched start positions: ``num_games`` standard ones, or one per FEN of ``start_fens``."""
    init, _ = compiled_rules(game)
    if start_fens is None:
        return init(jax.random.split(key, num_games))
    if len(start_fens) != num_games:
        raise ValueError(f"start_fens: {num_games} games need {num_games} FENs, got {len(start_fens)}")
    from_fen = getattr(game, "from_fen", None)
    if from_fen is None:
        raise ValueError(f"start_fens: {game.name} has no FEN positions")
    states = [from_fen(fen) for fen in start_fens]
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)


def play_games(game: Game, first: Agent, second: Agent, num_games: int, key: jax.Array, max_game_plies: int,
               progress=None, start_fens: Sequence[str] | None = None) -> list[GameRecord]:
    """``num_games`` games in lock step, ``first`` moving first in all of them (from ``start_fens`` when given)."""
    _, step = compiled_rules(game)
    key, init_key = jax.random.split(key)
    states = start_states(game, num_games, init_key, start_fens)
    for agent in (first, second):
        agent.new_game()
        if start_fens is not None:  # the optional hook of agents that keep their own record of each game
            getattr(agent, "set_start_positions", lambda start_fens: None)(list(start_fens))
    moves: list[list[str]] = [[] for _ in range(num_games)]
    movers: list[list[str]] = [[] for _ in range(num_games)]
    scores = np.zeros(num_games)  # from the first player's side, once finished
    finished = np.asarray(states.terminated).copy()
    if finished.any():
        raise ValueError(f"start_fens: the game is already over in {[start_fens[i] for i in np.flatnonzero(finished)]}")
    plies = np.zeros(num_games, np.int32)
    for ply in range(max_game_plies):
        mover = first if ply % 2 == 0 else second
        key, move_key = jax.random.split(key)
        actions = np.asarray(mover.select_actions(states, move_key), np.int32)
        mover_names = _movers(mover, num_games)
        host_states = jax.device_get(states)
        for index in np.flatnonzero(~finished):
            moves[index].append(game.action_to_text(int(actions[index]), _select(host_states, index)))
            movers[index].append(mover_names[index])
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
    return [GameRecord(first.name, second.name, moves[i], float(scores[i]), int(plies[i]), bool(capped[i]),
                       start_fen=None if start_fens is None else start_fens[i], movers=movers[i])
            for i in range(num_games)]


def play_match(game: Game, agent_a: Agent, agent_b: Agent, num_games: int, key: jax.Array,
               max_game_plies: int = 512, show_progress: bool = True,
               start_fens: Sequence[str] | None = None) -> Match:
    """``num_games`` games (an even number: half with each agent moving first); W/D/L from ``agent_a``'s side.

    With ``start_fens``, each FEN is played twice, once with each agent to move first, so ``num_games`` must be
    twice their number.
    """
    if num_games < 2 or num_games % 2:
        raise ValueError(f"num_games must be an even number of at least 2, got {num_games}")
    if agent_a.name == agent_b.name:
        raise ValueError(f"the two agents need different names, both are {agent_a.name!r}")
    if start_fens is not None:
        start_fens = list(start_fens)
        if num_games != 2 * len(start_fens):
            raise ValueError(f"start_fens: each of the {len(start_fens)} FENs is played twice (colours swapped), "
                             f"so num_games must be {2 * len(start_fens)}, got {num_games}")
    key_a, key_b = jax.random.split(key)
    with progress_bar(f"{agent_a.name} vs {agent_b.name}", num_games, unit="game", enabled=show_progress) as bar:
        records = play_games(game, agent_a, agent_b, num_games // 2, key_a, max_game_plies, bar, start_fens)
        records += play_games(game, agent_b, agent_a, num_games // 2, key_b, max_game_plies, bar, start_fens)
    scores_a = [r.first_player_score if r.first_player == agent_a.name else 1 - r.first_player_score for r in records]
    result = MatchResult(agent_a.name, agent_b.name, wins=sum(s == 1 for s in scores_a),
                         draws=sum(s == 0.5 for s in scores_a), losses=sum(s == 0 for s in scores_a))
    return Match(result, records)


def write_pgn(game: Game, match: Match, path: str | pathlib.Path, event: str = "zerolab match") -> pathlib.Path:
    return write_games(game, match.games, path, event)
