"""Self-play: batched games in one jitted ``lax.scan`` over plies, built from small replaceable parts.

Each ply: the **move rule** decides for all games (default: one search), the **temperature schedule** samples from
the visit counts early in a game (the search's choice otherwise), a vmapped pgx step plays the moves, the **reward
rule** scores them, and the **reset rule** starts a fresh game in every lane whose game ended.  A game that reaches
``max_game_plies`` ends (a draw under pgx's rewards).  The scan records one frame per game and ply, stored as the
replay window stores it (:class:`zerolab.selfplay.frames.PackedFrames`: observation planes as bits or one value where
the game declares them so, legal masks as bits, sparse policy targets), so that a device holds the stored bytes of its
frames, not dense planes and policies; **value targets**
come from the final outcomes by a reverse scan, and frames whose game did not finish inside the scan are masked out of
the value loss.

The parts are typed hooks (aliases below), each with today's AlphaZero behaviour as its default; a method
(:mod:`zerolab.training.method`) may replace any of them or the whole per-device play function:

* :data:`ActFn` — the per-ply move rule ``act(variables, key, states, ply, carry) -> PlyDecision``.  Per-game
  state lives in ``carry`` (leaves ``[B, ...]``), reset by :data:`InitCarryFn` when a game restarts; frozen extra
  variables (a partner network) reach it through :class:`PlayVariables`.
* :data:`InitialStatesFn` — ``(key, num_games) -> states``: fresh games (a FEN list, odds positions, ...).
* :class:`GameRule` — how the games in the lanes (:class:`Lanes`) begin, end and follow one another:
  :data:`StartFn` (the call's first games and the lanes' shared per-device state), :data:`RewardFn` (each move's
  reward from its mover's view), :data:`ResetFn` (what a finished lane plays next, and per-ply statistics) and
  :data:`RecordsSummaryFn` (the records' statistics at the end of the call).  SAI uses them for per-game komi, games
  branched from earlier positions through a per-device queue, and scoring at each game's komi.
* :data:`ValueTargetsFn` — ``(frames, records) -> (value_target, value_mask)``.

**Random streams.**  A call's key gives the scan's key as stream 0 (``jax.random.split(key, n)[0]``); the standard
start draws its games from stream 1.  A ply's key gives the next ply's key (stream 0), the move rule's (1), the
temperature schedule's (2) and the standard reset's (3).  A start or reset hook gets the whole call or ply key and
draws from the streams the core does not use.  (With JAX's default partitionable threefry, stream i of
``split(key, n)`` is the same for every n > i.)

On a mesh the games are split over the devices with ``shard_map``: each device plays its own games with its own
random key, and no data crosses devices during self-play.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import pgx
from jax.sharding import Mesh, PartitionSpec

from zerolab.config import check_at_least, check_choice, section_dataclass
from zerolab.devices import DATA_AXIS, GIB, check_divisible, device_memory_budget, program_memory, replicate
from zerolab.games import Game
from zerolab.search.mcts import SearchConfig, SearchRules, run_search
from zerolab.selfplay.chunks import choose_chunk_games, play_in_chunks
from zerolab.selfplay.frames import PackedFrames, frame_codec, frame_policy_width, pack_frames

logger = logging.getLogger(__name__)

TEMPERATURE_SCHEDULES = ("plies", "moves")


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Sizes of one self-play batch.

    Attributes:
      num_games: games played in parallel (over all devices).
      plies_per_iteration: length of the scan; finished games restart inside it.
      max_game_plies: a game this long ends as a draw.
      temperature_schedule: ``plies`` (AlphaZero's: ``temperature`` for the first ``temperature_plies`` plies, then
        the search's choice) or ``moves`` (lc0's, over full moves m = ply // 2 of the game: ``temperature`` while
        m < ``temperature_delay_moves``, then a linear decay that reaches ``temperature_end`` after
        ``temperature_decay_moves`` more moves, and ``temperature_end`` from move ``temperature_cutoff_moves`` on
        when that is positive).  A temperature of 0 plays the search's choice.
      temperature_plies: the first plies of each game sample ``visits ** (1 / temperature)`` (``plies`` schedule).
      temperature: sampling temperature τ₀.
      device_memory_gib: the memory one device's self-play program may take (GiB); a device whose games do not fit
        plays them in chunks (:mod:`zerolab.selfplay.chunks`).  None: the memory the backend lets JAX allocate on
        the device (GPUs, TPUs), and no chunks on a backend that reports none (the CPU).
    """

    num_games: int = 64
    plies_per_iteration: int = 64
    max_game_plies: int = 256
    temperature_plies: int = 0
    temperature: float = 1.0
    temperature_schedule: str = "plies"
    temperature_delay_moves: int = 0
    temperature_decay_moves: int = 0
    temperature_end: float = 0.0
    temperature_cutoff_moves: int = 0
    device_memory_gib: float | None = None

    def __post_init__(self):
        for name in ("num_games", "plies_per_iteration", "max_game_plies"):
            check_at_least(f"selfplay.{name}", getattr(self, name), 1)
        check_choice("selfplay.temperature_schedule", self.temperature_schedule, TEMPERATURE_SCHEDULES)
        for name in ("temperature_plies", "temperature_delay_moves", "temperature_decay_moves",
                     "temperature_cutoff_moves"):
            if getattr(self, name) < 0:
                raise ValueError(f"selfplay.{name} must be >= 0, got {getattr(self, name)}")
        if self.temperature < 0 or self.temperature_end < 0:
            raise ValueError("selfplay temperatures must be >= 0")
        if self.device_memory_gib is not None and not self.device_memory_gib > 0:
            raise ValueError(f"selfplay.device_memory_gib must be > 0 or None, got {self.device_memory_gib}")

    @classmethod
    def from_config(cls, config: Any) -> SelfPlayConfig:
        """From a ConfigDict (or mapping); keys absent from it keep their defaults (configs of older runs;
        :func:`zerolab.config.section_dataclass`)."""
        return section_dataclass(cls, config, "selfplay")




