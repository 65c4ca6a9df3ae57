"""Attuned training: the senior's network fine-tuned on framework games, through the core's jitted self-play.

Both teams are (learner + frozen junior): each ply of the scan searches every game with the learner's network and
asks the junior (maia's policy, frozen variables passed as a jit argument through ``PlayVariables.frozen``) for its
move; then

* STT (:func:`stt_move_rule`): ``where(bit, search's move, junior's argmax)`` with fresh random bits per game, held
  in the rule's per-game carry ``[B, max_game_plies]`` (drawn by the core's standard lane rule when a game starts:
  :func:`stt_lane_rule`);
* HB (:func:`hb_move_rule`): the search's move names its piece type, the hand (maia at T = 1) plays the two-stage
  draw.

``policy_target``: ``played`` (one-hot of the move played, the paper's) or ``search`` (the search's improved
policy); ``train_on``: ``all`` plies or ``senior`` plies only (STT's bit-1 plies; every HB ply has a brain).  The value
target is the game's result W − L from the mover's view with a squared error (a deviation: the paper trains lc0's
W/D/L head with cross-entropy).  Frames carry ``extra_senior`` (the ply's bit; HB also ``extra_named_type``,
``extra_brain_move`` and ``extra_h0``).

``make_method(config, game, framework="stt", ...)`` is the ``config.method`` factory (the experiment passes the
config keys ``attuned.policy_target`` and ``attuned.train_on``); :func:`training_config` is the core training run that
fine-tunes a base run (maia-1900 converted) with it.  A junior that is an external
UCI engine cannot run inside the scan; such a setup plays on the host, through the core's arena
(:func:`skill_compat.teams.play_framework_games`), instead.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import optax

from skill_compat.configs import AttunedConfig
from skill_compat.frameworks import action_piece_types, two_stage_hand
from zerolab import (
    Frames,
    Method,
    MoveRule,
    PlyDecision,
    default_config,
    load_lc0_weights,
    masked_logits,
    run_search,
    standard_lane_rule,
)
from zerolab.play import policy_actions, policy_probabilities

#: ``(learner variables, key, states [B]) -> SearchOutput``: the senior's search (default: the run's search).
SearchFn = Callable[[Any, jax.Array, Any], Any]

POLICY_TARGETS = ("played", "search")
TRAIN_ON = ("all", "senior")
FRAMEWORKS = ("stt", "hb")
#: ``model.name`` of maia-1900 converted to a run (:func:`zerolab.convert_to_run`): the base run's network.
LC0_NETWORK = "zerolab.networks.lc0.network:make_lc0"


def _check(policy_target: str, train_on: str, framework: str = "stt") -> None:
    if policy_target not in POLICY_TARGETS:
        raise ValueError(f"attuned.policy_target must be one of {POLICY_TARGETS}, got {policy_target!r}")
    if train_on not in TRAIN_ON:
        raise ValueError(f"attuned.train_on must be one of {TRAIN_ON}, got {train_on!r}")
    if framework not in FRAMEWORKS:
        raise ValueError(f"attuned framework must be one of {FRAMEWORKS}, got {framework!r}")


def random_bits(max_game_plies: int):
    """The STT rule's carry initialiser: ``[num_games, max_game_plies]`` fair bits."""

    def init_carry(key: jax.Array, num_games: int) -> jax.Array:
        return jax.random.bernoulli(key, 0.5, (num_games, max_game_plies))

    return init_carry


def stt_lane_rule(game, max_game_plies: int):
    """The STT rule's lanes: the core's standard lane rule (games from the start position) whose games start with
    fresh :func:`random_bits`."""
    return standard_lane_rule(game, init_carry=random_bits(max_game_plies))


def default_search(game, network, search_config, rules=None) -> SearchFn:
    def search(variables, key, states):
        return run_search(search_config, game, network, variables, key, states, rules=rules)

    return search


def _target(policy_target: str, action: jax.Array, search_target: jax.Array) -> jax.Array:
    if policy_target == "played":
        return jax.nn.one_hot(action, search_target.shape[-1], dtype=search_target.dtype)
    return search_target


