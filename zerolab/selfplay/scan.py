"""Self-play: batched games in one jitted ``lax.scan`` over plies, built from small replaceable parts.

Each ply: the **move rule** decides for all games (default: one search), the **temperature schedule** samples from
the visit counts early in a game (the search's choice otherwise), a vmapped pgx step plays the moves, and finished
games restart from the **initial states**.  A game that reaches ``max_game_plies`` ends as a draw.  The scan records
one frame per game and ply; **value targets** come from the final outcomes by a reverse scan, and frames whose game
did not finish inside the scan are masked out of the value loss.

The parts are typed hooks (aliases below), each with today's AlphaZero behaviour as its default; a method
(:mod:`zerolab.training.method`) may replace any of them or the whole per-device play function:

* :data:`ActFn` — the per-ply move rule ``act(variables, key, states, ply, carry) -> PlyDecision``.  Per-game
  state lives in ``carry`` (leaves ``[B, ...]``), reset by :data:`InitCarryFn` when a game restarts; frozen extra
  variables (a partner network) reach it through :class:`PlayVariables`.
* :data:`InitialStatesFn` — ``(key, num_games) -> states``: fresh games (a FEN list, odds positions, ...).
* :data:`ValueTargetsFn` — ``(frames, records) -> (value_target, value_mask)``.

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

from zerolab.devices import DATA_AXIS, check_divisible, replicate
from zerolab.games import Game
from zerolab.search.mcts import SearchConfig, SearchRules, run_search

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

    def __post_init__(self):
        if self.temperature_schedule not in TEMPERATURE_SCHEDULES:
            raise ValueError(f"selfplay.temperature_schedule must be one of {TEMPERATURE_SCHEDULES}, "
                             f"got {self.temperature_schedule!r}")
        for name in ("temperature_plies", "temperature_delay_moves", "temperature_decay_moves",
                     "temperature_cutoff_moves"):
            if getattr(self, name) < 0:
                raise ValueError(f"selfplay.{name} must be >= 0, got {getattr(self, name)}")
        if self.temperature < 0 or self.temperature_end < 0:
            raise ValueError("selfplay temperatures must be >= 0")

    @classmethod
    def from_config(cls, config: Any) -> SelfPlayConfig:
        """From a ConfigDict (or mapping); keys absent from it keep their defaults (configs of older runs)."""
        values = config.to_dict() if hasattr(config, "to_dict") else dict(config)
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown selfplay keys {unknown}; valid keys: {sorted(known)}")
        return cls(**values)


@flax.struct.dataclass
class Frames:
    """Training frames, ``[T, B, ...]`` from self-play or ``[N, ...]`` once flattened.

    Attributes:
      observation: [T, B, *observation_shape] from the side to move.
      legal_action_mask: [T, B, A].
      policy_target: [T, B, A] the search's improved policy.
      value_target: [T, B] final outcome from the side to move (−1, 0, 1).
      value_mask: [T, B] true where the game ended inside the scan, so ``value_target`` is known.
      extras: ``{name: [T, B, ...]}`` a method's further per-frame fields (e.g. the game's komi); the replay window
        and checkpoints carry them like the fields above.
    """

    observation: jax.Array
    legal_action_mask: jax.Array
    policy_target: jax.Array
    value_target: jax.Array
    value_mask: jax.Array
    extras: dict = flax.struct.field(default_factory=dict)

    def flatten(self) -> Frames:
        return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), self)


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
class PlyCarry:
    states: Any
    ply: jax.Array  # [B] plies played in the current game
    key: jax.Array
    rule_carry: Any = None  # the move rule's per-game state, leaves [B, ...]


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
      frame_extras: ``{name: [B, ...]}`` per-frame fields stored with the frame (see :attr:`Frames.extras`).
      summary: ``{name: [B]}`` statistics averaged into the iteration's metrics (e.g. the search's summary).
    """

    action: jax.Array
    policy_target: jax.Array
    carry: Any = None
    visit_counts: Any = None
    frame_extras: dict = flax.struct.field(default_factory=dict)
    summary: dict = flax.struct.field(default_factory=dict)


ActFn = Callable[[PlayVariables, jax.Array, pgx.State, jax.Array, Any], PlyDecision]
"""``(variables, key, states [B], ply [B], carry) -> PlyDecision``: the per-ply move rule (jittable)."""
InitCarryFn = Callable[[jax.Array, int], Any]
"""``(key, num_games) -> carry``: the move rule's per-game state of fresh games, leaves ``[num_games, ...]``."""
InitialStatesFn = Callable[[jax.Array, int], pgx.State]
"""``(key, num_games) -> states [num_games]``: the positions fresh games start from (jittable)."""
ValueTargetsFn = Callable[[Frames, PlyRecord], tuple[jax.Array, jax.Array]]
"""``(frames [T, B], records [T, B]) -> (value_target [T, B], value_mask [T, B])``."""
PlayFn = Callable[[Any, jax.Array, int, Any], tuple[Frames, PlyRecord]]
"""``(variables, key, num_games, frozen_variables) -> (frames [T, B], records [T, B])``: one device's self-play."""