@flax.struct.dataclass
class PlyRecord:
    """What the scan keeps of each ply, before value targets are computed.  All [T, B]."""

    action: jax.Array  # the move played
    reward: jax.Array  # from the view of the player who moved
    game_over: jax.Array  # the move ended the game (or hit max_game_plies)
    first_player_moved: jax.Array  # the mover was the game's first player (the side to move at its start)
    game_length: jax.Array  # plies played when the game ended (valid where game_over)
    position_hash: jax.Array  # [T, B, 2] hash of the position searched, for counting distinct positions
    summary: dict = flax.struct.field(default_factory=dict)  # {name: [T, B]} the move rule's statistics


@flax.struct.dataclass
class Lanes:
    """The games in play, one per lane (leaves ``[B, ...]``), and the state the lanes of one device share.

    Attributes:
      states: [B] the positions to move from.
      ply: [B] int32 plies of each position, counted from ``first_ply`` at its game's first position; the
        temperature schedule and the ply cap read it.
      first_ply: [B] int32 the ply of each game's first position: 0 for a game from an initial position, the plies
        already played for a game that continues another game's position (SAI's branches).  The records count a
        game's own plies, ``ply − first_ply``.
      rule_carry: the move rule's per-game state (leaves [B, ...]; None without one).
      shared: the game rule's per-device state (any pytree, e.g. SAI's queue of pending branches; None by default).
    """

    states: Any
    ply: jax.Array
    first_ply: jax.Array
    rule_carry: Any = None
    shared: Any = None


@flax.struct.dataclass
class PlyCarry:
    """What the scan carries from ply to ply: the lanes and the next ply's key."""

    lanes: Lanes
    key: jax.Array


@flax.struct.dataclass
class PlayVariables:
    """What a move rule plays with: the learner's variables and, for rules that have them, frozen ones."""

    learner: Any
    frozen: Any = None