def stt_move_rule(game, network, search_config, junior_variables: Any, max_game_plies: int,
                  policy_target: str = "played", rules=None, search_fn: SearchFn | None = None) -> MoveRule:
    """The STT rule (see the module docstring); ``ply`` [B] indexes each game's bits (the carry of
    :func:`stt_lane_rule`).  ``search_fn`` replaces the senior's search (default: ``run_search`` with ``search_config``
    and ``rules``)."""
    _check(policy_target, "all")
    search_fn = search_fn or default_search(game, network, search_config, rules)

    def act(variables, key, states, ply, bits):
        search_key, junior_key = jax.random.split(key)
        searched = search_fn(variables.learner, search_key, states)
        junior = policy_actions(network, variables.frozen, states, junior_key, "argmax")
        senior = jnp.take_along_axis(bits, jnp.clip(ply, 0, max_game_plies - 1)[:, None], axis=1)[:, 0]
        action = jnp.where(senior, searched.action, junior).astype(jnp.int32)
        return PlyDecision(action=action, policy_target=_target(policy_target, action, searched.policy_target),
                           carry=bits, frame_extras={"senior": senior},
                           summary={**searched.summary, "senior_fraction": senior.astype(jnp.float32)})

    return MoveRule(act=act, frozen_variables=junior_variables)


def hb_move_rule(game, network, search_config, junior_variables: Any, policy_target: str = "played",
                 rules=None, search_fn: SearchFn | None = None) -> MoveRule:
    """The HB rule: the brain's search names its move's piece type, the frozen hand plays the two-stage draw."""
    _check(policy_target, "all")
    search_fn = search_fn or default_search(game, network, search_config, rules)

    def act(variables, key, states, ply, carry):
        del ply
        search_key, hand_key = jax.random.split(key)
        searched = search_fn(variables.learner, search_key, states)
        types = action_piece_types(game, states)
        named = jnp.take_along_axis(types, searched.action[:, None], axis=1)[:, 0]
        probabilities = policy_probabilities(network, variables.frozen, states)
        h0, played = two_stage_hand(hand_key, probabilities, types, named)
        agreement = (h0 == searched.action).astype(jnp.float32)
        return PlyDecision(action=played, policy_target=_target(policy_target, played, searched.policy_target),
                           carry=carry, frame_extras={"senior": jnp.ones_like(named, bool), "named_type": named,
                                                      "brain_move": searched.action, "h0": h0},
                           summary={**searched.summary, "agreement": agreement,
                                    "brain_move_played": (played == searched.action).astype(jnp.float32)})

    return MoveRule(act=act, frozen_variables=junior_variables)


def attuned_loss(train_on: str = "all"):
    """Policy cross-entropy over legal moves (on ``train_on`` frames) + value squared error on W − L over frames
    whose game ended inside the scan."""
    _check("played", train_on)

    def loss(output, frames):
        logits = masked_logits(output.policy_logits, frames.legal_action_mask)
        cross_entropy = optax.softmax_cross_entropy(logits, frames.policy_target.astype(jnp.float32))
        weight = jnp.ones_like(cross_entropy)
        if train_on == "senior":
            weight = frames.extras["senior"].astype(jnp.float32)
        policy_loss = jnp.sum(weight * cross_entropy) / jnp.maximum(weight.sum(), 1.0)
        value_mask = frames.value_mask.astype(jnp.float32)
        value_loss = jnp.sum(value_mask * (output.value - frames.value_target) ** 2) / jnp.maximum(value_mask.sum(), 1.0)
        return policy_loss + value_loss, {"policy_loss": policy_loss, "value_loss": value_loss,
                                          "policy_frames": weight.sum()}

    return loss


def make_method(config, game, framework: str = "stt", policy_target: str = "played", train_on: str = "all",
                junior_weights: str = "") -> Method:
    """``config.method = "skill_compat.attuned:make_method"`` with ``method_options`` ``framework`` (stt|hb),
    ``policy_target``, ``train_on``, ``junior_weights`` (empty: maia-1900)."""
    del config
    _check(policy_target, train_on, framework)
    if getattr(game, "observation", None) != "lc0":
        raise ValueError(f"attuned training plays chess with maia's observation (game.name='chess:lc0'), "
                         f"not {getattr(game, 'name', game)!r}")
    _, junior_variables = load_lc0_weights(junior_weights or None)

    def move_rule(components):
        if framework == "stt":
            return stt_move_rule(components.game, components.network, components.search, junior_variables,
                                 components.selfplay.max_game_plies, policy_target, components.rules)
        return hb_move_rule(components.game, components.network, components.search, junior_variables,
                            policy_target, components.rules)

    def lane_rule(components):
        return stt_lane_rule(components.game, components.selfplay.max_game_plies)

    return Method(loss_fn=attuned_loss(train_on), move_rule=move_rule,
                  lane_rule=lane_rule if framework == "stt" else None)


