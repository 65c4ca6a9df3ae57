"""SAI's self-play rules on the core's scan: per-game komi, fresh-game komi sampling, branching games and scoring at
each game's own komi.

SAI plays through the core's :func:`~zerolab.make_play_fn` with a move rule (:func:`sai_move_rule`), a lane rule
(:func:`sai_lane_rule`) and a game rule (:func:`sai_game_rule`); each lane's game carries its komi and branch
candidates in the move rule's carry (:class:`SaiGame`), and the lanes of a device share a queue of pending branches
(:class:`SaiShared`).

* **Fresh games** start from the empty board at a komi K drawn so that the current network's Black winrate at K is
  uniform: ``K = ⌊α_∅ + logit(U)/β_∅⌋ + 0.5``, U ~ Unif(0, 1), clipped to ``|K| <= N² + 0.5``
  (:func:`sai_go.branches.sample_komi`; α_∅, β_∅ are the network's on the empty board, Black to move, evaluated once per call).
* **Branch candidates**: each position after a game's first move (its own start excluded) becomes a branch point
  independently with ``branch_probability``, at most ``max_branches`` per game; deciding them as the game is played
  is the same draw as scanning the finished game from move 1.  With ``branch_from_branches`` off only games from
  the empty board give branch points (the paper's procedure, §II-C and §III-C: a standard game is finished, its
  positions may branch, then the next game starts from the empty board), so a fresh game is followed by its own
  0–``max_branches`` branches; on (the default), branches give branch points too.  A branch point s keeps its
  state and the komi ``k' = ⌊α^B_s⌋ + 0.5`` that evens it (α^B_s: the network's α at s, from Black's view),
  clipped like K.
* **When a game ends** (fresh or branch), its candidates join the device's queue of ``queue_size`` pending branches
  (candidates that find no free slot are dropped and counted), then every lane whose game ended takes a pending
  branch if one is left (lowest slot first), else a fresh game (:func:`sai_lane_step`).  A branch is played out from
  s at k' (its plies counted from s's, so the temperature schedule and the ply cap see the whole game); its frames
  carry k' and its own result.  The queue is part of the lanes' shared state, which the training loop carries from
  call to call with the games themselves (and checkpoints): branches still pending at a call's end are played in
  the next.  A call that continues carried lanes first evaluates α_∅, β_∅ again with its own network
  (:func:`sai_lane_resume`), so fresh games' komi follows the current network.
* **Results**: games that end by two passes or at the ply cap (``min(selfplay.max_game_plies, 2·N²)``) are counted
  by area at the game's komi; superko endings keep pgx's winner (:func:`sai_go.scoring.black_result`, in
  :func:`sai_reward`).  Each frame's value target is its game's result from its mover's view (the core's default).

Frames carry ``extras``: ``signed_komi`` (k̄ at the frame), ``komi``, ``alpha`` (the network's α there, mover's view)
and ``branch`` (the frame belongs to a branch game).  The records' ``summary`` holds per-ply statistics (mean β at the
searched roots) and per-call totals broadcast over ``[T, B]`` (branches started and dropped, fresh and branch games
finished, the mean absolute error of the score estimate α^B − k against the final margin of counted games, the fresh
games' komi mean and spread).

Random streams (bit for bit those of SAI's own scan before it moved onto the core's): of the lane rule's ``init``
keys (the call key's streams 1–3, :mod:`zerolab.selfplay.scan`) the empty board's evaluation takes the first and the
first games the third; of its ``step`` keys (the ply key's streams 3–4) the branch draws take the first and the fresh
games the second.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import pgx

from sai_go.branches import BranchQueue, half_integer_komi, komi_limit, pop_branches, push_branches, sample_komi
from sai_go.pass_rules import PASS_RULES, avoid_losing_pass
from sai_go.scoring import black_margin, black_result
from sai_go.search import check_lambda, evaluate, sai_search
from sai_go.selfplay_summary import sai_summary
from sai_go.value import signed_komi
from zerolab import GoGame, MoveRule, PlyDecision, SearchConfig, SelfPlayConfig, make_play_fn
from zerolab.selfplay import (
    GameRule, LaneRule, Lanes, PlayedPly, PlayFn, PlayVariables, advance_lanes, restart_games, select_where,
)


@dataclasses.dataclass(frozen=True)
class SaiSelfPlayOptions:
    """SAI's self-play settings (``method_options`` of an SAI run).

    Attributes:
      lam: λ of the agent in self-play (0.5 in the paper's later runs).
      branch_probability: chance that a position becomes a branch point (0 turns branching off).
      max_branches: branch points per game at most.
      queue_size: pending branches one device holds (≥ 1).
      branch_from_branches: branch games give branch points too (False: only games from the empty board do, the
        paper's procedure).
      pass_rule: ``free`` (the search's move, pass or not), ``no_losing_pass`` (Leela Zero's engine without
        ``--dumbpass``: no pass that leaves the mover behind by the board's area count) or ``no_early_pass`` (no
        pass while a legal move fills no own eye, as Monte Carlo Go playouts): :func:`sai_go.pass_rules.avoid_losing_pass`.
    """

    lam: float = 0.5
    branch_probability: float = 0.025
    max_branches: int = 3
    queue_size: int = 64
    branch_from_branches: bool = True
    pass_rule: str = "free"

    def __post_init__(self):
        check_lambda(self.lam, "method_options.lam")
        if not 0.0 <= self.branch_probability <= 1.0:
            raise ValueError(f"method_options.branch_probability must be in [0, 1], got {self.branch_probability}")
        if self.max_branches < 0:
            raise ValueError(f"method_options.max_branches must be >= 0, got {self.max_branches}")
        if self.queue_size < 1:
            raise ValueError(f"method_options.queue_size must be >= 1, got {self.queue_size}")
        if self.pass_rule not in PASS_RULES:
            raise ValueError(f"method_options.pass_rule must be one of {PASS_RULES}, got {self.pass_rule!r}")


@flax.struct.dataclass
class SaiGame:
    """The move rule's per-game carry ``[B, ...]`` (branch candidates ``[B, M, ...]``): the game's komi, whether it
    is a branch, and the branch points recorded in it so far (slots ``>= candidates`` are stale)."""

    komi: jax.Array
    is_branch: jax.Array
    candidate_states: pgx.State
    candidate_komi: jax.Array
    candidates: jax.Array


@flax.struct.dataclass
class SaiCallSettings:
    """Per-call replacements of the options (traced; the play function's ``settings``,
    :data:`~zerolab.selfplay.PlayFn`).

    Attributes:
      branch_probability: replaces ``SaiSelfPlayOptions.branch_probability`` (None: the options').
      fresh_komi: the komi of every fresh game (a scalar; NaN or None: sampled).
      branch_from_branches: replaces ``SaiSelfPlayOptions.branch_from_branches`` (a bool; None: the options').
    """

    branch_probability: Any = None
    fresh_komi: Any = None
    branch_from_branches: Any = None


@flax.struct.dataclass
class SaiShared:
    """The lanes' per-device state: the pending branches, the network's α_∅, β_∅ on the empty board (Black to
    move) and which lanes hold a fresh game started by ``init`` that no ply has counted yet (for the statistics:
    the first ply counts them as started, then clears it)."""

    queue: BranchQueue
    empty_alpha: jax.Array
    empty_beta: jax.Array
    first_fresh: jax.Array


def call_settings(settings: SaiCallSettings | None) -> SaiCallSettings:
    """The call's settings (None: every option as the options give it)."""
    if settings is None:
        return SaiCallSettings()
    if not isinstance(settings, SaiCallSettings):
        raise TypeError(f"SAI self-play settings must be a SaiCallSettings or None, got {type(settings).__name__}")
    return settings


def sai_move_rule(game: GoGame, network: nn.Module, search_config: SearchConfig, lam: float,
                  pass_rule: str = "free") -> MoveRule:
    """SAI's per-ply move rule: the λ search at each game's komi (:class:`SaiGame` carry, unchanged by the move), the
    move kept or, under ``pass_rule`` ``no_losing_pass`` / ``no_early_pass``, a losing / any pass replaced while a
    move that fills no own eye is legal (:func:`avoid_losing_pass`)."""
    if pass_rule not in PASS_RULES:
        raise ValueError(f"method_options.pass_rule must be one of {PASS_RULES}, got {pass_rule!r}")

    def act(variables: PlayVariables, key: jax.Array, states: pgx.State, ply: jax.Array, sai_game: SaiGame
            ) -> PlyDecision:
        del ply
        searched = sai_search(search_config, game, network, variables.learner, key, states, sai_game.komi, lam)
        action, visit_counts = searched.action, searched.visit_counts
        if pass_rule != "free":
            action, visit_counts = avoid_losing_pass(game, states, sai_game.komi, visit_counts,
                                                     searched.root_prior_logits, action,
                                                     only_when_behind=pass_rule == "no_losing_pass")
        return PlyDecision(
            action=action,
            policy_target=searched.policy_target,
            carry=sai_game,
            visit_counts=visit_counts,
            frame_extras={"signed_komi": signed_komi(sai_game.komi, searched.black_to_move), "komi": sai_game.komi,
                          "alpha": searched.alpha, "branch": sai_game.is_branch},
            summary={"mean_beta": searched.beta, "score_estimate": searched.score_estimate},
        )

    return MoveRule(act=act)


def fresh_games(game: GoGame, key: jax.Array, num_games: int, empty_alpha: jax.Array, empty_beta: jax.Array,
                fixed_komi: jax.Array | None) -> tuple[pgx.State, jax.Array]:
    """``num_games`` empty boards and their komi: sampled from α_∅, β_∅ (:func:`sample_komi`), or ``fixed_komi``
    where it is given and not NaN."""
    state_key, komi_key = jax.random.split(key)
    states = jax.vmap(game.init)(jax.random.split(state_key, num_games))
    sampled = sample_komi(komi_key, empty_alpha, empty_beta, (num_games,), komi_limit(game))
    if fixed_komi is None:
        return states, sampled
    fixed = jnp.asarray(fixed_komi, jnp.float32)  # NaN: sample
    return states, jnp.where(jnp.isnan(fixed), sampled, jnp.full((num_games,), fixed))


def sai_lane_init(game: GoGame, network: nn.Module, options: SaiSelfPlayOptions):
    """SAI's :data:`~zerolab.selfplay.types.LaneInitFn`: α_∅, β_∅ from the network, fresh games at sampled komi, an
    empty queue; ``settings``: the call's :class:`SaiCallSettings` or None."""
    slots = max(int(options.max_branches), 1)

    def init(variables: PlayVariables, keys: jax.Array, num_games: int, settings: SaiCallSettings | None) -> Lanes:
        empty_key, init_key = keys[0], keys[2]
        empty = jax.vmap(game.init)(empty_key[None])
        _, empty_value = evaluate(network, variables.learner, empty)  # Black to move on the empty board
        empty_alpha, empty_beta = empty_value.alpha[0], empty_value.beta[0]
        settings = call_settings(settings)
        states, komi = fresh_games(game, init_key, num_games, empty_alpha, empty_beta, settings.fresh_komi)
        rule_carry = SaiGame(
            komi=komi, is_branch=jnp.zeros(num_games, bool),
            candidate_states=jax.tree.map(lambda leaf: jnp.repeat(leaf[:, None], slots, axis=1), states),
            candidate_komi=jnp.zeros((num_games, slots)), candidates=jnp.zeros(num_games, jnp.int32),
        )
        queue = BranchQueue(states=jax.tree.map(lambda leaf: jnp.repeat(leaf[:1], options.queue_size, axis=0), states),
                            komi=jnp.zeros(options.queue_size), valid=jnp.zeros(options.queue_size, bool))
        shared = SaiShared(queue=queue, empty_alpha=empty_alpha, empty_beta=empty_beta,
                           first_fresh=jnp.ones(num_games, bool))
        zeros = jnp.zeros(num_games, jnp.int32)
        return Lanes(states=states, ply=zeros, first_ply=zeros, rule_carry=rule_carry, shared=shared)

    return init


def sai_lane_resume(game: GoGame, network: nn.Module):
    """SAI's :data:`~zerolab.selfplay.types.LaneResumeFn`: carried lanes keep their games and pending branches; α_∅,
    β_∅ are the calling network's (evaluated as ``init`` does, from the first of its keys)."""

    def resume(variables: PlayVariables, keys: jax.Array, lanes: Lanes, settings: SaiCallSettings | None) -> Lanes:
        del settings
        empty = jax.vmap(game.init)(keys[0][None])
        _, empty_value = evaluate(network, variables.learner, empty)
        return lanes.replace(shared=lanes.shared.replace(empty_alpha=empty_value.alpha[0],
                                                         empty_beta=empty_value.beta[0]))

    return resume


def sai_reward(game: GoGame):
    """SAI's :data:`~zerolab.selfplay.types.RewardFn`: a finished game's result at its own komi, from the mover's
    view."""

    def reward(lanes: Lanes, next_states: pgx.State, game_over: jax.Array) -> jax.Array:
        komi = lanes.rule_carry.komi
        final_black = jnp.where(next_states.terminated, black_result(game, next_states, komi),
                                jnp.sign(black_margin(game, next_states, komi)))
        return jnp.where(game_over, jnp.where(game.black_to_move(lanes.states), final_black, -final_black), 0.0)

    return reward


def record_branch_point(key: jax.Array, probability: jax.Array | float, sai_game: SaiGame, states: pgx.State,
                        black_alpha: jax.Array, moves_in_game: jax.Array, max_branches: int, limit: float,
                        branch_from_branches: bool | jax.Array = True) -> SaiGame:
    """Each game's position ``states`` [B] becomes its next branch point with ``probability`` (after the game's first
    move, at most ``max_branches`` a game; not in a branch game unless ``branch_from_branches``), with the komi
    ``⌊black_alpha⌋ + 0.5`` that evens it."""
    slots = sai_game.candidate_komi.shape[1]
    chosen = ((moves_in_game >= 1) & (sai_game.candidates < max_branches)
              & jax.random.bernoulli(key, probability, (moves_in_game.shape[0],)))
    if isinstance(branch_from_branches, jax.Array):  # traced: one program for both
        chosen = chosen & (branch_from_branches | ~sai_game.is_branch)
    elif not branch_from_branches:
        chosen = chosen & ~sai_game.is_branch
    slot_mask = chosen[:, None] & (jnp.arange(slots)[None] == sai_game.candidates[:, None])
    states_per_slot = jax.tree.map(lambda leaf: leaf[:, None], states)
    return sai_game.replace(
        candidate_states=select_where(slot_mask, states_per_slot, sai_game.candidate_states),
        candidate_komi=jnp.where(slot_mask, half_integer_komi(black_alpha, limit)[:, None], sai_game.candidate_komi),
        candidates=sai_game.candidates + chosen.astype(jnp.int32),
    )


def sai_lane_step(game: GoGame, options: SaiSelfPlayOptions):
    """SAI's :data:`~zerolab.selfplay.types.LaneStepFn`: records the ply's branch point, then finished games hand in
    their branch points and take a pending branch or a fresh game; statistics for :func:`sai_go.selfplay_summary.sai_summary`."""
    max_branches = int(options.max_branches)
    slots = max(max_branches, 1)
    limit = komi_limit(game)

    def step(keys: jax.Array, lanes: Lanes, played: PlayedPly, settings: SaiCallSettings | None
             ) -> tuple[Lanes, dict]:
        branch_key, fresh_key = keys[0], keys[1]
        settings = call_settings(settings)
        sai_game, shared, states = lanes.rule_carry, lanes.shared, lanes.states
        num_games, game_over = played.game_over.shape[0], played.game_over
        branch_probability = settings.branch_probability
        if branch_probability is None:
            branch_probability = options.branch_probability

        alpha = played.decision.frame_extras["alpha"]
        branch_from_branches = settings.branch_from_branches
        if branch_from_branches is None:
            branch_from_branches = bool(options.branch_from_branches)
        going_on = record_branch_point(branch_key, branch_probability, sai_game, states,
                                       jnp.where(game.black_to_move(states), alpha, -alpha),
                                       lanes.ply - lanes.first_ply, max_branches, limit,
                                       branch_from_branches)
        margin = black_margin(game, played.next_states, sai_game.komi)
        counted = game_over & ~game.ended_by_rule_violation(played.next_states)

        # Finished games hand in their branch points, then take pending branches or start afresh.
        filled = jnp.arange(slots)[None] < going_on.candidates[:, None]
        flat = lambda tree: jax.tree.map(lambda leaf: leaf.reshape((-1,) + leaf.shape[2:]), tree)  # noqa: E731
        queue, pushed, dropped = push_branches(shared.queue, flat(going_on.candidate_states),
                                               going_on.candidate_komi.reshape(-1),
                                               (filled & game_over[:, None]).reshape(-1))
        queue, taken, branch_states, branch_komi = pop_branches(queue, game_over)
        fresh_states, fresh_komi = fresh_games(game, fresh_key, num_games, shared.empty_alpha, shared.empty_beta,
                                               settings.fresh_komi)
        new_states = select_where(taken, branch_states, fresh_states)
        fresh_started = game_over & ~taken

        next_game = going_on.replace(komi=jnp.where(taken, branch_komi, fresh_komi), is_branch=taken,
                                     candidates=jnp.zeros_like(going_on.candidates))
        advanced = advance_lanes(lanes, played)
        next_lanes = restart_games(advanced.replace(rule_carry=going_on), game_over, new_states,
                                   game.plies_played(new_states), next_game)
        first_fresh = shared.first_fresh
        statistics = {"branches_started": taken.sum(), "branches_pushed": pushed, "branches_dropped": dropped,
                      "fresh_started": fresh_started.sum(),
                      "first_fresh": first_fresh.sum(),
                      "first_komi_sum": jnp.where(first_fresh, sai_game.komi, 0.0).sum(),
                      "first_komi_square_sum": jnp.where(first_fresh, sai_game.komi ** 2, 0.0).sum(),
                      "fresh_finished": (game_over & ~sai_game.is_branch).sum(),
                      "branch_finished": (game_over & sai_game.is_branch).sum(),
                      "fresh_komi_sum": jnp.where(fresh_started, fresh_komi, 0.0).sum(),
                      "fresh_komi_square_sum": jnp.where(fresh_started, fresh_komi ** 2, 0.0).sum(),
                      "margin": margin, "counted": counted}
        return next_lanes.replace(shared=shared.replace(queue=queue, first_fresh=jnp.zeros_like(first_fresh))), statistics

    return step


def check_go(game) -> GoGame:
    if not isinstance(game, GoGame):
        raise ValueError(f"SAI self-play plays Go only, got game {game.name!r} (set game.name=go)")
    return game


def sai_lane_rule(game: GoGame, network: nn.Module, options: SaiSelfPlayOptions) -> LaneRule:
    """SAI's :class:`~zerolab.selfplay.LaneRule`: :func:`sai_lane_init`, :func:`sai_lane_step`,
    :func:`sai_lane_resume`."""
    check_go(game)
    return LaneRule(init=sai_lane_init(game, network, options), step=sai_lane_step(game, options),
                    resume=sai_lane_resume(game, network))


def sai_game_rule(game: GoGame) -> GameRule:
    """SAI's :class:`~zerolab.selfplay.GameRule`: :func:`sai_reward`, :func:`sai_summary` (the core's max-ply rule and
    value targets are kept)."""
    check_go(game)
    return GameRule(reward=sai_reward(game), summarize=sai_summary)


def make_sai_play_fn(game: GoGame, network: nn.Module, search_config: SearchConfig, config: SelfPlayConfig,
                     options: SaiSelfPlayOptions):
    """One device's SAI self-play ``play(variables, key, num_games, frozen=None, branch_probability=None,
    fresh_komi=None, branch_from_branches=None) -> (Frames [T, B], PlyRecord)``: the core's scan with SAI's move, lane
    and game rules.

    ``branch_probability`` and ``branch_from_branches`` override the options' for this call; ``fresh_komi`` (a
    scalar; NaN: sample) replaces the sampled komi of fresh games (all may be traced).  They travel as the core's
    per-call ``settings`` (:class:`SaiCallSettings`); SAI plays with no frozen variables."""
    core_play: PlayFn = make_play_fn(game, sai_move_rule(game, network, search_config, options.lam,
                                                     options.pass_rule), config,
                                     lane_rule=sai_lane_rule(game, network, options), game_rule=sai_game_rule(game))

    def play(variables: Any, key: jax.Array, num_games: int, frozen_variables: Any = None,
             branch_probability: jax.Array | float | None = None, fresh_komi: jax.Array | float | None = None,
             branch_from_branches: jax.Array | bool | None = None):
        del frozen_variables
        settings = None
        if branch_probability is not None or fresh_komi is not None or branch_from_branches is not None:
            settings = SaiCallSettings(branch_probability=branch_probability, fresh_komi=fresh_komi,
                                       branch_from_branches=branch_from_branches)
        return core_play(variables, key, num_games, None, settings)

    return play