@dataclasses.dataclass(frozen=True)
class MoveRule:
    """A per-ply move rule: ``act``, its per-game state's initialiser and the frozen variables it plays with.

    ``frozen_variables`` (e.g. a partner network's) are placed on the devices once and passed to every call as
    ``variables.frozen``; they are arguments of the jitted self-play, not constants compiled into it.
    """

    act: ActFn
    init_carry: InitCarryFn | None = None
    frozen_variables: Any = None


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


def outcome_value_targets(frames: Frames, records: PlyRecord) -> tuple[jax.Array, jax.Array]:
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


def reset_finished(game_over: jax.Array, fresh: Any, current: Any) -> Any:
    """``fresh`` where ``game_over`` [B], ``current`` elsewhere, leaf by leaf (leaves [B, ...])."""
    return jax.tree.map(
        lambda new, old: jnp.where(game_over.reshape((-1,) + (1,) * (old.ndim - 1)), new, old), fresh, current
    )


def make_play_fn(
    game: Game,
    move_rule: MoveRule,
    config: SelfPlayConfig,
    initial_states: InitialStatesFn | None = None,
    value_targets_fn: ValueTargetsFn = outcome_value_targets,
) -> PlayFn:
    """The core's per-device self-play: ``play(variables, key, num_games, frozen) -> (Frames, PlyRecord)``.

    A scan over ``config.plies_per_iteration`` plies: ``move_rule.act``, the temperature schedule (where the decision
    carries visit counts), a vmapped pgx step, and fresh games (with fresh rule carries) where games ended.
    """
    initial_states = initial_states or standard_initial_states(game)

    def play(variables: Any, key: jax.Array, num_games: int, frozen_variables: Any = None) -> tuple[Frames, PlyRecord]:
        player_variables = PlayVariables(learner=variables, frozen=frozen_variables)
        key, init_key = jax.random.split(key)
        rule_carry = None
        if move_rule.init_carry is not None:
            rule_carry = move_rule.init_carry(jax.random.fold_in(init_key, 1), num_games)
        carry = PlyCarry(states=initial_states(init_key, num_games), ply=jnp.zeros(num_games, jnp.int32), key=key,
                         rule_carry=rule_carry)

        def one_ply(carry: PlyCarry, _):
            key, act_key, sample_key, reset_key = jax.random.split(carry.key, 4)
            states = carry.states
            decision = move_rule.act(player_variables, act_key, states, carry.ply, carry.rule_carry)
            action = decision.action
            if decision.visit_counts is not None:
                action = choose_actions(sample_key, decision.visit_counts, decision.action, carry.ply, config)
            mover = states.current_player
            next_states = jax.vmap(game.step)(states, action)
            ply = carry.ply + 1
            game_over = next_states.terminated | (ply >= config.max_game_plies)
            reward = next_states.rewards[jnp.arange(num_games), mover]
            next_states = reset_finished(game_over, initial_states(reset_key, num_games), next_states)
            rule_carry = decision.carry
            if move_rule.init_carry is not None:
                fresh_carry = move_rule.init_carry(jax.random.fold_in(reset_key, 1), num_games)
                rule_carry = reset_finished(game_over, fresh_carry, rule_carry)
            frame = Frames(
                observation=states.observation,
                legal_action_mask=states.legal_action_mask,
                policy_target=decision.policy_target,
                value_target=jnp.zeros(num_games),
                value_mask=jnp.zeros(num_games, bool),
                extras=dict(decision.frame_extras),
            )
            record = PlyRecord(
                action=action,
                reward=reward,
                game_over=game_over,
                first_player_moved=carry.ply % 2 == 0,
                game_length=ply,
                position_hash=observation_hash(states.observation),
                summary=dict(decision.summary),
            )
            next_carry = PlyCarry(states=next_states, ply=jnp.where(game_over, 0, ply), key=key, rule_carry=rule_carry)
            return next_carry, (frame, record)

        _, (frames, records) = jax.lax.scan(one_ply, carry, None, length=config.plies_per_iteration)
        value, known = value_targets_fn(frames, records)
        return frames.replace(value_target=value, value_mask=known), records

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
) -> tuple[Frames, PlyRecord]:
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
    """A jitted ``(variables, key) -> (Frames [T, B, ...], PlyRecord [T, B])`` over all devices of ``mesh``.

    The program is compiled ahead of its first call (logged with its duration); ``selfplay.lower(variables, key)``
    lowers it without running it (``experiments plan`` reads its cost and memory from there).

    ``play_fn`` is one device's self-play (default: :func:`make_play_fn` with the search move rule, ``rules`` and the
    standard initial states and value targets).  ``variables`` must be replicated on the mesh; ``frozen_variables``
    are replicated here once and passed to every call.  Outputs are sharded along the game axis B.
    """
    check_divisible("selfplay.num_games", config.num_games, mesh)
    games_per_device = config.num_games // mesh.devices.size
    if play_fn is None:
        play_fn = make_play_fn(game, search_move_rule(game, network, search_config, rules), config)

    def per_device(variables, frozen, key):
        key = jax.random.fold_in(key, jax.lax.axis_index(DATA_AXIS))
        return play_fn(variables, key, games_per_device, frozen)

    sharded = jax.jit(jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(PartitionSpec(), PartitionSpec(), PartitionSpec()),
        out_specs=PartitionSpec(None, DATA_AXIS),
        check_vma=False,
    ))
    frozen_on_devices = replicate(frozen_variables, mesh) if frozen_variables is not None else None
    compiled = {}  # one executable per signature (shapes, dtypes, shardings) of the arguments

    def lower(variables, key):
        """The program lowered for ``variables`` and ``key`` (concrete or ``jax.ShapeDtypeStruct``s)."""
        return sharded.lower(variables, frozen_on_devices, key)

    def selfplay(variables, key):
        leaves, structure = jax.tree.flatten((variables, key))
        signature = (structure, tuple((np.shape(leaf), str(getattr(leaf, "dtype", type(leaf))),
                                       getattr(leaf, "sharding", None)) for leaf in leaves))
        if signature not in compiled:  # compiled ahead of the call, so that the log says when compilation ends
            started = time.perf_counter()
            logger.info("self-play: compiling %d games × %d plies on %d devices", config.num_games,
                        config.plies_per_iteration, mesh.devices.size)
            compiled[signature] = lower(variables, key).compile()
            logger.info("self-play: compiled in %.1f s", time.perf_counter() - started)
        return compiled[signature](variables, frozen_on_devices, key)

    selfplay.lower = lower
    return selfplay


