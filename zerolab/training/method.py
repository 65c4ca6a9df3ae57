"""Methods: what a training run may replace besides the network and the search rules.

A method is chosen by ``config.method`` (empty for AlphaZero, else ``"package.module:factory"``) with
``config.method_options`` as keyword arguments: ``factory(config, game, **method_options) -> Method``.  Each field of
:class:`Method` is a typed hook with AlphaZero's behaviour as its default, so a method states only what it changes:

* ``loss_fn`` (:data:`LossFn`): the training loss over a :class:`~zerolab.networks.network.NetworkOutput` and the frames
  (the core adds ``train.l2_weight`` times the parameters' squared norm).
* ``move_rule`` (:data:`MoveRuleFactory`): the per-ply move rule of self-play (two players of a team, a frozen
  partner network, ...); its ``PlyDecision.frame_extras`` become per-frame fields that replay and checkpoints carry.
* ``lane_rule`` (:data:`LaneRuleFactory`): how games begin and follow one another in self-play's lanes
  (:class:`~zerolab.selfplay.types.LaneRule`: ``init``, ``step``) — fresh games from other positions or with a
  move-rule carry (:func:`~zerolab.selfplay.hooks.standard_lane_rule`), SAI's per-game komi and branches from a
  per-device queue.
* ``game_rule`` (:data:`GameRuleFactory`): how moves are scored and the records summed up
  (:class:`~zerolab.selfplay.types.GameRule`: reward, records' summary) — SAI's scoring at each game's komi; its
  ``None`` parts stay the core's.

The training loop (:mod:`zerolab.training.train`) jits and shards whatever the method supplies exactly as it does the defaults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from zerolab.games import Game
from zerolab.networks.network import NetworkOutput
from zerolab.config import load_factory
from zerolab.search.mcts import masked_logits
from zerolab.selfplay.frames import Frames
from zerolab.selfplay.hooks import search_move_rule, standard_lane_rule
from zerolab.selfplay.scan import make_play_fn
from zerolab.selfplay.types import GameRule, LaneRule, MoveRule, PlayFn

# The factories below receive the run's ``zerolab.training.runs.Components`` (game, network, search, rules, self-play
# sizes); that module sits above this one (it builds the method), so the type is not imported here.
Components = Any

LossFn = Callable[[NetworkOutput, Frames], tuple[jax.Array, dict[str, jax.Array]]]
"""``(network output over a batch [N], frames [N]) -> (scalar loss, {metric name: scalar})``."""
MoveRuleFactory = Callable[[Components], MoveRule]
"""``(components) -> MoveRule``: builds the per-ply move rule from the run's game, network and search."""
LaneRuleFactory = Callable[[Components], LaneRule]
"""``(components) -> LaneRule``: builds the lane rule from the run's game, network, search and sizes."""
GameRuleFactory = Callable[[Components], GameRule]
"""``(components) -> GameRule``: builds the game rule from the run's game, network, search and sizes."""


def alphazero_loss(output: NetworkOutput, frames: Frames) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Policy cross-entropy (illegal actions masked) + value squared error over frames with a known outcome."""
    logits = masked_logits(output.policy_logits, frames.legal_action_mask)
    policy_target = frames.policy_target.astype(jnp.float32)
    policy_loss = optax.softmax_cross_entropy(logits, policy_target).mean()
    value_mask = frames.value_mask.astype(jnp.float32)
    value_loss = jnp.sum(value_mask * (output.value - frames.value_target) ** 2) / jnp.maximum(value_mask.sum(), 1.0)
    return policy_loss + value_loss, {"policy_loss": policy_loss, "value_loss": value_loss}


@dataclasses.dataclass(frozen=True)
class Method:
    """A training method's hooks; ``None`` keeps the core's default for that part (see the module docstring)."""

    loss_fn: LossFn = alphazero_loss
    move_rule: MoveRuleFactory | None = None
    lane_rule: LaneRuleFactory | None = None
    game_rule: GameRuleFactory | None = None

    def selfplay_parts(self, components: Components) -> tuple[PlayFn, Any]:
        """``(one device's self-play, the frozen variables it plays with)``: the core's scan with the method's move
        rule, lane rule and game rule."""
        move_rule = self.make_move_rule(components)
        game_rule = self.game_rule(components) if self.game_rule is not None else None
        play_fn = make_play_fn(components.game, move_rule, components.selfplay, self.make_lane_rule(components),
                               game_rule=game_rule)
        return play_fn, move_rule.frozen_variables

    def make_move_rule(self, components: Components) -> MoveRule:
        if self.move_rule is not None:
            return self.move_rule(components)
        return search_move_rule(components.game, components.network, components.search, components.rules)

    def make_lane_rule(self, components: Components) -> LaneRule:
        if self.lane_rule is not None:
            return self.lane_rule(components)
        return standard_lane_rule(components.game)

    def games_from_start_position(self, components: Components) -> bool:
        """Self-play's games start from the game's start position and are scored by pgx (its PGN can be written)."""
        return self.game_rule is None and self.make_lane_rule(components).from_start_position


ALPHAZERO = Method()


def make_method(config: Any, game: Game) -> Method:
    """The method named by ``config.method`` (AlphaZero when empty or absent, as in configs of older runs)."""
    name = config.get("method", "") or ""
    if not name:
        return ALPHAZERO
    options = config.get("method_options", None)
    options = options.to_dict() if hasattr(options, "to_dict") else dict(options or {})
    method = load_factory(name, "method")(config, game, **options)
    if not isinstance(method, Method):
        raise TypeError(f"method={name!r} returned {type(method).__name__}, expected zerolab.training.method.Method")
    return method
