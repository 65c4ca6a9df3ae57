"""SAI's training method for the core loop: the komi-aware loss, and SAI's move and game rules on the core's self-play.

``method = "sai_go.train:make_method"`` with ``method_options`` (``lam``, ``branch_probability``, ``max_branches``,
``queue_size``: :class:`~sai_go.selfplay.SaiSelfPlayOptions`) and ``model.name = "sai_go.network:make_sai_network"``.
The core runs everything else — replay window (the frames' komi travels as ``extra_signed_komi``), checkpoints,
resume, metrics.

Loss: ``CE(π, p) + (z − (2ρ_s(0) − 1))² (+ the core's L2)``, with ``2ρ_s(0) − 1 = tanh(β_s(α_s + k̄_s)/2)``; the
gradient flows through both α and β.  (The reference implementation's form; it is 4× the paper's squared error on
ρ.)
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from zerolab import Frames, GoGame, Method, NetworkOutput, masked_logits
from sai_go.network import sigmoid_value
from sai_go.selfplay import SaiSelfPlayOptions, sai_game_rule, sai_move_rule


def sai_loss(output: NetworkOutput, frames: Frames) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Policy cross-entropy + squared error of the komi-aware value over frames whose game finished."""
    if "signed_komi" not in frames.extras:
        raise ValueError(f"SAI frames need the extra field 'signed_komi', got {sorted(frames.extras)}")
    value = sigmoid_value(output)
    logits = masked_logits(output.policy_logits, frames.legal_action_mask)
    policy_loss = optax.softmax_cross_entropy(logits, frames.policy_target.astype(jnp.float32)).mean()
    predicted = jnp.tanh(0.5 * value.beta * (value.alpha + frames.extras["signed_komi"].astype(jnp.float32)))
    mask = frames.value_mask.astype(jnp.float32)
    value_loss = jnp.sum(mask * (frames.value_target - predicted) ** 2) / jnp.maximum(mask.sum(), 1.0)
    return policy_loss + value_loss, {"policy_loss": policy_loss, "value_loss": value_loss,
                                      "train_mean_beta": value.beta.mean(), "train_mean_abs_alpha": jnp.abs(value.alpha).mean()}


def make_method(config: Any, game: GoGame, **options) -> Method:
    """The ``config.method`` factory; ``options`` are :class:`SaiSelfPlayOptions` fields."""
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
        raise ValueError(f"unknown method_options {unknown} for SAI; valid: {sorted(known)}")
    selfplay_options = SaiSelfPlayOptions(**options)
    return Method(
        loss_fn=sai_loss,
        move_rule=lambda components: sai_move_rule(components.game, components.network, components.search,
                                                   selfplay_options.lam),
        game_rule=lambda components: sai_game_rule(components.game, components.network, selfplay_options),
    )
