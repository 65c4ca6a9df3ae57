"""Time estimates of a planned training run from rates measured on accelerators (:data:`MEASURED_RATES`, with the
commands that measured them in zerolab/README.md): a rate measured at the run's exact sizes is used as it is, one of
the same game and network family at other sizes is scaled by the compiled programs' FLOPs (:func:`estimate_seconds`),
and a program with no measured rate is "not measured".
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from zerolab.config import check_choice
from zerolab.selfplay.frames import Frames
from zerolab.training.program_cost import PlannedProgram, compile_cost, evaluations_per_search
from zerolab.training.runs import Components
from zerolab.training.train_state import init_train_state


@dataclasses.dataclass(frozen=True)
class MeasuredRate:
    """A rate measured on an accelerator for one program: self-play moves/s or training samples/s."""

    accelerator: str
    program: str  # "selfplay" (moves/s) or "train" (samples/s)
    game: str
    model: str  # model.name
    width: int
    blocks: int
    simulations: int  # self-play only (0 for training)
    batch: int  # games in parallel (self-play) or batch size (training)
    rate: float
    source: str
    model_options: tuple = ()  # the model config's other keys ((key, value), ...) when measured: () = none set


#: Rates measured on one NVIDIA H100 80GB (zerolab/README.md, "Measured on a GPU", 2026-11-23, mctx's search loop;
#: AlphaGateau as it was then, before its ``block``/``heads``/``pooling`` keys: the paper's architecture is estimated).
MEASURED_RATES = (
    MeasuredRate("h100", "selfplay", "chess", "alphagateau.network:make_alphagateau", 128, 5, 128, 256, 141.0,
                 "zerolab bench, 256 games × 8 plies"),
    MeasuredRate("h100", "selfplay", "chess", "resnet", 128, 5, 128, 256, 246.0, "zerolab bench, 256 games × 8 plies"),
    MeasuredRate("h100", "train", "chess", "alphagateau.network:make_alphagateau", 128, 5, 0, 256, 7706.0,
                 "zerolab bench --only train, batch 256"),
    MeasuredRate("h100", "train", "chess", "alphagateau.network:make_alphagateau", 128, 5, 0, 1024, 9159.0,
                 "zerolab bench --only train, batch 1024"),
    MeasuredRate("h100", "train", "chess", "resnet", 128, 5, 0, 1024, 150414.0, "zerolab bench --only train, batch 1024"),
)


def check_accelerator(accelerator: str) -> None:
    """Raises :class:`~zerolab.config.ConfigError` unless some rate of :data:`MEASURED_RATES` was measured on
    ``accelerator`` (time estimates exist only there)."""
    check_choice("--accelerator", accelerator, sorted({rate.accelerator for rate in MEASURED_RATES}))


def matching_rates(plan: Any, program: str, accelerator: str) -> list[MeasuredRate]:
    """The measured rates for ``program`` of ``plan``'s game and network family on ``accelerator`` (``plan``: a
:class:`zerolab.training.plan.RunPlan`, which imports this module)."""
    d = plan.description
    return [rate for rate in MEASURED_RATES
            if rate.accelerator == accelerator and rate.program == program and rate.game == d["game"]
            and rate.model == d["model"]]


def estimate_seconds(plan: Any, program: str, accelerator: str) -> tuple[float | None, str]:
    """``(seconds per iteration at a full window, how)`` for ``program`` ('selfplay' or 'train') on ``accelerator``.

    A rate measured at this run's exact sizes is used as it is; one measured for the same game and network family at
    other sizes is scaled by the ratio of the compiled programs' FLOPs per move or per sample (an estimate, said so);
    with none, ``None, 'not measured'``."""
    d = plan.description
    work = plan.frames_per_iteration if program == "selfplay" else plan.updates_per_iteration * d["batch_size"]
    exact = [rate for rate in matching_rates(plan, program, accelerator)
             if (rate.width, rate.blocks, rate.model_options) == (d["width"], d["blocks"], d["model_options"])
             and (program == "train" or rate.simulations == d["simulations"])
             and rate.batch == (d["games"] if program == "selfplay" else d["batch_size"])]
    if exact:
        return work / exact[0].rate, f"measured: {exact[0].rate:,.0f}/s ({exact[0].source})"
    similar = matching_rates(plan, program, accelerator)
    if not similar:
        return None, f"no rate measured for {d['game']} with {d['model']} on {accelerator}"
    reference = similar[0]
    flops = plan.flops_per_iteration[program] / work
    reference_flops = reference_flops_per_item(reference)
    rate = reference.rate * reference_flops / flops
    options = ", other model keys" if reference.model_options != d["model_options"] else ""
    return work / rate, (f"estimate: {rate:,.0f}/s, scaled by FLOPs from {reference.rate:,.0f}/s measured at width "
                         f"{reference.width}, {reference.blocks} blocks{options}, batch {reference.batch}"
                         + (f", {reference.simulations} simulations" if program == "selfplay" else ""))


_REFERENCE_FLOPS: dict[MeasuredRate, float] = {}


def reference_flops_per_item(rate: MeasuredRate) -> float:
    """FLOPs per move (self-play: (simulations + 1) network evaluations) or per sample (training) of the network
    a rate was measured with, from its compiled forward pass or training step."""
    if rate not in _REFERENCE_FLOPS:
        from zerolab.config import ConfigDict
        from zerolab.training.runs import default_config

        config = default_config()
        config.game.name = rate.game
        config.model = ConfigDict({"name": rate.model, "channels": rate.width, "num_blocks": rate.blocks})
        components = Components.from_config(config)
        state = jax.eval_shape(lambda key: init_train_state(components.network, components.game,
                                                            components.optimizer, key), jax.random.key(0))
        variables = {"params": state.params, "batch_stats": state.batch_stats}
        game = components.game
        observation = jax.ShapeDtypeStruct((rate.batch,) + tuple(game.observation_shape), jnp.float32)
        legal = jax.ShapeDtypeStruct((rate.batch, game.num_actions), jnp.bool_)
        if rate.program == "selfplay":
            evaluation = PlannedProgram.evaluation("reference", game, components.network, variables, rate.batch)
            _REFERENCE_FLOPS[rate] = evaluation.flops * evaluations_per_search(rate.simulations) / rate.batch
        else:
            from zerolab.training.train import loss_fn

            def gradient(params, batch_stats, observation, legal, policy, value, mask):
                frames = Frames(observation, legal, policy, value, mask)
                return jax.grad(loss_fn, has_aux=True)(params, batch_stats, components.network, frames, 0.0)

            policy = jax.ShapeDtypeStruct((rate.batch, game.num_actions), jnp.float16)
            scalar = jax.ShapeDtypeStruct((rate.batch,), jnp.float32)
            mask = jax.ShapeDtypeStruct((rate.batch,), jnp.bool_)
            observation16 = jax.ShapeDtypeStruct(observation.shape, jnp.float16)
            lowered = jax.jit(gradient).lower(state.params, state.batch_stats, observation16, legal, policy, scalar, mask)
            _REFERENCE_FLOPS[rate] = compile_cost("reference", lowered).flops / rate.batch
    return _REFERENCE_FLOPS[rate]


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "not measured"
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.1f} s"


__all__ = ["MEASURED_RATES", "MeasuredRate", "check_accelerator", "estimate_seconds", "format_duration",
           "matching_rates", "reference_flops_per_item"]
