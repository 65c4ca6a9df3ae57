"""Cost plans: what a training run's programs cost, read from the compiled programs themselves, before any run.

:func:`plan_training_run` builds a run's programs exactly as :func:`zerolab.training.train.run` does (same components, same
jitted functions), lowers and compiles them ahead of time with abstract inputs (``jax.ShapeDtypeStruct``: nothing is
initialised or run at the preset's size) on the local backend, and reads XLA's ``cost_analysis`` and
``memory_analysis``:

* **self-play**: the whole scan of one iteration — its device memory (arguments, outputs, temporaries) and compile
  time.  XLA counts the body of a loop once, whatever its trip count, so its FLOPs are not the iteration's.  Under a
  device memory budget, the chunk a device would play its games in (:func:`fit_selfplay`, the run's own rule:
  :mod:`zerolab.selfplay.chunks`), or "does not fit" where even chunks of one game are over it;
* **network evaluation**: one forward pass over the self-play batch (no loops); self-play evaluates it
  ``plies × (simulations + 1)`` times an iteration (the root, then one leaf per simulation);
* **training step**: one update at ``train.batch_size`` (no loops), ``epochs × window / batch`` times an iteration.

At a pod shape (``num_devices``: that many CPU devices, emulated with ``XLA_FLAGS=
--xla_force_host_platform_device_count=N``, which ``python -m experiments plan --devices N`` sets) the programs are
compiled sharded over a mesh of those devices as a run on N accelerators compiles them, and their memory is one
device's.

Host memory comes from the replay window's real encoding (:class:`zerolab.training.replay.FrameCodec`) of positions from random
legal games played by pgx, with policy targets as wide as the most legal moves seen (Gumbel MuZero's target covers
every legal move; a visit-count target at most ``num_simulations``).  What self-play sends to the host is its frames
as the device encodes them with that codec (:func:`zerolab.training.replay.encode_device_frames`: the window's
arrays, policy width rounded up to a step) plus its records, not the program's float32 outputs.

Times are estimated from rates measured on accelerators (:mod:`zerolab.training.rates`); a program with no measured
rate for the accelerator is "not measured".  What one program costs is :mod:`zerolab.training.program_cost`'s, how
the programs fit a device and the host :mod:`zerolab.training.device_fit`'s.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from zerolab.devices import GIB, format_bytes
from zerolab.networks.network import NetworkInputs, apply_network, count_parameters
from zerolab.selfplay.frames import Frames
from zerolab.training.device_fit import (
    DEFAULT_PLAN_DEVICE_GIB, DeviceFit, FrameBytes, fit_selfplay, frame_bytes, plan_mesh, selfplay_host_bytes,
)
from zerolab.training.program_cost import ProgramCost, compile_cost, evaluations_per_search, tree_bytes
from zerolab.training.rates import estimate_seconds, format_duration
from zerolab.training.replay import STORAGE_DTYPES
from zerolab.training.runs import Components
from zerolab.training.train_state import init_train_state


@dataclasses.dataclass
class RunPlan:
    """What one training run costs: its programs, its per-iteration counts and its host memory."""

    label: str
    description: dict
    programs: list[ProgramCost]
    evaluations_per_iteration: int  # network forward passes over the self-play batch
    updates_per_iteration: int  # at a full window
    total_updates: int  # over every iteration of the run
    frames_per_iteration: int
    iterations: int
    frame: FrameBytes
    window_size: int
    selfplay_host_bytes: int  # self-play's frames (encoded on the device) and records brought to the host an iteration
    train_state_bytes: int
    parameters: int
    seconds: float  # what making this plan took
    fit: DeviceFit | None = None  # how the programs fit one device of the mesh under the budget
    num_devices: int = 1  # the mesh the programs were compiled over

    def program(self, name: str) -> ProgramCost:
        return next(program for program in self.programs if program.name == name)

    @property
    def flops_per_iteration(self) -> dict[str, float]:
        """An iteration's FLOPs over all devices.  The network evaluation is compiled over the whole self-play batch
        on one device (its FLOPs are every game's); the training step is compiled sharded over the mesh, and XLA
        counts an SPMD program's FLOPs for one device, so they are multiplied by the devices."""
        return {"selfplay": self.program("network evaluation").flops * self.evaluations_per_iteration,
                "train": self.program("training step").flops * self.updates_per_iteration * self.num_devices}


def plan_training_run(config: Any, label: str = "run", num_devices: int | None = None,
                      device_memory_gib: float | None = None) -> RunPlan:
    """The cost plan of ``zerolab.training.train.run(config)``'s programs on one device of the local backend, or
    sharded over ``num_devices`` CPU devices (:func:`plan_mesh`; memory is then one device's), and how they fit a
    device of ``device_memory_gib`` GiB (default: ``selfplay.device_memory_gib``, else
    :data:`DEFAULT_PLAN_DEVICE_GIB`)."""
    started = time.perf_counter()
    components = Components.from_config(config)
    mesh = plan_mesh(num_devices)
    optimizer = components.optimizer
    state = jax.eval_shape(lambda key: init_train_state(components.network, components.game, optimizer, key),
                           jax.random.key(0))
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    key = jax.random.key(0)

    from zerolab.training.train import run_programs

    programs = run_programs(components, mesh)  # what the run calls (zerolab.training.train.RunPrograms)
    selfplay_fn = programs.selfplay
    selfplay_lowered = selfplay_fn.lower(variables, key)
    selfplay = compile_cost("self-play", selfplay_lowered)
    frames, records = selfplay_lowered.out_info
    budget_gib = device_memory_gib or components.selfplay.device_memory_gib or DEFAULT_PLAN_DEVICE_GIB
    fit, chunk_programs = fit_selfplay(selfplay_fn, variables, key, selfplay, int(budget_gib * GIB),
                                       mesh.devices.size)

    games = components.selfplay.num_games
    game = components.game
    observation = jax.ShapeDtypeStruct((games,) + tuple(game.observation_shape), jnp.float32)
    legal = jax.ShapeDtypeStruct((games, game.num_actions), jnp.bool_)

    def evaluate(variables, observation, legal):
        return apply_network(components.network, variables, NetworkInputs(observation, legal), train=False)[0]

    evaluation = compile_cost("network evaluation", jax.jit(evaluate).lower(variables, observation, legal))

    batch_size = components.train.batch_size
    shapes = {"observation": tuple(game.observation_shape), "legal_action_mask": (game.num_actions,),
              "policy_target": (game.num_actions,), "value_target": (), "value_mask": ()}
    batch = Frames(**{name: jax.ShapeDtypeStruct((batch_size,) + shapes[name], dtype)
                      for name, dtype in STORAGE_DTYPES.items()},
                   extras={name: jax.ShapeDtypeStruct((batch_size,) + tuple(leaf.shape[2:]), leaf.dtype)
                           for name, leaf in frames.extras.items()})  # the window's dense frames, as training reads them
    training = compile_cost("training step", programs.train_step.lower(state, batch))

    plies = components.selfplay.plies_per_iteration
    simulations = components.search.num_simulations
    frames_per_iteration = games * plies
    window_size = components.replay.window_size
    epochs = components.train.epochs_per_iteration
    iterations = components.run.iterations
    updates = [components.train.updates(min(window_size, frames_per_iteration * iteration))
               for iteration in range(1, iterations + 1)]
    extras_bytes = sum(math.prod(leaf.shape[2:]) * np.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(frames.extras))
    model = config.model
    size_keys = ("name", "channels", "num_blocks")
    description = {
        # float32 is every measured rate's dtype: only another dtype is an option that sets a rate apart
        "model_options": tuple(sorted((key, value) for key, value in model.items()
                                      if key not in size_keys and (key, value) != ("dtype", "float32"))),
        "game": config.game.name, "model": model.name, "width": model.get("channels", 0),
        "blocks": model.get("num_blocks", 0), "search": components.search.kind, "simulations": simulations,
        "games": games, "plies": plies, "batch_size": batch_size, "window_size": window_size,
        "epochs_per_iteration": epochs, "iterations": iterations,
    }
    frame = frame_bytes(game, simulations, components.search.kind, extras_bytes)
    return RunPlan(
        label=label, description=description, programs=[selfplay, *chunk_programs, evaluation, training],
        evaluations_per_iteration=plies * evaluations_per_search(simulations), updates_per_iteration=updates[-1],
        total_updates=sum(updates), frames_per_iteration=frames_per_iteration, iterations=iterations,
        frame=frame, window_size=window_size,
        selfplay_host_bytes=selfplay_host_bytes(frames, records, frame), train_state_bytes=tree_bytes(state),
        parameters=count_parameters(state.params), seconds=time.perf_counter() - started, fit=fit,
        num_devices=int(mesh.devices.size),
    )


def format_plan(plan: RunPlan, accelerator: str = "h100") -> str:
    """The plan as text: programs, per-iteration work, host memory and time estimates on ``accelerator``."""
    d = plan.description
    lines = [f"== {plan.label}: {d['game']}, {d['model']} (width {d['width']}, {d['blocks']} blocks, "
             f"{plan.parameters:,} parameters), {d['search']} {d['simulations']} simulations, {d['games']} games × "
             f"{d['plies']} plies, batch {d['batch_size']}, window {d['window_size']:,}, {d['iterations']} iterations",
             f"{'program':<26}{'compile':>10}{'GFLOP/call':>14}{'device memory':>16}{'  (arguments / outputs / temporaries)'}"]
    for program in plan.programs:
        flops = f"{program.flops / 1e9:,.2f}" + ("*" if program.name.startswith("self-play") else "")
        lines.append(f"{program.name:<26}{program.compile_seconds:>9.1f}s{flops:>14}{format_bytes(program.device_bytes):>16}"
                     f"  ({format_bytes(program.argument_bytes)} / {format_bytes(program.output_bytes)} / {format_bytes(program.temp_bytes)})")
    lines.append("* XLA counts a loop's body once: self-play's FLOPs below come from its network evaluations")
    if plan.fit is not None:
        lines.append(plan.fit.describe(plan.program("self-play"), plan.program("training step")))
    flops = plan.flops_per_iteration
    def per_device(key: str) -> str:
        return "" if plan.num_devices == 1 else f" ({flops[key] / plan.num_devices / 1e12:,.1f} a device)"

    lines.append(f"per iteration, all {plan.num_devices} devices: {plan.frames_per_iteration:,} frames; "
                 f"{plan.evaluations_per_iteration:,} evaluations of {d['games']} positions = "
                 f"{flops['selfplay'] / 1e12:,.1f} TFLOP{per_device('selfplay')}; {plan.updates_per_iteration:,} "
                 f"updates (full window) = {flops['train'] / 1e12:,.1f} TFLOP{per_device('train')}")
    frame = plan.frame
    lines.append(f"host: replay frame {frame.dense / 1024:.1f} KB dense, {frame.compact / 1024:.2f} KB compact "
                 f"(policy width {frame.policy_width}, from {frame.positions} random positions); window "
                 f"{format_bytes(frame.dense * plan.window_size)} dense, "
                 f"{format_bytes(frame.compact * plan.window_size)} compact; self-play to host "
                 f"{format_bytes(plan.selfplay_host_bytes)} an iteration (frames as the scan stores them, policy cut "
                 f"to the widest frame, and records)")
    lines.append(f"checkpoints: train state {format_bytes(plan.train_state_bytes)}; replay chunk of new frames "
                 f"{format_bytes(frame.compact * min(plan.frames_per_iteration, plan.window_size))} an iteration")
    selfplay_seconds, selfplay_how = estimate_seconds(plan, "selfplay", accelerator)
    train_seconds, train_how = estimate_seconds(plan, "train", accelerator)
    per_iteration = " an iteration" if selfplay_seconds is not None else ""
    lines.append(f"on one {accelerator.upper()}: self-play {format_duration(selfplay_seconds)}{per_iteration} ({selfplay_how})")
    per_iteration = " an iteration at a full window" if train_seconds is not None else ""
    lines.append(f"{'':>{len(accelerator) + 8}}training {format_duration(train_seconds)}{per_iteration} ({train_how})")
    if selfplay_seconds is not None and train_seconds is not None:
        train_total = train_seconds / plan.updates_per_iteration * plan.total_updates
        lines.append(f"{'':>{len(accelerator) + 8}}whole run: {format_duration(selfplay_seconds * plan.iterations + train_total)} "
                     f"({plan.iterations} iterations, {plan.total_updates:,} updates)")
    lines.append(f"(plan made in {plan.seconds:.0f} s on {jax.devices()[0].platform})")
    return "\n".join(lines)


__all__ = ["RunPlan", "format_plan", "plan_training_run"]
