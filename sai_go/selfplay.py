"""SAI's self-play: per-lane komi, fresh-game komi sampling, branching games and scoring at each game's own komi.

One device's self-play is one jitted ``lax.scan`` over plies, like the core's, with each lane (a game slot) carrying
more state: its game's komi, the game's branch candidates and a per-device queue of pending branches.

* **Fresh games** start from the empty board at a komi K drawn so that the current network's Black winrate at K is
  uniform: ``K = ⌊α_∅ + logit(U)/β_∅⌋ + 0.5``, U ~ Unif(0, 1), clipped to ``|K| <= N² + 0.5``
  (:func:`sample_komi`; α_∅, β_∅ are the network's on the empty board, Black to move).
* **Branch candidates**: each position after a game's first move (its own start excluded) becomes a branch point
  independently with ``branch_probability``, at most ``max_branches`` per game; deciding them as the game is played
  is the same draw as scanning the finished game from move 1.  A branch point s keeps its state and the komi
  ``k' = ⌊α^B_s⌋ + 0.5`` that evens it (α^B_s: the network's α at s, from Black's view), clipped like K.
* **When a game ends** (fresh or branch), its candidates join the device's queue of ``queue_size`` pending branches
  (candidates that find no free slot are dropped and counted), then every lane whose game ended takes a pending
  branch if one is left (lowest slot first), else a fresh game.  A branch is played out from s at k'; its frames carry
  k' and its own result.  The queue lives for one call (one iteration's scan): branches still pending at its end are
  not kept.
* **Results**: games that end by two passes or at the ply cap (``min(selfplay.max_game_plies, 2·N²)``) are counted
  by area at the game's komi; superko endings keep pgx's winner (:func:`sai_go.scoring.black_result`).  Each frame's
  value target is its game's result from its mover's view (the core's :func:`~zerolab.api.value_targets`).

Frames carry ``extras``: ``signed_komi`` (k̄ at the frame), ``komi``, ``alpha`` (the network's α there, mover's view)
and ``branch`` (the frame belongs to a branch game).  The records' ``summary`` holds per-ply statistics (mean β at the
searched roots) and per-call totals broadcast over ``[T, B]`` (branches started and dropped, the mean absolute error of
the score estimate α^B − k against the final margin of counted games, the fresh games' komi mean and spread).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import pgx

from zerolab.api import (
    Frames,
    GoGame,
    PlyRecord,
    SearchConfig,
    SelfPlayConfig,
    choose_actions,
    value_targets,
)
from sai_go.scoring import black_margin, black_result
from sai_go.search import check_lambda, evaluate, sai_search
from sai_go.value import signed_komi


@dataclasses.dataclass(frozen=True)
class SaiSelfPlayOptions:
    """SAI's self-play settings (``method_options`` of an SAI run).

    Attributes:
      lam: λ of the agent in self-play (0.5 in the paper's later runs).
      branch_probability: chance that a position becomes a branch point (0 turns branching off).
      max_branches: branch points per game at most.
      queue_size: pending branches one device holds (≥ 1).
    """

    lam: float = 0.5
    branch_probability: float = 0.025
    max_branches: int = 3
    queue_size: int = 64

    def __post_init__(self):
        check_lambda(self.lam, "method_options.lam")
        if not 0.0 <= self.branch_probability <= 1.0:
            raise ValueError(f"method_options.branch_probability must be in [0, 1], got {self.branch_probability}")
        if self.max_branches < 0:
            raise ValueError(f"method_options.max_branches must be >= 0, got {self.max_branches}")
        if self.queue_size < 1:
            raise ValueError(f"method_options.queue_size must be >= 1, got {self.queue_size}")


def position_hash(observation: jax.Array) -> jax.Array:
    """[B, 2] random projections of each observation (equal positions, equal pairs), for counting distinct ones."""
    flat = observation.reshape(observation.shape[0], -1).astype(jnp.float32)
    return flat @ jax.random.uniform(jax.random.key(7), (flat.shape[-1], 2), minval=0.5, maxval=1.5)


def komi_limit(game: GoGame) -> float:
    return game.size * game.size + 0.5


def half_integer_komi(black_alpha: jax.Array, limit: float) -> jax.Array:
    """``⌊black_alpha⌋ + 0.5`` clipped to ``[−limit, limit]``."""
    return jnp.clip(jnp.floor(black_alpha) + 0.5, -limit, limit)


def sample_komi(key: jax.Array, black_alpha: jax.Array, beta: jax.Array, shape: tuple[int, ...],
                limit: float) -> jax.Array:
    """Komi K of fresh games: ``⌊α + logit(U)/β⌋ + 0.5`` (U uniform), so Black's winrate σ(β(α − K)) is uniform."""
    uniform = jax.random.uniform(key, shape, minval=1e-7, maxval=1.0 - 1e-7)
    return half_integer_komi(black_alpha + (jnp.log(uniform) - jnp.log1p(-uniform)) / beta, limit)


@flax.struct.dataclass
class BranchQueue:
    """Pending branches of one device: ``Q`` slots of a state, its komi and whether the slot holds one."""

    states: pgx.State  # [Q, ...]
    komi: jax.Array  # [Q]
    valid: jax.Array  # [Q] bool


@flax.struct.dataclass
class LaneCarry:
    """What the scan carries per lane ``[B, ...]`` (candidates ``[B, M, ...]``) and per device."""

    states: pgx.State
    komi: jax.Array
    moves_in_game: jax.Array  # plies since this game (fresh or branch) started
    is_branch: jax.Array
    candidate_states: pgx.State  # [B, M, ...]
    candidate_komi: jax.Array  # [B, M]
    candidates: jax.Array  # [B] candidates recorded in this game
    queue: BranchQueue
    key: jax.Array


def _select(mask: jax.Array, new: Any, old: Any) -> Any:
    """``new`` where ``mask`` (over the leading axes), ``old`` elsewhere, leaf by leaf."""
    return jax.tree.map(lambda a, b: jnp.where(mask.reshape(mask.shape + (1,) * (b.ndim - mask.ndim)), a, b), new, old)


def push_branches(queue: BranchQueue, states: pgx.State, komi: jax.Array, valid: jax.Array
                  ) -> tuple[BranchQueue, jax.Array, jax.Array]:
    """Puts the ``valid`` items (leaves ``[K, ...]``) into free slots, in order; ``(queue, pushed, dropped)``."""
    size = queue.valid.shape[0]
    rank = jnp.cumsum(valid) - 1
    free_count = jnp.cumsum(~queue.valid)
    slot = jnp.searchsorted(free_count, rank + 1)
    stored = valid & (rank < free_count[-1])
    target = jnp.where(stored, slot, size)  # out of range: not written
    queue = BranchQueue(
        states=jax.tree.map(lambda q, item: q.at[target].set(item, mode="drop"), queue.states, states),
        komi=queue.komi.at[target].set(komi, mode="drop"),
        valid=queue.valid.at[target].set(True, mode="drop"),
    )
    return queue, stored.sum(), (valid & ~stored).sum()


def pop_branches(queue: BranchQueue, wanted: jax.Array) -> tuple[BranchQueue, jax.Array, pgx.State, jax.Array]:
    """Hands pending branches to the lanes that want one (``wanted`` [B]), lowest slot first.

    Returns ``(queue, taken [B], states [B], komi [B])``; where not taken, states and komi are junk."""
    size = queue.valid.shape[0]
    rank = jnp.cumsum(wanted) - 1
    available = jnp.cumsum(queue.valid)
    slot = jnp.minimum(jnp.searchsorted(available, rank + 1), size - 1)
    taken = wanted & (rank < available[-1])
    states = jax.tree.map(lambda leaf: leaf[slot], queue.states)
    queue = queue.replace(valid=queue.valid.at[jnp.where(taken, slot, size)].set(False, mode="drop"))
    return queue, taken, states, queue.komi[slot]


def _final_margin_by_frame(margin: jax.Array, game_over: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(final Black margin of each frame's game [T, B], known [T, B])`` by a reverse scan (no sign flips)."""

    def backward(carry, inputs):
        after, known_after = carry
        margin, over = inputs
        value = jnp.where(over, margin, after)
        known = over | known_after
        return (value, known), (value, known)

    _, (value, known) = jax.lax.scan(backward, (jnp.zeros_like(margin[0]), jnp.zeros_like(game_over[0])),
                                     (margin, game_over), reverse=True)
    return value, known


def make_sai_play_fn(game: GoGame, network: nn.Module, search_config: SearchConfig, config: SelfPlayConfig,
                     options: SaiSelfPlayOptions):
    """One device's SAI self-play ``play(variables, key, num_games, frozen=None) -> (Frames [T, B], PlyRecord)``."""
    if not isinstance(game, GoGame):
        raise ValueError(f"SAI self-play plays Go only, got game {game.name!r} (set game.name=go)")
    limit = komi_limit(game)
    max_plies = min(int(config.max_game_plies), game.max_game_plies)
    max_branches = int(options.max_branches)

    def play(variables: Any, key: jax.Array, num_games: int, frozen_variables: Any = None,
             branch_probability: jax.Array | float | None = None, fresh_komi: jax.Array | float | None = None):
        """``branch_probability`` overrides the options' for this call; ``fresh_komi`` (a scalar; NaN: sample)
        replaces the sampled komi of fresh games (both may be traced)."""
        del frozen_variables
        if branch_probability is None:
            branch_probability = options.branch_probability
        key, empty_key, komi_key, init_key = jax.random.split(key, 4)
        empty = jax.vmap(game.init)(empty_key[None])
        _, empty_value = evaluate(network, variables, empty)  # Black to move on the empty board
        empty_alpha, empty_beta = empty_value.alpha[0], empty_value.beta[0]

        def fresh(key, count):
            state_key, komi_key = jax.random.split(key)
            states = jax.vmap(game.init)(jax.random.split(state_key, count))
            sampled = sample_komi(komi_key, empty_alpha, empty_beta, (count,), limit)
            if fresh_komi is None:
                return states, sampled
            fixed = jnp.asarray(fresh_komi, jnp.float32)  # NaN: sample
            return states, jnp.where(jnp.isnan(fixed), sampled, jnp.full((count,), fixed))

        states, komi = fresh(init_key, num_games)
        candidate_states = jax.tree.map(lambda leaf: jnp.repeat(leaf[:, None], max(max_branches, 1), axis=1), states)
        queue_states = jax.tree.map(lambda leaf: jnp.repeat(leaf[:1], options.queue_size, axis=0), states)
        carry = LaneCarry(
            states=states, komi=komi, moves_in_game=jnp.zeros(num_games, jnp.int32),
            is_branch=jnp.zeros(num_games, bool), candidate_states=candidate_states,
            candidate_komi=jnp.zeros((num_games, max(max_branches, 1))), candidates=jnp.zeros(num_games, jnp.int32),
            queue=BranchQueue(queue_states, jnp.zeros(options.queue_size), jnp.zeros(options.queue_size, bool)),
            key=key,
        )

        def one_ply(carry: LaneCarry, _):
            key, search_key, sample_key, branch_key, fresh_key = jax.random.split(carry.key, 5)
            states = carry.states
            ply = game.plies_played(states)
            searched = sai_search(search_config, game, network, variables, search_key, states, carry.komi,
                                  options.lam)
            action = choose_actions(sample_key, searched.visit_counts, searched.action, ply, config)
            black_to_move = searched.black_to_move
            black_alpha = jnp.where(black_to_move, searched.alpha, -searched.alpha)

            # This position may become a branch point of its game.
            chosen = ((carry.moves_in_game >= 1) & (carry.candidates < max_branches)
                      & jax.random.bernoulli(branch_key, branch_probability, (num_games,)))
            slot_mask = chosen[:, None] & (jnp.arange(max(max_branches, 1))[None] == carry.candidates[:, None])
            states_per_slot = jax.tree.map(lambda leaf: leaf[:, None], states)
            candidate_states = _select(slot_mask, states_per_slot, carry.candidate_states)
            candidate_komi = jnp.where(slot_mask, half_integer_komi(black_alpha, limit)[:, None], carry.candidate_komi)
            candidates = carry.candidates + chosen.astype(jnp.int32)

            next_states = jax.vmap(game.step)(states, action)
            at_cap = ~next_states.terminated & (game.plies_played(next_states) >= max_plies)
            game_over = next_states.terminated | at_cap
            final_black = jnp.where(next_states.terminated, black_result(game, next_states, carry.komi),
                                    jnp.sign(black_margin(game, next_states, carry.komi)))
            reward = jnp.where(game_over, jnp.where(black_to_move, final_black, -final_black), 0.0)
            counted = game_over & ~game.ended_by_rule_violation(next_states)
            margin = black_margin(game, next_states, carry.komi)

            # Finished games hand in their branch points, then take pending branches or start afresh.
            slots = jnp.arange(max(max_branches, 1))[None] < candidates[:, None]
            flat = lambda tree: jax.tree.map(lambda leaf: leaf.reshape((-1,) + leaf.shape[2:]), tree)  # noqa: E731
            queue, pushed, dropped = push_branches(carry.queue, flat(candidate_states), candidate_komi.reshape(-1),
                                                   (slots & game_over[:, None]).reshape(-1))
            queue, taken, branch_states, branch_komi = pop_branches(queue, game_over)
            fresh_states, fresh_komi = fresh(fresh_key, num_games)
            new_states = _select(taken, branch_states, fresh_states)
            new_komi = jnp.where(taken, branch_komi, fresh_komi)
            fresh_started = game_over & ~taken

            frame = Frames(
                observation=states.observation,
                legal_action_mask=states.legal_action_mask,
                policy_target=searched.policy_target,
                value_target=jnp.zeros(num_games),
                value_mask=jnp.zeros(num_games, bool),
                extras={"signed_komi": signed_komi(carry.komi, black_to_move), "komi": carry.komi,
                        "alpha": searched.alpha, "branch": carry.is_branch},
            )
            record = PlyRecord(
                action=action,
                reward=reward,
                game_over=game_over,
                first_player_moved=carry.moves_in_game % 2 == 0,
                game_length=carry.moves_in_game + 1,
                position_hash=position_hash(states.observation),
                summary={"mean_beta": searched.beta},
            )
            per_ply = {"branches_started": taken.sum(), "branches_pushed": pushed, "branches_dropped": dropped,
                       "fresh_started": fresh_started.sum(), "fresh_komi_sum": jnp.where(fresh_started, fresh_komi,
                                                                                         0.0).sum(),
                       "fresh_komi_square_sum": jnp.where(fresh_started, fresh_komi ** 2, 0.0).sum(),
                       "score_estimate": searched.score_estimate, "margin": margin, "counted": counted}
            next_carry = LaneCarry(
                states=_select(game_over, new_states, next_states),
                komi=jnp.where(game_over, new_komi, carry.komi),
                moves_in_game=jnp.where(game_over, 0, carry.moves_in_game + 1),
                is_branch=jnp.where(game_over, taken, carry.is_branch),
                candidate_states=candidate_states,
                candidate_komi=candidate_komi,
                candidates=jnp.where(game_over, 0, candidates),
                queue=queue,
                key=key,
            )
            return next_carry, (frame, record, per_ply)

        last, (frames, records, per_ply) = jax.lax.scan(one_ply, carry, None, length=config.plies_per_iteration)
        value, known = value_targets(records.reward, records.game_over)
        frames = frames.replace(value_target=value, value_mask=known)
        totals = _totals(per_ply, records.game_over, fresh_komi=komi, left_pending=last.queue.valid.sum())
        records = records.replace(summary={**records.summary, **totals})
        return frames, records

    return play


def _totals(per_ply: dict, game_over: jax.Array, fresh_komi: jax.Array, left_pending: jax.Array) -> dict:
    """Per-call statistics, each broadcast over ``[T, B]`` so that the core's mean over plies reports it;
    ``left_pending``: branches still in the queue when the call ends (dropped with it, counted here)."""
    shape = game_over.shape
    final_margin, known = _final_margin_by_frame(jnp.where(per_ply["counted"], per_ply["margin"], jnp.nan), game_over)
    usable = known & ~jnp.isnan(final_margin)
    error = jnp.where(usable, jnp.abs(per_ply["score_estimate"] - jnp.where(usable, final_margin, 0.0)), 0.0)
    started = per_ply["fresh_started"].sum() + fresh_komi.shape[0]
    komi_sum = per_ply["fresh_komi_sum"].sum() + fresh_komi.sum()
    komi_square_sum = per_ply["fresh_komi_square_sum"].sum() + (fresh_komi ** 2).sum()
    komi_mean = komi_sum / started
    totals = {
        "branches_started": per_ply["branches_started"].sum(),
        "branches_pushed": per_ply["branches_pushed"].sum(),
        "branches_dropped": per_ply["branches_dropped"].sum(),
        "branches_left_pending": left_pending,
        "fresh_games_started": started,
        "fresh_komi_mean": komi_mean,
        "fresh_komi_std": jnp.sqrt(jnp.maximum(komi_square_sum / started - komi_mean ** 2, 0.0)),
        "score_estimate_mae": error.sum() / jnp.maximum(usable.sum(), 1),
        "score_estimate_frames": usable.sum(),
    }
    return {name: jnp.broadcast_to(jnp.asarray(value, jnp.float32), shape) for name, value in totals.items()}