def host_frames(game, framework_games, policy_target: str = "played") -> Frames:
    """The slow path: training Frames ``[N]`` from host games (:func:`skill_compat.teams.play_framework_games`; a
    junior that is a UCI engine cannot run inside the jitted scan).  The same fields as the jitted STT rule's frames with ``policy_target="played"``: observation
    and legal moves of each position (pgx, stepped move by move), the played move one-hot, the result W − L from the
    mover's view (a capped game: a draw, as in the scan), ``extras["senior"]`` the ply's role."""
    import numpy as np

    if policy_target != "played":
        raise ValueError("host frames know only the played move: policy_target must be 'played'")

    step = game.batched_step
    observations, masks, targets, values, seniors = [], [], [], [], []
    for framework_game in framework_games:
        states = jax.tree.map(lambda leaf: jnp.asarray(leaf)[None], game.init(jax.random.key(0)))
        for record in framework_game.records:
            state = jax.tree.map(lambda leaf: leaf[0], jax.device_get(states))
            action = game.uci_to_action(record["move"], state)
            observations.append(np.asarray(state.observation))
            masks.append(np.asarray(state.legal_action_mask))
            targets.append(np.eye(game.num_actions, dtype=np.float32)[action])
            focal_moved = record["team"] == "focal"
            score = framework_game.focal_score if focal_moved else 1 - framework_game.focal_score
            values.append(2.0 * score - 1.0)
            seniors.append(record.get("role") != "junior")
            states = step(states, jnp.array([action], jnp.int32))
    count = len(values)
    return Frames(observation=jnp.asarray(np.stack(observations)), legal_action_mask=jnp.asarray(np.stack(masks)),
                  policy_target=jnp.asarray(np.stack(targets)), value_target=jnp.asarray(values, jnp.float32),
                  value_mask=jnp.ones(count, bool), extras={"senior": jnp.asarray(seniors)})


def training_config(config: AttunedConfig, base_run: pathlib.Path) -> ml_collections.ConfigDict:
    """The core training run's config (its model architecture read from the base run) of a skill-compat-attuned
    config (typed: :func:`skill_compat.configs.read_config`): its self-play search is the core's with the tree's
    ``max_num_considered_actions`` and then ``training.search``'s changes."""
    training = config.training
    base = json.loads((base_run / "config.json").read_text())
    run = default_config()
    run.seed = config.seed
    run.iterations = training.iterations
    run.game.name = "chess:lc0"
    run.model = ml_collections.ConfigDict(base["model"])
    run.search.max_num_considered_actions = config.tree.search.get("max_num_considered_actions",
                                                                   run.search.max_num_considered_actions)
    run.search.update(training.search.to_section())
    run.selfplay.num_games = training.num_games
    run.selfplay.plies_per_iteration = training.plies_per_iteration
    run.selfplay.max_game_plies = training.max_game_plies
    run.method = "skill_compat.attuned:make_method"
    run.method_options = ml_collections.ConfigDict({
        "framework": config.framework.name, "policy_target": config.attuned.policy_target,
        "train_on": config.attuned.train_on, "junior_weights": config.junior.weights})
    run.train.learning_rate = training.learning_rate
    run.train.batch_size = training.batch_size
    run.train.l2_weight = training.l2_weight
    run.train.optimizer = training.optimizer
    run.train.momentum = training.momentum
    run.train.epochs_per_iteration = training.epochs_per_iteration
    run.init_from = str(base_run)
    run.progress = config.progress
    return run


__all__ = ["LC0_NETWORK", "SearchFn", "host_frames", "attuned_loss", "default_search", "hb_move_rule", "make_method",
           "random_bits", "stt_lane_rule", "stt_move_rule", "training_config"]
