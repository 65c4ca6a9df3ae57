"""Self-play's default parts, each today's AlphaZero behaviour, and the helpers a method's hooks build on.

* The move rule: :func:`search_move_rule` (one search with the learner's network) and the temperature schedule that
  samples from its visits (:func:`choose_actions`, :func:`move_temperature`).
* The lane rule (:class:`zerolab.selfplay.types.LaneRule`): :func:`standard_lane_rule`, fresh games from initial
  states (:func:`standard_initial_states`, the game's start position; :func:`initial_states_from_fens`).
* The game rule's parts (:class:`zerolab.selfplay.types.GameRule`): :func:`pgx_reward`, :func:`ply_summary`.
* Value targets: :func:`value_targets` (each frame's game outcome), by the one reverse scan over game ends
  :func:`backward_game_values` (SAI's final margins use it too).
* Helpers for lane rules: :func:`advance_lanes`, :func:`restart_games`, :func:`select_where`; and
  :func:`observation_hash`, the records' position hash.

The hooks' types are in :mod:`zerolab.selfplay.types`; the scan that calls them, and its random streams, in
:mod:`zerolab.selfplay.scan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import pgx

from zerolab.games import Game
from zerolab.search.config import SearchConfig, SearchRules
from zerolab.search.mcts import run_search
from zerolab.selfplay.types import (
    InitCarryFn, InitialStatesFn, LaneRule, Lanes, MoveRule, PlayVariables, PlayedPly, PlyDecision, PlyRecord,
    SelfPlayConfig,
)


def search_move_rule(game: Game, network: nn.Module, search_config: SearchConfig,
                     rules: SearchRules | None = None) -> MoveRule:
    """The default move rule: one search with the learner's network; its visits feed the temperature schedule."""

    def act(variables: PlayVariables, key: jax.Array, states: pgx.State, ply: jax.Array, carry: Any) -> PlyDecision:
        del ply
        searched = run_search(search_config, game, network, variables.learner, key, states, rules=rules)
        return PlyDecision(action=searched.action, policy_target=searched.policy_target, carry=carry,
                           visit_counts=searched.visit_counts, summary=searched.summary)

    return MoveRule(act=act)


def standard_initial_states(game: Game) -> InitialStatesFn:
    """Fresh games from the game's start position (pgx's ``init``)."""

    def initial_states(key: jax.Array, num_games: int) -> pgx.State:
        return jax.vmap(game.init)(jax.random.split(key, num_games))

    return initial_states


def initial_states_from_fens(game: Game, fens: Sequence[str]) -> InitialStatesFn:
    """Fresh games from positions drawn uniformly from ``fens`` (validated here, on the host, once)."""
    if not fens:
        raise ValueError("initial_states_from_fens: the FEN list is empty")
    states = [game.from_fen(fen) for fen in fens]
    stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)

    def initial_states(key: jax.Array, num_games: int) -> pgx.State:
        indices = jax.random.randint(key, (num_games,), 0, len(fens))
        return jax.tree.map(lambda leaf: leaf[indices], stacked)

    return initial_states


