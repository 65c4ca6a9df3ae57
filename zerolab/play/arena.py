"""Arena: matches between two agents with pgx as the referee.

``play_match`` plays ``num_games`` games in two lock-step batches — agent A with the first move in one, agent B in the
other — so colours alternate evenly and each agent is called on one fixed-size batch per ply.  Every move is applied
by pgx, which decides when a game ends and who won; a game that reaches ``max_game_plies`` is a draw.  Results are
W/D/L from A's side; games are written in the game's record format by :mod:`zerolab.games.pgn` (and as JSON lines with
the moves, who chose each and the movers' annotations, :func:`zerolab.games.pgn.write_game_records`).  Games may start
from given FENs (each played with both colours; for Go, move lists from the empty board, e.g. a handicap:
:meth:`zerolab.games.go.GoGame.from_fen`; agents are told them through ``set_start_positions``).

:func:`play_games`, the one match loop, plays one batch: each lane's first mover is ``first`` unless
``second_moves_first`` swaps it, so one batch may hold both colours of a pairing (the skill-compatibility frameworks'
games).  Each ply, each of the two agents is asked to move in its lanes (``select_actions(states, key, active)``), or
shown the positions when it moves in none (``observe``); after each call the arena reads who chose each move and
the annotations on it (:meth:`zerolab.play.agents.Agent.mover_names`, :meth:`~zerolab.play.agents.Agent.move_annotations`)
into the game records.  An agent may be a :class:`TeamAgent` whose members share the moves by a :class:`TeamRule`:
:class:`MemberChoice` (one member per position: tag teams) or a method package's own rule (skill_compat's hand and
brain).  The batched ``init``/``step`` are the game's, compiled once per game (:attr:`zerolab.games.Game.batched_step`).
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
import pgx

from zerolab.play.agents import Agent, lanes_to_answer
from zerolab.play.results import MatchResult
from zerolab.games import Game
from zerolab.games.base import plies_played
from zerolab.games.pgn import GameRecord, write_games
from zerolab.progress import progress_bar


@dataclasses.dataclass
class Match:
    """A played match: its W/D/L from ``result.player_a``'s side (an :class:`zerolab.play.results.MatchResult`), its
    games, the moves an engine agent did not choose itself during it (``fallback_moves``: agent name → moves
    replaced by a random legal one, for the agents that count them, :class:`zerolab.play.engine_agents.EngineAgent`), and
    what the caller measured beside the result (``extras``, JSON values: a search's statistics, Go margins; kept in
    :mod:`zerolab.evaluation.pairings`' records)."""

    result: MatchResult
    games: list[GameRecord]
    fallback_moves: dict[str, int] = dataclasses.field(default_factory=dict)
    extras: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def score(self) -> float:
        """Score of player A: (wins + draws / 2) / games."""
        return (self.result.wins + 0.5 * self.result.draws) / max(self.result.games, 1)

    def summary(self) -> dict:
        return {**self.result.to_dict(), "games": self.result.games, "score": self.score}


def _select(tree, index: int):
    return jax.tree.map(lambda x: x[index], tree)


# --- teams ------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TeamMoves:
    """A team's moves for one batch of positions.

    Attributes:
      actions: [B] pgx actions (only the lanes the team was asked about are read).
      members: [B] index of the member credited with each move (the team's game records name it as the mover).
      annotations: [B] notes on each move (JSON values), e.g. the member's role or what a brain named.
    """

    actions: np.ndarray
    members: np.ndarray
    annotations: list[dict[str, Any]]


class TeamRule(Protocol):
    """How a :class:`TeamAgent`'s members make its moves: asks them (``select_actions`` on their lanes, ``observe``
    for those not asked) and returns the moves with the credited member and notes per lane."""

    def __call__(self, members: Sequence[Agent], states: pgx.State, key: jax.Array,
                 active: np.ndarray) -> TeamMoves: ...


#: ``(states, plies) -> [B] member index``: which member of a team moves in each position (``plies`` [B]: the moves
#: played so far in each game, from its start position).
MemberChoiceFn = Callable[[pgx.State, np.ndarray], np.ndarray]


def delegate_moves(members: Sequence[Agent], states: pgx.State, key: jax.Array, active: np.ndarray,
                   choice: np.ndarray) -> np.ndarray:
    """[B] actions: member ``choice[lane]`` answers each ``active`` lane, each member called once on its lanes
    (``select_actions(states, fold_in(key, index), lanes)``), in member order; a member with no lane is shown the
    positions (``observe``)."""
    actions = np.zeros(len(choice), np.int32)
    for index, member in enumerate(members):
        lanes = active & (choice == index)
        if not lanes.any():
            member.observe(states)
            continue
        member_actions = np.asarray(member.select_actions(states, jax.random.fold_in(key, index), lanes))
        actions[lanes] = member_actions[lanes]
    return actions


@dataclasses.dataclass(frozen=True)
class MemberChoice:
    """The :class:`TeamRule` of tag teams: ``choose(states, plies)`` names the one member that moves in each position
    (plies from each game's start: :func:`zerolab.games.base.plies_played`), which answers alone.

    With ``roles`` (one name per member), each move is annotated ``{"role": role, "player": member name}``.
    """

    choose: MemberChoiceFn
    roles: tuple[str, ...] | None = None

    def __call__(self, members: Sequence[Agent], states: pgx.State, key: jax.Array, active: np.ndarray) -> TeamMoves:
        choice = np.asarray(self.choose(states, np.asarray(plies_played(states))), np.int64)
        batch = len(active)
        if choice.shape != (batch,) or (choice < 0).any() or (choice >= len(members)).any():
            raise ValueError(f"the team's rule must return [{batch}] member indices in [0, {len(members)}), "
                             f"got {choice!r}")
        if self.roles is not None and len(self.roles) != len(members):
            raise ValueError(f"roles {self.roles} name {len(self.roles)} members, the team has {len(members)}")
        actions = delegate_moves(members, states, key, active, choice)
        if self.roles is None:
            annotations = [{} for _ in range(batch)]
        else:
            annotations = [{"role": self.roles[index], "player": members[index].name} for index in choice]
        return TeamMoves(actions, choice, annotations)


class TeamAgent(Agent):
    """Several agents playing as one: ``rule`` (a :class:`TeamRule`, e.g. :class:`MemberChoice`) makes each move
    from its members.

    After each call the arena reads the mover of each position as ``team/member`` (the member the rule credits) and
    the rule's annotations.  Members are told of new games, start positions and closing; a member a rule does not
    ask in some ply is shown the positions (``observe``), as are all members when the team itself moves in no game.
    """

    def __init__(self, name: str, members: Sequence[Agent], rule: TeamRule):
        if not members:
            raise ValueError(f"team {name!r} needs at least one member")
        self.name = name
        self.members = list(members)
        self.rule = rule
        self._last_moves: TeamMoves | None = None

    def select_actions(self, states: pgx.State, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        self._last_moves = self.rule(self.members, states, key, lanes_to_answer(states, active))
        return self._last_moves.actions

    def mover_names(self, batch_size: int) -> list[str]:
        return [f"{self.name}/{self.members[index].name}" for index in self._last_moves.members]

    def move_annotations(self, batch_size: int) -> list[dict[str, Any]]:
        return list(self._last_moves.annotations)

    def new_game(self) -> None:
        for member in self.members:
            member.new_game()

    def set_start_positions(self, start_fens: Sequence[str] | None) -> None:
        for member in self.members:
            member.set_start_positions(start_fens)

    def observe(self, states: pgx.State) -> None:
        for member in self.members:
            member.observe(states)

    def close(self) -> None:
        for member in self.members:
            member.close()


# --- the match loop ---------------------------------------------------------------------------------------------------


def start_states(game: Game, num_games: int, key: jax.Array, start_fens: Sequence[str] | None) -> pgx.State:
    """Batched start positions: ``num_games`` standard ones, or one per FEN of ``start_fens``."""
    init = game.batched_init
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
               progress=None, start_fens: Sequence[str] | None = None,
               second_moves_first: Sequence[bool] | None = None) -> list[GameRecord]:
    """``num_games`` games in lock step, ``first`` moving first (from ``start_fens`` when given) except in the lanes
    where ``second_moves_first`` [num_games] is true; each record's ``first_player`` is that lane's first mover and
    its score is from that side.

    Each ply, ``first`` then ``second`` is asked to move in its lanes (``select_actions(states, key, active)``) or, if
    it moves in none, shown the positions (``observe``).  The agent to move in the lanes without a swap gets the
    ply's key (the key alone decides a batch without swaps, as before swaps existed); the other agent gets that key
    with 1 folded in.  An action that is not legal in an active lane is an error naming the agent.
    """
    step = game.batched_step
    key, init_key = jax.random.split(key)
    states = start_states(game, num_games, init_key, start_fens)
    agents = (first, second)
    swapped = np.zeros(num_games, bool) if second_moves_first is None else np.asarray(second_moves_first, bool)
    if swapped.shape != (num_games,):
        raise ValueError(f"second_moves_first: {num_games} games need {num_games} flags, got shape {swapped.shape}")
    for agent in agents:
        agent.new_game()
        if start_fens is not None:
            agent.set_start_positions(list(start_fens))
    moves: list[list[str]] = [[] for _ in range(num_games)]
    movers: list[list[str]] = [[] for _ in range(num_games)]
    annotations: list[list[dict[str, Any]]] = [[] for _ in range(num_games)]
    scores = np.zeros(num_games)  # from each lane's first player's side, once finished
    finished = np.asarray(states.terminated).copy()
    if finished.any():
        raise ValueError(f"start_fens: the game is already over in {[start_fens[i] for i in np.flatnonzero(finished)]}")
    plies = np.zeros(num_games, np.int32)
    for ply in range(max_game_plies):
        key, move_key = jax.random.split(key)
        first_agent_moves = swapped == bool(ply % 2)  # [B] lanes where ``first`` (not the lane's first mover) moves
        actions = np.zeros(num_games, np.int32)
        host_states = jax.device_get(states)
        for index, agent in enumerate(agents):
            lanes = ~finished & (first_agent_moves if index == 0 else ~first_agent_moves)
            if not lanes.any():
                agent.observe(states)
                continue
            agent_key = move_key if index == ply % 2 else jax.random.fold_in(move_key, 1)
            agent_actions = np.asarray(agent.select_actions(states, agent_key, lanes), np.int32)
            names, notes = agent.mover_names(num_games), agent.move_annotations(num_games)
            for lane in np.flatnonzero(lanes):
                state = _select(host_states, lane)
                action = int(agent_actions[lane])
                if not 0 <= action < state.legal_action_mask.shape[-1] or not state.legal_action_mask[action]:
                    raise ValueError(f"{names[lane]} chose action {action}, which is not legal in game lane {lane} "
                                     f"at ply {ply}")
                actions[lane] = action
                moves[lane].append(game.action_to_text(action, state))
                movers[lane].append(names[lane])
                annotations[lane].append(dict(notes[lane]))
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
    names = [(second.name, first.name) if swapped[lane] else (first.name, second.name) for lane in range(num_games)]
    return [GameRecord(names[i][0], names[i][1], moves[i], float(scores[i]), int(plies[i]), bool(capped[i]),
                       start_fen=None if start_fens is None else start_fens[i], movers=movers[i],
                       annotations=annotations[i] if any(annotations[i]) else [])
            for i in range(num_games)]


def play_match(game: Game, agent_a: Agent, agent_b: Agent, num_games: int, key: jax.Array,
               max_game_plies: int = 512, show_progress: bool = True,
               start_fens: Sequence[str] | None = None, alternate_colours: bool = True) -> Match:
    """``num_games`` games (an even number: half with each agent moving first); W/D/L from ``agent_a``'s side.

    With ``start_fens``, each FEN is played twice, once with each agent to move first, so ``num_games`` must be
    twice their number.  With ``alternate_colours=False``, ``agent_a`` moves first in every game (one batch of
    ``num_games`` lanes under ``key``, any number of games; a FEN is then played once).
    """
    if alternate_colours and (num_games < 2 or num_games % 2):
        raise ValueError(f"num_games must be an even number of at least 2, got {num_games}")
    if num_games < 1:
        raise ValueError(f"num_games must be at least 1, got {num_games}")
    if agent_a.name == agent_b.name:
        raise ValueError(f"the two agents need different names, both are {agent_a.name!r}")
    if start_fens is not None:
        start_fens = list(start_fens)
        plays = 2 if alternate_colours else 1
        if num_games != plays * len(start_fens):
            raise ValueError(f"start_fens: each of the {len(start_fens)} FENs is played {plays} time(s)"
                             + (" (colours swapped)" if alternate_colours else "")
                             + f", so num_games must be {plays * len(start_fens)}, got {num_games}")
    fallbacks_before = {agent.name: agent.fallback_moves for agent in (agent_a, agent_b)
                        if hasattr(agent, "fallback_moves")}
    with progress_bar(f"{agent_a.name} vs {agent_b.name}", num_games, unit="game", enabled=show_progress) as bar:
        if alternate_colours:
            key_a, key_b = jax.random.split(key)
            records = play_games(game, agent_a, agent_b, num_games // 2, key_a, max_game_plies, bar, start_fens)
            records += play_games(game, agent_b, agent_a, num_games // 2, key_b, max_game_plies, bar, start_fens)
        else:
            records = play_games(game, agent_a, agent_b, num_games, key, max_game_plies, bar, start_fens)
    scores_a = [r.first_player_score if r.first_player == agent_a.name else 1 - r.first_player_score for r in records]
    result = MatchResult(agent_a.name, agent_b.name, wins=sum(s == 1 for s in scores_a),
                         draws=sum(s == 0.5 for s in scores_a), losses=sum(s == 0 for s in scores_a))
    fallbacks = {agent.name: agent.fallback_moves - fallbacks_before[agent.name] for agent in (agent_a, agent_b)
                 if agent.name in fallbacks_before}
    return Match(result, records, fallbacks)


def write_pgn(game: Game, match: Match, path: str | pathlib.Path, event: str = "zerolab match") -> pathlib.Path:
    return write_games(game, match.games, path, event)
