"""Self-play: batched games in one jitted ``lax.scan`` over plies.

Each ply: one search over all games, an action (sampled from the visit counts at a temperature for the first
``temperature_plies`` plies of a game, the search's choice after that), a vmapped pgx step, and an automatic reset of
finished games.  A game that reaches ``max_game_plies`` ends as a draw.  The scan records one frame per game and
ply; value targets come from the final outcomes by a reverse scan, and frames whose game did not finish inside the
scan are masked out of the value loss.

On a mesh the games are split over the devices with ``shard_map``: each device plays its own games with its own
random key, and no data crosses devices during self-play.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from zerolab.devices import DATA_AXIS, check_divisible
from zerolab.games import Game
from zerolab.search import SearchConfig, SearchRules, run_search


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Sizes of one self-play batch.

    Attributes:
      num_games: games played in parallel (over all devices).
      plies_per_iteration: length of the scan; finished games restart inside it.
      max_game_plies: a game this long ends as a draw.
      temperature_plies: the first plies of each game sample ``visits ** (1 / temperature)``.
      temperature: sampling temperature for those plies.
    """

    num_games: int = 64
    plies_per_iteration: int = 64
    max_game_plies: int = 256
    temperature_plies: int = 0
    temperature: float = 1.0


@flax.struct.dataclass
class Frames:
    """Training frames, ``[T, B, ...]`` from self-play or ``[N, ...]`` once flattened.

    Attributes:
      observation: [T, B, *observation_shape] from the side to move.
      legal_action_mask: [T, B, A].
      policy_target: [T, B, A] the search's improved policy.
      value_target: [T, B] final outcome from the side to move (−1, 0, 1).
      value_mask: [T, B] true where the game ended inside the scan, so ``value_target`` is known.
    """

    observation: jax.Array
    legal_action_mask: jax.Array
    policy_target: jax.Array
    value_target: jax.Array
    value_mask: jax.Array

    def flatten(self) -> Frames:
        return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), self)


@flax.struct.dataclass
class PlyRecord:
    """What the scan keeps of each ply, before value targets are computed.  All [T, B]."""

    action: jax.Array  # the move played
    reward: jax.Array  # from the view of the player who moved
    game_over: jax.Array  # the move ended the game (or hit max_game_plies)
    first_player_moved: jax.Array  # the mover was the game's first player (White in chess, Black in Go)
    game_length: jax.Array  # plies played when the game ended (valid where game_over)
    position_hash: jax.Array  # [T, B, 2] hash of the position searched, for counting distinct positions


@flax.struct.dataclass
class PlyCarry:
    states: Any
    ply: jax.Array  # [B] plies played in the current game
    key: jax.Array


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


def choose_actions(key: jax.Array, visit_counts: jax.Array, search_action: jax.Array, ply: jax.Array,
                   config: SelfPlayConfig) -> jax.Array:
    """[B] actions: sampled ∝ visits^(1/T) while ``ply < temperature_plies``, the search's choice afterwards."""
    if config.temperature_plies <= 0:
        return search_action
    logits = jnp.log(jnp.maximum(visit_counts, 1e-30)) / config.temperature
    logits = jnp.where(visit_counts > 0, logits, -jnp.inf)
    sampled = jax.random.categorical(key, logits).astype(search_action.dtype)
    return jnp.where(ply < config.temperature_plies, sampled, search_action)


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
    """Plays ``num_games`` games for ``config.plies_per_iteration`` plies on one device (jittable)."""
    init = jax.vmap(game.init)
    key, init_key = jax.random.split(key)
    carry = PlyCarry(states=init(jax.random.split(init_key, num_games)), ply=jnp.zeros(num_games, jnp.int32), key=key)

    def one_ply(carry: PlyCarry, _):
        key, search_key, sample_key, reset_key = jax.random.split(carry.key, 4)
        states = carry.states
        searched = run_search(search_config, game, network, variables, search_key, states, rules=rules)
        action = choose_actions(sample_key, searched.visit_counts, searched.action, carry.ply, config)
        mover = states.current_player
        next_states = jax.vmap(game.step)(states, action)
        ply = carry.ply + 1
        game_over = next_states.terminated | (ply >= config.max_game_plies)
        reward = next_states.rewards[jnp.arange(num_games), mover]
        fresh = init(jax.random.split(reset_key, num_games))
        next_states = jax.tree.map(
            lambda new, old: jnp.where(game_over.reshape((-1,) + (1,) * (old.ndim - 1)), new, old), fresh, next_states
        )
        frame = Frames(
            observation=states.observation,
            legal_action_mask=states.legal_action_mask,
            policy_target=searched.policy_target,
            value_target=jnp.zeros(num_games),
            value_mask=jnp.zeros(num_games, bool),
        )
        record = PlyRecord(
            action=action,
            reward=reward,
            game_over=game_over,
            first_player_moved=carry.ply % 2 == 0,
            game_length=ply,
            position_hash=observation_hash(states.observation),
        )
        return PlyCarry(states=next_states, ply=jnp.where(game_over, 0, ply), key=key), (frame, record)

    _, (frames, records) = jax.lax.scan(one_ply, carry, None, length=config.plies_per_iteration)
    value, known = value_targets(records.reward, records.game_over)
    return frames.replace(value_target=value, value_mask=known), records