@flax.struct.dataclass
class PlyDecision:
    """A move rule's decision for a batch of B positions.

    Attributes:
      action: [B] the move to play when the temperature rule does not sample.
      policy_target: [B, A] what the network learns at this position.
      carry: the rule's per-game state after this ply (leaves [B, ...]; None without one).
      visit_counts: [B, A] weights the temperature schedule samples from (``visits ** (1 / τ)``), or None for rules
        that choose their moves themselves.
      frame_extras: ``{name: [B, ...]}`` per-frame fields stored with the frame (see :attr:`zerolab.selfplay.frames.Frames.extras`).
      summary: ``{name: [B]}`` statistics averaged into the iteration's metrics (e.g. the search's summary).
    """

    action: jax.Array
    policy_target: jax.Array
    carry: Any = None
    visit_counts: Any = None
    frame_extras: dict = flax.struct.field(default_factory=dict)
    summary: dict = flax.struct.field(default_factory=dict)


@flax.struct.dataclass
class PlayedPly:
    """What one ply did, for the reset rule: the move rule's decision and the moves' results, leaves [B, ...].

    Attributes:
      decision: the move rule's decision (``decision.carry``: the rule's per-game state after the ply).
      action: [B] the moves played.
      next_states: [B] the positions after the moves, before any lane starts a new game.
      game_over: [B] the move ended its game (or reached ``max_game_plies``).
      reward: [B] the reward rule's, from the view of the player who moved.
    """

    decision: PlyDecision
    action: jax.Array
    next_states: Any
    game_over: jax.Array
    reward: jax.Array


ActFn = Callable[[PlayVariables, jax.Array, pgx.State, jax.Array, Any], PlyDecision]
"""``(variables, key, states [B], ply [B], carry) -> PlyDecision``: the per-ply move rule (jittable)."""
InitCarryFn = Callable[[jax.Array, int], Any]
"""``(key, num_games) -> carry``: the move rule's per-game state of fresh games, leaves ``[num_games, ...]``."""
InitialStatesFn = Callable[[jax.Array, int], pgx.State]
"""``(key, num_games) -> states [num_games]``: the positions fresh games start from (jittable)."""
ValueTargetsFn = Callable[[PackedFrames, PlyRecord], tuple[jax.Array, jax.Array]]
"""``(frames [T, B], records [T, B]) -> (value_target [T, B], value_mask [T, B])``."""
PlayFn = Callable[[Any, jax.Array, int, Any], tuple[PackedFrames, PlyRecord]]
"""``(variables, key, num_games, frozen_variables) -> (frames [T, B], records [T, B])``: one device's self-play."""
StartFn = Callable[[PlayVariables, jax.Array, int], Lanes]
"""``(variables, key, num_games) -> lanes``: the games a self-play call starts with (``ply == first_ply``) and the
lanes' shared state.  ``key`` is the call's key: stream 0 is the scan's, the hook draws from the others."""
RewardFn = Callable[[Lanes, pgx.State, jax.Array], jax.Array]
"""``(lanes before the ply, next_states [B], game_over [B]) -> reward [B]`` from the view of the player who moved;
what the value targets are made of (jittable)."""
ResetFn = Callable[[jax.Array, Lanes, PlayedPly], tuple[Lanes, dict]]
"""``(ply key, lanes before the ply, played) -> (lanes of the next ply, statistics)``: every lane goes on with its
game (:func:`advance_lanes`) or, where it ended, starts its next one (:func:`restart_games`); the shared state may
change.  ``statistics`` (``{name: array}``, any shapes) are stacked over the plies for :data:`RecordsSummaryFn`.  The
ply key's streams 0–2 are the core's."""
RecordsSummaryFn = Callable[[PlyRecord, dict, Lanes], dict]
"""``(records [T, B], statistics {name: [T, ...]}, lanes after the last ply) -> {name: [T, B]}``: the records'
summary, whose values ``summarize`` averages into the iteration's metrics (a per-call total is broadcast over
``[T, B]``)."""


@dataclasses.dataclass(frozen=True)
class MoveRule:
    """A per-ply move rule: ``act``, its per-game state's initialiser and the frozen variables it plays with.

    ``frozen_variables`` (e.g. a partner network's) are placed on the devices once and passed to every call as
    ``variables.frozen``; they are arguments of the jitted self-play, not constants compiled into it.
    """

    act: ActFn
    init_carry: InitCarryFn | None = None
    frozen_variables: Any = None