def value_targets(reward: jax.Array, game_over: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(value_target [T, B], value_mask [T, B])`` from per-ply rewards (:func:`backward_game_values`).

    ``reward[t]`` is from the view of the player who moved at ply t; the target at t is the final outcome from
    that same player's view: ``v_t = r_t`` when the game ended at t, else ``−v_{t+1}`` (two players alternate).
    """
    return backward_game_values(reward, game_over)


def backward_game_values(end_value: jax.Array, game_over: jax.Array, alternating: bool = True,
                         carry_in: tuple[jax.Array, jax.Array] | None = None) -> tuple[jax.Array, jax.Array]:
    """``(value [T, B], known [T, B])``: each ply's value at its game's end, by one reverse scan over the plies.

    ``value[t] = end_value[t]`` where a game ended at ply t (``game_over[t]``), else ``−value[t+1]`` when
    ``alternating`` (a value from the mover's view: the next ply's mover is the other player), ``value[t+1]``
    otherwise (a value from one fixed view, e.g. Black's margin).  ``known[t]``: a game ended at ply t or later in
    the lane, so ``value[t]`` is its game's (elsewhere ``value`` is 0, the game unfinished when the scan stopped).

    ``carry_in``: ``(value [B], known [B])`` of the ply after the last one (the first ply of the next self-play
    call: its ``value[0]`` and ``known[0]``), so that plies of a game that went on into that call get its value; None:
    nothing known after the last ply.  The training loop seeds a game's pending frames so
    (:mod:`zerolab.training.pending`).
    """

    def backward(carry, inputs):
        value_after, known_after = carry
        at_end, over = inputs
        value = jnp.where(over, at_end, -value_after if alternating else value_after)
        known = over | known_after
        return (value, known), (value, known)

    if carry_in is None:
        carry_in = (jnp.zeros_like(end_value[0]), jnp.zeros_like(game_over[0]))
    else:
        carry_in = (jnp.asarray(carry_in[0], end_value.dtype), jnp.asarray(carry_in[1], game_over.dtype))
    _, (value, known) = jax.lax.scan(backward, carry_in, (end_value, game_over), reverse=True)
    return value, known


def observation_hash(observation: jax.Array) -> jax.Array:
    """[..., 2] float32 random projections of each observation: equal positions give equal pairs."""
    flat = observation.reshape(observation.shape[:-3] + (-1,)).astype(jnp.float32)
    weights = jax.random.uniform(jax.random.key(20240229), (flat.shape[-1], 2), minval=0.5, maxval=1.5)
    return flat @ weights


def move_temperature(ply: jax.Array, config: SelfPlayConfig) -> jax.Array:
    """[B] sampling temperature of the ``moves`` schedule at each game's ``ply`` (see :class:`SelfPlayConfig`)."""
    move = (ply // 2).astype(jnp.float32)
    if config.temperature_decay_moves > 0:
        fraction = jnp.clip((move - config.temperature_delay_moves) / config.temperature_decay_moves, 0.0, 1.0)
    else:
        fraction = (move >= config.temperature_delay_moves).astype(jnp.float32)
    temperature = config.temperature + (config.temperature_end - config.temperature) * fraction
    if config.temperature_cutoff_moves > 0:
        temperature = jnp.where(move >= config.temperature_cutoff_moves, config.temperature_end, temperature)
    return temperature


def choose_actions(key: jax.Array, visit_counts: jax.Array, search_action: jax.Array, ply: jax.Array,
                   config: SelfPlayConfig) -> jax.Array:
    """[B] actions: sampled ∝ visits^(1/τ) where the schedule's τ > 0 at ``ply``, the search's choice elsewhere."""
    if config.temperature_schedule == "plies":
        if config.temperature_plies <= 0:
            return search_action
        logits = jnp.log(jnp.maximum(visit_counts, 1e-30)) / config.temperature
        logits = jnp.where(visit_counts > 0, logits, -jnp.inf)
        sampled = jax.random.categorical(key, logits).astype(search_action.dtype)
        return jnp.where(ply < config.temperature_plies, sampled, search_action)
    temperature = move_temperature(ply, config)
    logits = jnp.log(jnp.maximum(visit_counts, 1e-30)) / jnp.maximum(temperature, 1e-6)[:, None]
    logits = jnp.where(visit_counts > 0, logits, -jnp.inf)
    sampled = jax.random.categorical(key, logits).astype(search_action.dtype)
    return jnp.where(temperature > 0, sampled, search_action)


def select_where(mask: jax.Array, new: Any, old: Any) -> Any:
    """``new`` where ``mask`` (over the leaves' leading axes, e.g. [B] or [B, M]), ``old`` elsewhere, leaf by leaf."""
    return jax.tree.map(
        lambda fresh, current: jnp.where(mask.reshape(mask.shape + (1,) * (current.ndim - mask.ndim)), fresh, current),
        new, old,
    )


def advance_lanes(lanes: Lanes, played: PlayedPly) -> Lanes:
    """The lanes one ply on, every game going on: the positions after the moves, ``ply + 1``, the rule's carry."""
    return lanes.replace(states=played.next_states, ply=lanes.ply + 1, rule_carry=played.decision.carry)


def restart_games(lanes: Lanes, game_over: jax.Array, states: pgx.State, first_ply: jax.Array,
                  rule_carry: Any = None) -> Lanes:
    """Lanes whose game is over start the game given by ``states``, ``first_ply`` and ``rule_carry`` ([B] each;
    ``rule_carry`` None: the lanes keep theirs); the other lanes and the shared state are unchanged."""
    new = (states, first_ply, first_ply)
    old = (lanes.states, lanes.ply, lanes.first_ply)
    if rule_carry is not None:
        new, old = new + (rule_carry,), old + (lanes.rule_carry,)
    states, ply, first_ply, *kept_carry = select_where(game_over, new, old)
    return lanes.replace(states=states, ply=ply, first_ply=first_ply,
                         rule_carry=kept_carry[0] if kept_carry else lanes.rule_carry)


def pgx_reward(lanes: Lanes, next_states: pgx.State, game_over: jax.Array) -> jax.Array:
    """The core's :data:`RewardFn`: pgx's reward of the player who moved (a game cut at the ply cap is a draw)."""
    del game_over
    return next_states.rewards[jnp.arange(next_states.rewards.shape[0]), lanes.states.current_player]


def standard_lane_rule(game: Game, initial_states: InitialStatesFn | None = None,
                       init_carry: InitCarryFn | None = None) -> LaneRule:
    """The core's :class:`LaneRule`: every game is a fresh one from ``initial_states`` (default: the game's start
    position, :func:`standard_initial_states`) at ply 0 with a move-rule carry from ``init_carry`` (None: no carry);
    no shared state, no statistics.

    ``init`` draws the call's first games from its first key, ``step`` the fresh games of the lanes whose game ended
    from its first key; ``init_carry`` gets that key folded with 1.
    """
    from_start_position = initial_states is None
    initial_states = initial_states or standard_initial_states(game)

    def fresh_carry(key: jax.Array, num_games: int) -> Any:
        return None if init_carry is None else init_carry(jax.random.fold_in(key, 1), num_games)

    def init(variables: PlayVariables, keys: jax.Array, num_games: int, settings: Any) -> Lanes:
        del variables, settings
        zeros = jnp.zeros(num_games, jnp.int32)
        return Lanes(states=initial_states(keys[0], num_games), ply=zeros, first_ply=zeros,
                     rule_carry=fresh_carry(keys[0], num_games))

    def step(keys: jax.Array, lanes: Lanes, played: PlayedPly, settings: Any) -> tuple[Lanes, dict]:
        del settings
        num_games = played.game_over.shape[0]
        advanced = advance_lanes(lanes, played)

        def restart(advanced: Lanes) -> Lanes:
            return restart_games(advanced, played.game_over, initial_states(keys[0], num_games),
                                 jnp.zeros(num_games, jnp.int32), fresh_carry(keys[0], num_games))

        # fresh games are made only on the plies where some game ended (most plies end none)
        return jax.lax.cond(jnp.any(played.game_over), restart, lambda advanced: advanced, advanced), {}

    return LaneRule(init=init, step=step, from_start_position=from_start_position)


def ply_summary(records: PlyRecord, statistics: dict, lanes: Lanes) -> dict:
    """The core's :data:`RecordsSummaryFn`: the move rule's per-ply summary as it is."""
    del statistics, lanes
    return records.summary
