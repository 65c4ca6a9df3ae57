"""Self-play: batched games in one jitted ``lax.scan`` over plies, built from small replaceable parts.

Each ply: the **move rule** decides for all games (default: one search), the **temperature schedule** samples from
the visit counts early in a game (the search's choice otherwise), a vmapped pgx step plays the moves, the **reward
rule** scores them, and the **lane rule**'s step starts a fresh game in every lane whose game ended (its ``init``
made the call's first games; the training loop carries the lanes into the next call, so a game may span calls).
A game that reaches ``max_game_plies`` ends (a draw under pgx's rewards).  The scan records one frame per game and ply, stored as the
replay window stores it (:class:`zerolab.selfplay.frames.PackedFrames`: observation planes as bits or one value where
the game declares them so, legal masks as bits, sparse policy targets), so that a device holds the stored bytes of its
frames, not dense planes and policies; **value targets**
come from the final outcomes by a reverse scan; frames whose game did not finish inside the scan have none (their
``value_mask`` is false): the training loop keeps them pending until their game ends in a later call.  A long call logs its progress from inside the scan (``self-play: P of T plies``, a host callback
every ``SelfPlayConfig.progress_interval`` plies: by default every eighth of a call of 256 plies or more).

The parts are typed hooks (:mod:`zerolab.selfplay.types`), each with today's AlphaZero behaviour as its default
(:mod:`zerolab.selfplay.hooks`).  :func:`make_play_fn` builds one device's self-play from them; the program over all
devices of a mesh is :func:`zerolab.selfplay.programs.make_selfplay_fn`.

**Random streams.**  The core splits the keys and hands each hook its own; no hook splits a key of the core's.  A
call's key is split in 4: stream 0 is the scan's (the first ply's key), streams 1–3 are the lane rule's ``init``'s
(``keys [LANE_INIT_KEYS]``; the standard lane rule draws its games from the first).  A ply's key is split in 5: the
next ply's key (stream 0), the move rule's (1), the temperature schedule's (2) and the lane rule's ``step``'s,
streams 3–4 (``keys [LANE_STEP_KEYS]``; the standard lane rule draws its fresh games from the first, SAI its branch
points from the first and its fresh games from the second).  A hook that wants more keys splits one of its own.
(With JAX's default partitionable threefry, stream i of ``split(key, n)`` is the same for every n > i: these are the
streams the core and SAI drew before the keys were handed out.)
"""

from __future__ import annotations

import logging
import time
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from zerolab.games import Game
from zerolab.search.config import SearchConfig, SearchRules
from zerolab.selfplay.frames import PackedFrames, frame_codec, frame_policy_width, pack_frames
from zerolab.selfplay.hooks import (
    choose_actions, observation_hash, pgx_reward, ply_summary, search_move_rule, standard_lane_rule, value_targets,
)
from zerolab.selfplay.types import (
    LANE_INIT_KEYS, LANE_STEP_KEYS, GameRule, LaneRule, Lanes, MoveRule, PlayFn, PlayVariables, PlayedPly, PlyCarry,
    PlyRecord, SelfPlayConfig,
)

logger = logging.getLogger(__name__)

#: Reports of one ply this close together are the devices of one call, logged once.
DUPLICATE_SECONDS = 5.0


def call_streams(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A self-play call's key → (the scan's key, the lane rule's ``keys [LANE_INIT_KEYS]`` for ``init`` or
    ``resume``): streams 0 and 1–3 of the call's key (module docstring, "Random streams")."""
    streams = jax.random.split(key, 1 + LANE_INIT_KEYS)
    return streams[0], streams[1:]