@dataclasses.dataclass(frozen=True)
class GameRule:
    """How games begin, end and follow one another in the lanes: a method's replacements for the core's parts;
    ``None`` keeps the core's (:func:`standard_start`, :func:`pgx_reward`, :func:`standard_reset`,
    :func:`ply_summary`)."""

    start: StartFn | None = None
    reward: RewardFn | None = None
    reset: ResetFn | None = None
    summarize: RecordsSummaryFn | None = None


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


def outcome_value_targets(frames: PackedFrames, records: PlyRecord) -> tuple[jax.Array, jax.Array]:
    """The default :data:`ValueTargetsFn`: each frame's target is its game's final outcome (:func:`value_targets`)."""
    del frames
    return value_targets(records.reward, records.game_over)


def value_targets(reward: jax.Array, game_over: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(value_target [T, B], value_mask [T, B])`` from per-ply rewards by a reverse scan.

    ``reward[t]`` is from the view of the player who moved at ply t; the target at t is the final outcome from
    that same player's view: ``v_t = r_t`` when the game ended at t, else ``−v_{t+1}`` (two players alternate).
    """

    def backward(carry, inputs):
        value_after, outcome_known = carry
        reward, over = inputs
        value = jnp.where(over, reward, -value_after)
        known = over | outcome_known
        return (value, known), (value, known)

    zeros = jnp.zeros_like(reward[0])
    _, (value, known) = jax.lax.scan(
        backward, (zeros, jnp.zeros_like(game_over[0])), (reward, game_over), reverse=True
    )
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


def standard_start(initial_states: InitialStatesFn, init_carry: InitCarryFn | None = None) -> StartFn:
    """The core's :data:`StartFn`: fresh games from ``initial_states`` (stream 1 of the call's key) at ply 0, fresh
    rule carries, no shared state."""

    def start(variables: PlayVariables, key: jax.Array, num_games: int) -> Lanes:
        del variables
        init_key = jax.random.split(key)[1]
        rule_carry = None if init_carry is None else init_carry(jax.random.fold_in(init_key, 1), num_games)
        zeros = jnp.zeros(num_games, jnp.int32)
        return Lanes(states=initial_states(init_key, num_games), ply=zeros, first_ply=zeros, rule_carry=rule_carry)

    return start


def pgx_reward(lanes: Lanes, next_states: pgx.State, game_over: jax.Array) -> jax.Array:
    """The core's :data:`RewardFn`: pgx's reward of the player who moved (a game cut at the ply cap is a draw)."""
    del game_over
    return next_states.rewards[jnp.arange(next_states.rewards.shape[0]), lanes.states.current_player]


def standard_reset(initial_states: InitialStatesFn, init_carry: InitCarryFn | None = None) -> ResetFn:
    """The core's :data:`ResetFn`: a finished lane starts a fresh game from ``initial_states`` (stream 3 of the ply
    key) at ply 0 with a fresh rule carry; no statistics."""

    def reset(key: jax.Array, lanes: Lanes, played: PlayedPly) -> tuple[Lanes, dict]:
        reset_key = jax.random.split(key, 4)[3]
        num_games = played.game_over.shape[0]
        advanced = advance_lanes(lanes, played)

        def restart(advanced: Lanes) -> Lanes:
            rule_carry = None if init_carry is None else init_carry(jax.random.fold_in(reset_key, 1), num_games)
            return restart_games(advanced, played.game_over, initial_states(reset_key, num_games),
                                 jnp.zeros(num_games, jnp.int32), rule_carry)

        # fresh games are made only on the plies where some game ended (most plies end none)
        return jax.lax.cond(jnp.any(played.game_over), restart, lambda advanced: advanced, advanced), {}

    return reset


def ply_summary(records: PlyRecord, statistics: dict, lanes: Lanes) -> dict:
    """The core's :data:`RecordsSummaryFn`: the move rule's per-ply summary as it is."""
    del statistics, lanes
    return records.summary


def make_play_fn(
    game: Game,
    move_rule: MoveRule,
    config: SelfPlayConfig,
    initial_states: InitialStatesFn | None = None,
    value_targets_fn: ValueTargetsFn = outcome_value_targets,
    game_rule: GameRule | None = None,
) -> PlayFn:
    """The core's per-device self-play: ``play(variables, key, num_games, frozen) -> (PackedFrames, PlyRecord)``.

    The game rule's start, then a scan over ``config.plies_per_iteration`` plies: ``move_rule.act``, the temperature
    schedule (where the decision carries visit counts), a vmapped pgx step, the game rule's reward and reset; then the
    value targets and the game rule's summary of the records.  ``game_rule``'s ``None`` parts are the core's, built
    from ``initial_states`` (default: the game's start position) and ``move_rule.init_carry``.
    """
    initial_states = initial_states or standard_initial_states(game)
    game_rule = game_rule or GameRule()
    start = game_rule.start or standard_start(initial_states, move_rule.init_carry)
    reward_fn = game_rule.reward or pgx_reward
    reset = game_rule.reset or standard_reset(initial_states, move_rule.init_carry)
    summary_fn = game_rule.summarize or ply_summary

    codec, policy_width = frame_codec(game), frame_policy_width(game)

    def play(variables: Any, key: jax.Array, num_games: int, frozen_variables: Any = None
             ) -> tuple[PackedFrames, PlyRecord]:
        player_variables = PlayVariables(learner=variables, frozen=frozen_variables)
        carry = PlyCarry(lanes=start(player_variables, key, num_games), key=jax.random.split(key)[0])

        def one_ply(carry: PlyCarry, _):
            lanes = carry.lanes
            key, act_key, sample_key, _ = jax.random.split(carry.key, 4)
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
            next_lanes, statistics = reset(carry.key, lanes, played)
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

        last, (frames, records, statistics) = jax.lax.scan(one_ply, carry, None, length=config.plies_per_iteration)
        value, known = value_targets_fn(frames, records)
        frames = frames.replace(value_target=value, value_mask=known)
        return frames, records.replace(summary=summary_fn(records, statistics, last.lanes))

    return play


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


def make_selfplay_fn(
    game: Game,
    network: nn.Module,
    search_config: SearchConfig,
    config: SelfPlayConfig,
    mesh: Mesh,
    rules: SearchRules | None = None,
    play_fn: PlayFn | None = None,
    frozen_variables: Any = None,
):
    """A jitted ``(variables, key) -> (PackedFrames [T, B, ...], PlyRecord [T, B])`` over all devices of ``mesh``.

    The program is compiled ahead of its first call (logged with its duration).  Under a device memory budget
    (``config.device_memory_gib``, or the device's own memory where the backend reports it) each device plays its
    games in the largest chunks whose compiled program fits (:func:`zerolab.selfplay.chunks.choose_chunk_games`;
    logged), with the same output shapes; without one (the CPU, the key unset) in one chunk.

    ``selfplay.compile(variables, key)`` compiles ahead of a call and returns the seconds it took (0.0 when done
    before).  ``selfplay.lower(variables, key, chunk_games=None)`` lowers the program with chunks of ``chunk_games`` games a
    device (default: all of a device's games, one chunk) without running it; ``experiments plan`` reads its cost and
    memory from there, and ``selfplay.games_per_device`` the sizes a chunk may take.

    ``play_fn`` is one device's self-play (default: :func:`make_play_fn` with the search move rule, ``rules`` and the
    standard initial states and value targets).  ``variables`` must be replicated on the mesh; ``frozen_variables``
    are replicated here once and passed to every call.  Outputs are sharded along the game axis B.
    """
    check_divisible("selfplay.num_games", config.num_games, mesh)
    games_per_device = config.num_games // mesh.devices.size
    if play_fn is None:
        play_fn = make_play_fn(game, search_move_rule(game, network, search_config, rules), config)
    sharded = chunked_selfplay_programs(play_fn, games_per_device, mesh)
    local_device = next(device for device in mesh.devices.flat if device.process_index == jax.process_index())
    budget_bytes = device_memory_budget(config.device_memory_gib, local_device)
    frozen_on_devices = replicate(frozen_variables, mesh) if frozen_variables is not None else None
    compiled = {}  # one executable per signature (shapes, dtypes, shardings) of the arguments

    def lower(variables, key, chunk_games: int | None = None):
        """The program lowered for ``variables`` and ``key`` (concrete or ``jax.ShapeDtypeStruct``s), with chunks of
        ``chunk_games`` games a device (default: one chunk)."""
        return sharded(chunk_games or games_per_device).lower(variables, frozen_on_devices, key)

    def compile_within_budget(variables, key):
        """The executable for these arguments: one chunk a device, or under a budget the largest chunk that fits."""
        if budget_bytes is None:
            return lower(variables, key).compile()
        executables = {}

        def memory_of(chunk_games: int) -> int:
            executables[chunk_games] = lower(variables, key, chunk_games).compile()
            return program_memory(executables[chunk_games]).device_bytes

        choice = choose_chunk_games(games_per_device, memory_of, budget_bytes)
        logger.info("self-play: %d games a device in %d chunk(s) of %d, %.2f GiB a device (budget %.2f GiB)",
                    games_per_device, choice.num_chunks, choice.chunk_games, choice.device_bytes / GIB,
                    budget_bytes / GIB)
        return executables[choice.chunk_games]

    def signature_of(variables, key):
        leaves, structure = jax.tree.flatten((variables, key))
        return (structure, tuple((np.shape(leaf), str(getattr(leaf, "dtype", type(leaf))),
                                  getattr(leaf, "sharding", None)) for leaf in leaves))

    def compile(variables, key) -> float:
        """Compiles the program for arguments like these ahead of a call and returns the seconds it took (0.0 when
        it was compiled already), so that a caller can time its calls without their compilation."""
        signature = signature_of(variables, key)
        if signature in compiled:
            return 0.0
        started = time.perf_counter()
        logger.info("self-play: compiling %d games × %d plies on %d devices", config.num_games,
                    config.plies_per_iteration, mesh.devices.size)
        compiled[signature] = compile_within_budget(variables, key)
        seconds = time.perf_counter() - started
        logger.info("self-play: compiled in %.1f s", seconds)
        return seconds

    def selfplay(variables, key):
        compile(variables, key)  # ahead of the call, so that the log says when compilation ends
        return compiled[signature_of(variables, key)](variables, frozen_on_devices, key)

    selfplay.lower = lower
    selfplay.compile = compile
    selfplay.games_per_device = games_per_device
    return selfplay


def chunked_selfplay_programs(play_fn: PlayFn, games_per_device: int, mesh: Mesh) -> Callable[[int], Any]:
    """``program(chunk_games)``: the jitted ``(variables, frozen, key) -> (frames, records)`` over ``mesh``, each
    device playing its ``games_per_device`` games with key ``fold_in(key, device index)`` in chunks of
    ``chunk_games`` (:func:`zerolab.selfplay.chunks.play_in_chunks`), one jitted function a chunk size."""
    programs = {}

    def program(chunk_games: int):
        if games_per_device % chunk_games:
            raise ValueError(f"chunks of {chunk_games} games do not split a device's {games_per_device} games")
        if chunk_games not in programs:
            play_chunks = play_in_chunks(play_fn, games_per_device // chunk_games)

            def per_device(variables, frozen, key):
                key = jax.random.fold_in(key, jax.lax.axis_index(DATA_AXIS))
                return play_chunks(variables, key, games_per_device, frozen)

            programs[chunk_games] = jax.jit(jax.shard_map(
                per_device,
                mesh=mesh,
                in_specs=(PartitionSpec(), PartitionSpec(), PartitionSpec()),
                out_specs=PartitionSpec(None, DATA_AXIS),
                check_vma=False,
            ))
        return programs[chunk_games]

    return program