def summarize(records: PlyRecord) -> dict[str, float]:
    """Per-batch statistics from host (numpy) ply records."""
    over = np.asarray(records.game_over)
    reward = np.asarray(records.reward)
    first = np.asarray(records.first_player_moved)
    first_player_score = np.where(first, reward, -reward)[over]
    games = int(over.sum())
    hashes = np.asarray(records.position_hash).reshape(-1, 2)
    distinct = len(np.unique(hashes, axis=0)) if len(hashes) else 0
    rule_statistics = {name: float(np.mean(values)) for name, values in (records.summary or {}).items()}
    return {
        **rule_statistics,
        "games_finished": games,
        "first_player_wins": int((first_player_score > 0).sum()),
        "draws": int((first_player_score == 0).sum()),
        "first_player_losses": int((first_player_score < 0).sum()),
        "mean_game_length": float(np.asarray(records.game_length)[over].mean()) if games else float("nan"),
        "distinct_position_fraction": distinct / max(len(hashes), 1),
    }


def complete_games(records: PlyRecord) -> list[tuple[int, int, np.ndarray, float]]:
    """Every game played wholly inside the scan, lane by lane, as ``(lane, first ply, actions, first_player_score)``
    (host, numpy records).  A lane's first game starts at ply 0; each later one on the ply after the previous ended."""
    over = np.asarray(records.game_over)
    actions, rewards = np.asarray(records.action), np.asarray(records.reward)
    first_moved = np.asarray(records.first_player_moved)
    games = []
    for lane in range(over.shape[1]):
        start = 0
        for end in np.flatnonzero(over[:, lane]):
            reward = float(rewards[end, lane])
            score = (reward + 1) / 2 if bool(first_moved[end, lane]) else (1 - reward) / 2
            games.append((lane, start, actions[start: end + 1, lane], score))
            start = end + 1
    return games


def finished_games(records: PlyRecord, max_games: int) -> list[tuple[int, np.ndarray, float]]:
    """Up to ``max_games`` games that ended inside the scan and started at its first ply, as
    ``(lane, actions, first_player_score)``, in lane order; host (numpy) records."""
    first_games = [(lane, actions, score) for lane, start, actions, score in complete_games(records) if start == 0]
    return first_games[:max_games]