def make_play_fn(
    game: Game,
    move_rule: MoveRule,
    config: SelfPlayConfig,
    lane_rule: LaneRule | None = None,
    game_rule: GameRule | None = None,
) -> PlayFn:
    """The core's per-device self-play: ``play(variables, key, num_games, frozen=None, settings=None) ->
    (PackedFrames, PlyRecord)`` (a :data:`~zerolab.selfplay.types.PlayFn`; ``settings`` reach the lane rule), a call
    on fresh lanes; and, as its attributes, the calls that carry lanes from one call to the next (the training loop's):
    ``play.init_lanes(variables, key, num_games, frozen=None, settings=None) -> Lanes`` (a run's first games: those
    ``play`` starts with the same key) and ``play.play_lanes(variables, key, num_games, frozen, settings, lanes) ->
    (PackedFrames, PlyRecord, Lanes)`` (one call continuing ``lanes``: ``play`` on ``init_lanes``' lanes, bit for bit,
    where the lane rule has no ``resume``).  Frames of a game that does not end inside a call have no value target
    (``value_mask`` false); the training loop keeps them until their game ends (:mod:`zerolab.training.pending`).

    The lane rule's ``init``, then a scan over ``config.plies_per_iteration`` plies: ``move_rule.act``, the
    temperature schedule (where the decision carries visit counts), a vmapped pgx step, the game rule's reward and the
    lane rule's ``step``; then the value targets and the game rule's summary of the records.  ``lane_rule`` None: the
    core's (:func:`~zerolab.selfplay.hooks.standard_lane_rule`, fresh games from the start position, no carry);
    ``game_rule``'s ``None`` parts are the core's.
    """
    lane_rule = lane_rule or standard_lane_rule(game)
    game_rule = game_rule or GameRule()
    reward_fn = game_rule.reward or pgx_reward
    summary_fn = game_rule.summarize or ply_summary

    codec, policy_width = frame_codec(game), frame_policy_width(game)
    progress = ProgressLog()

    def run_scan(player_variables: PlayVariables, key: jax.Array, lanes: Lanes, num_games: int, settings: Any
                 ) -> tuple[PackedFrames, PlyRecord, Lanes]:
        """``config.plies_per_iteration`` plies from ``lanes`` with the scan's key ``key``: the frames (value
        targets of the games that end inside the call), the records and the lanes after the last ply."""

        def one_ply(carry: PlyCarry, ply_index: jax.Array | None):
            if ply_index is not None:
                log_progress(ply_index + 1, config.progress_interval, config.plies_per_iteration, progress)
            lanes = carry.lanes
            ply_streams = jax.random.split(carry.key, 3 + LANE_STEP_KEYS)
            key, act_key, sample_key, lane_keys = ply_streams[0], ply_streams[1], ply_streams[2], ply_streams[3:]
            states = lanes.states
            decision = move_rule.act(player_variables, act_key, states, lanes.ply, lanes.rule_carry)
            action = decision.action
            if decision.visit_counts is not None:
                action = choose_actions(sample_key, decision.visit_counts, decision.action, lanes.ply, config)
            next_states = jax.vmap(game.step)(states, action)
            game_over = next_states.terminated | (lanes.ply + 1 >= config.max_game_plies)
            reward = reward_fn(lanes, next_states, game_over)
            played = PlayedPly(decision=decision, action=action, next_states=next_states, game_over=game_over,
                               reward=reward)
            next_lanes, statistics = lane_rule.step(lane_keys, lanes, played, settings)
            stored, inexact = pack_frames(codec, policy_width, states.observation, states.legal_action_mask,
                                          decision.policy_target)
            frame = PackedFrames(arrays=stored, value_target=jnp.zeros(num_games),
                                 value_mask=jnp.zeros(num_games, bool), inexact=inexact,
                                 extras=dict(decision.frame_extras), codec=codec)
            game_ply = lanes.ply - lanes.first_ply
            record = PlyRecord(
                action=action,
                reward=reward,
                game_over=game_over,
                first_player_moved=game_ply % 2 == 0,
                game_length=game_ply + 1,
                position_hash=observation_hash(states.observation),
                summary=dict(decision.summary),
            )
            return PlyCarry(lanes=next_lanes, key=key), (frame, record, statistics)

        carry = PlyCarry(lanes=lanes, key=key)
        plies = jnp.arange(config.plies_per_iteration) if config.progress_interval else None
        last, (frames, records, statistics) = jax.lax.scan(one_ply, carry, plies, length=config.plies_per_iteration)
        value, known = value_targets(records.reward, records.game_over)  # each frame's game outcome
        frames = frames.replace(value_target=value, value_mask=known)
        return frames, records.replace(summary=summary_fn(records, statistics, last.lanes)), last.lanes

    def play(variables: Any, key: jax.Array, num_games: int, frozen_variables: Any = None, settings: Any = None
             ) -> tuple[PackedFrames, PlyRecord]:
        player_variables = PlayVariables(learner=variables, frozen=frozen_variables)
        scan_key, init_keys = call_streams(key)
        lanes = lane_rule.init(player_variables, init_keys, num_games, settings)
        frames, records, _ = run_scan(player_variables, scan_key, lanes, num_games, settings)
        return frames, records

    def init_lanes(variables: Any, key: jax.Array, num_games: int, frozen_variables: Any = None,
                   settings: Any = None) -> Lanes:
        """The lanes of a run's first call with key ``key``: the games ``play`` would start with that key."""
        player_variables = PlayVariables(learner=variables, frozen=frozen_variables)
        return lane_rule.init(player_variables, call_streams(key)[1], num_games, settings)

    def play_lanes(variables: Any, key: jax.Array, num_games: int, frozen_variables: Any, settings: Any,
                   lanes: Lanes) -> tuple[PackedFrames, PlyRecord, Lanes]:
        """One call that continues ``lanes`` (the lane rule's ``resume`` first, where it has one): the frames, the
        records and the lanes to continue in the next call."""
        player_variables = PlayVariables(learner=variables, frozen=frozen_variables)
        scan_key, resume_keys = call_streams(key)
        if lane_rule.resume is not None:
            lanes = lane_rule.resume(player_variables, resume_keys, lanes, settings)
        return run_scan(player_variables, scan_key, lanes, num_games, settings)

    play.init_lanes = init_lanes
    play.play_lanes = play_lanes
    return play