def make_selfplay_fn(
    game: Game,
    network: nn.Module,
    search_config: SearchConfig,
    config: SelfPlayConfig,
    mesh: Mesh,
    rules: SearchRules | None = None,
):
    """A jitted ``(variables, key) -> (Frames [T, B, ...], PlyRecord [T, B])`` over all devices of ``mesh``.

    ``variables`` must be replicated on the mesh; outputs are sharded along the game axis B.
    """
    check_divisible("selfplay.num_games", config.num_games, mesh)
    games_per_device = config.num_games // mesh.devices.size

    def per_device(variables, key):
        key = jax.random.fold_in(key, jax.lax.axis_index(DATA_AXIS))
        return play(game, network, search_config, config, variables, key, games_per_device, rules)

    sharded = jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(PartitionSpec(), PartitionSpec()),
        out_specs=PartitionSpec(None, DATA_AXIS),
        check_vma=False,
    )
    return jax.jit(sharded)


def summarize(records: PlyRecord) -> dict[str, float]:
    """Per-batch statistics from host (numpy) ply records."""
    over = np.asarray(records.game_over)
    reward = np.asarray(records.reward)
    first = np.asarray(records.first_player_moved)
    first_player_score = np.where(first, reward, -reward)[over]
    games = int(over.sum())
    hashes = np.asarray(records.position_hash).reshape(-1, 2)
    distinct = len(np.unique(hashes, axis=0)) if len(hashes) else 0
    return {
        "games_finished": games,
        "first_player_wins": int((first_player_score > 0).sum()),
        "draws": int((first_player_score == 0).sum()),
        "first_player_losses": int((first_player_score < 0).sum()),
        "mean_game_length": float(np.asarray(records.game_length)[over].mean()) if games else float("nan"),
        "distinct_position_fraction": distinct / max(len(hashes), 1),
    }


def finished_games(records: PlyRecord, max_games: int) -> list[tuple[int, np.ndarray, float]]:
    """Up to ``max_games`` games that ended inside the scan and started at its first ply, as
    ``(lane, actions, first_player_score)``; host (numpy) records.  Every lane starts from a fresh position."""
    over = np.asarray(records.game_over)
    games = []
    for lane in range(over.shape[1]):
        ends = np.flatnonzero(over[:, lane])
        if len(ends) == 0:
            continue
        end = ends[0]
        reward = float(np.asarray(records.reward)[end, lane])
        mover_is_first = bool(np.asarray(records.first_player_moved)[end, lane])
        score = (reward + 1) / 2 if mover_is_first else (1 - reward) / 2
        games.append((lane, np.asarray(records.action)[: end + 1, lane], score))
        if len(games) == max_games:
            break
    return games
