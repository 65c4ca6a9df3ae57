"""SAI's training method for the core loop: the komi-aware loss, and SAI's move, lane and game rules on the core's
self-play.

``method = "sai_go.train:make_method"`` with ``method_options`` (``value_loss``, and ``lam``,
``branch_probability``, ``max_branches``, ``queue_size``, ``branch_from_branches``, ``pass_rule``:
:class:`~sai_go.selfplay.SaiSelfPlayOptions`) and ``model.name = "sai_go.network:make_sai_network"``.  The core runs
everything else — replay window (the frames' komi travels as ``extra_signed_komi``), checkpoints, resume, metrics.

Loss: ``CE(π, p) + value loss (+ the core's L2)`` with ρ_s(0) = σ(β_s(α_s + k̄_s)) and z the mover's result (±1, 0 a
tie); the gradient flows through both α and β.  ``value_loss`` (:data:`VALUE_LOSSES`):

* ``paper`` — the paper's (§III-B, §III-C: "the usual l² loss ... with v_s substituted with ρ_s(0)", "l² norm for
  the winning rate"): ``((1 + z)/2 − ρ_s(0))²``, the squared error of the winrate against the result on [0, 1];
* ``tanh`` — Leela Zero's training code's scale (z ∈ {−1, 1} against a value on [−1, 1], weight 1):
  ``(z − (2ρ_s(0) − 1))²`` with ``2ρ_s(0) − 1 = tanh(β_s(α_s + k̄_s)/2)``: exactly 4× ``paper``, so it weighs the
  value 4× against the policy (sai-go tiny's, as before the key existed).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import optax

from zerolab import Frames, GoGame, Method, NetworkOutput, masked_logits
from sai_go.network import sigmoid_value
from sai_go.selfplay import SaiSelfPlayOptions, sai_game_rule, sai_lane_rule, sai_move_rule


#: The value losses ``method_options.value_loss`` names (module docstring).
VALUE_LOSSES = ("paper", "tanh")


def sai_loss(output: NetworkOutput, frames: Frames,
             value_loss: str = "tanh") -> tuple[jax.Array, dict[str, jax.Array]]:
    """Policy cross-entropy + squared error of the komi-aware value over frames whose game finished, on the scale
    ``value_loss`` names (``paper``: winrate on [0, 1]; ``tanh``: value on [−1, 1], 4× larger)."""
    if "signed_komi" not in frames.extras:
        raise ValueError(f"SAI frames need the extra field 'signed_komi', got {sorted(frames.extras)}")
    if value_loss not in VALUE_LOSSES:
        raise ValueError(f"method_options.value_loss must be one of {VALUE_LOSSES}, got {value_loss!r}")
    value = sigmoid_value(output)
    logits = masked_logits(output.policy_logits, frames.legal_action_mask)
    policy_loss = optax.softmax_cross_entropy(logits, frames.policy_target.astype(jnp.float32)).mean()
    komi = frames.extras["signed_komi"].astype(jnp.float32)
    if value_loss == "paper":
        error = (0.5 * (1.0 + frames.value_target) - jax.nn.sigmoid(value.beta * (value.alpha + komi))) ** 2
    else:  # as written before the paper's form, operation for operation (the pinned update's)
        error = (frames.value_target - jnp.tanh(0.5 * value.beta * (value.alpha + komi))) ** 2
    mask = frames.value_mask.astype(jnp.float32)
    value_loss = jnp.sum(mask * error) / jnp.maximum(mask.sum(), 1.0)
    return policy_loss + value_loss, {"policy_loss": policy_loss, "value_loss": value_loss,
                                      "train_mean_beta": value.beta.mean(), "train_mean_abs_alpha": jnp.abs(value.alpha).mean()}


def make_method(config: Any, game: GoGame, value_loss: str = "tanh", **options) -> Method:
    """The ``config.method`` factory; ``value_loss`` (:data:`VALUE_LOSSES`), ``options`` are
    :class:`SaiSelfPlayOptions` fields."""
    if not isinstance(game, GoGame):
        raise ValueError(f"method=sai_go.train:make_method trains Go only, got game {game.name!r}")
    model_name = config.model.name
    if model_name != "sai_go.network:make_sai_network":
        raise ValueError(f"method=sai_go.train:make_method needs model.name='sai_go.network:make_sai_network' "
                         f"(α and β heads), got {model_name!r}")
    if config.search.get("rules", ""):
        raise ValueError(f"SAI's search makes its own rules from method_options.lam; leave search.rules empty "
                         f"(got {config.search.rules!r})")
    known = set(SaiSelfPlayOptions.__dataclass_fields__)
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown method_options {unknown} for SAI; valid: {sorted(known | {'value_loss'})}")
    if value_loss not in VALUE_LOSSES:
        raise ValueError(f"method_options.value_loss must be one of {VALUE_LOSSES}, got {value_loss!r}")
    selfplay_options = SaiSelfPlayOptions(**options)
    return Method(
        loss_fn=functools.partial(sai_loss, value_loss=value_loss),
        move_rule=lambda components: sai_move_rule(components.game, components.network, components.search,
                                                   selfplay_options.lam, selfplay_options.pass_rule),
        lane_rule=lambda components: sai_lane_rule(components.game, components.network, selfplay_options),
        game_rule=lambda components: sai_game_rule(components.game),
    )