class ProgressLog:
    """The host side of a self-play call's progress lines: logs ``self-play: P of T plies`` and the seconds since the
    previous line of the call, once however many devices report the same ply (each device of a mesh calls it)."""

    def __init__(self) -> None:
        self.last_ply, self.last_time = 0, time.monotonic()

    def __call__(self, ply: Any, total: int) -> None:
        ply, now = int(ply), time.monotonic()
        if ply == self.last_ply and now - self.last_time < DUPLICATE_SECONDS:
            return  # another device's report of the same ply
        since = f", {now - self.last_time:.1f} s after ply {self.last_ply}" if 0 < self.last_ply < ply else ""
        self.last_ply, self.last_time = ply, now
        logger.info("self-play: %d of %d plies%s", ply, total, since)


def log_progress(ply: jax.Array, interval: int, total: int, progress: ProgressLog) -> None:
    """Inside the scan: calls ``progress(ply, total)`` on the host after every ``interval``-th ply."""
    jax.lax.cond(ply % interval == 0, lambda: jax.debug.callback(progress, ply, total), lambda: None)


def play(
    game: Game,
    network: nn.Module,
    search_config: SearchConfig,
    config: SelfPlayConfig,
    variables: Any,
    key: jax.Array,
    num_games: int,
    rules: SearchRules | None = None,
) -> tuple[PackedFrames, PlyRecord]:
    """Plays ``num_games`` games for ``config.plies_per_iteration`` plies on one device with the default parts."""
    play_fn = make_play_fn(game, search_move_rule(game, network, search_config, rules), config)
    return play_fn(variables, key, num_games)
