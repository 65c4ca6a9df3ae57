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

Times are estimated from :data:`MEASURED_RATES` (rates measured on accelerators, with the command that measured them
in zerolab/README.md); a program with no measured rate for the accelerator is "not measured".
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from zerolab.config import check_choice
from zerolab.devices import GIB, ProgramMemory, format_bytes, make_mesh, program_memory
from zerolab.games import Game
from zerolab.networks.network import NetworkInputs, apply_network, count_parameters
from zerolab.selfplay.chunks import ChunkChoice, SelfPlayDoesNotFit, choose_chunk_games
from zerolab.selfplay.frames import Frames, PackedFrames, frame_codec
from zerolab.training.replay import POLICY_ARRAYS, STORAGE_DTYPES, FrameCodec, FrameWindow
from zerolab.training.runs import Components, init_train_state

logger = logging.getLogger(__name__)


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


@dataclasses.dataclass(kw_only=True)
class ProgramCost(ProgramMemory):
    """One compiled program: XLA's figures for a single call (its memory: :class:`zerolab.devices.ProgramMemory`,
    one device's)."""

    name: str
    compile_seconds: float = 0.0
    flops: float = float("nan")
    bytes_accessed: float = float("nan")


def compile_cost(name: str, lowered: Any) -> ProgramCost:
    """Compiles ``lowered`` (a ``jax.stages.Lowered``) and reads its cost and memory analyses (logging a line before
    and after: a plan's compilations take minutes on a CPU)."""
    logger.info("plan: compiling the %s", name)
    started = time.perf_counter()
    compiled = lowered.compile()
    seconds = time.perf_counter() - started
    logger.info("plan: %s compiled in %.1f s", name, seconds)
    cost = compiled.cost_analysis()
    cost = (cost[0] if isinstance(cost, (list, tuple)) else cost) or {}
    return ProgramCost(**dataclasses.asdict(program_memory(compiled)), name=name, compile_seconds=seconds,
                       flops=float(cost.get("flops", float("nan"))),
                       bytes_accessed=float(cost.get("bytes accessed", float("nan"))))


def abstract(tree: Any) -> Any:
    return jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(np.shape(leaf), leaf.dtype), tree)


def tree_bytes(tree: Any) -> int:
    return int(sum(math.prod(leaf.shape) * np.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(tree)))


def random_positions(game: Game, num_games: int = 32, plies: int = 48, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(observation [N, ...] float16, legal_action_mask [N, A])`` of ``num_games`` random legal games (pgx)."""

    @jax.jit
    def play(key):
        def ply(states, key):
            noise = jax.random.gumbel(key, states.legal_action_mask.shape)
            action = jnp.where(states.legal_action_mask, noise, -jnp.inf).argmax(-1)
            stepped = jax.vmap(game.step)(states, action)
            fresh = jax.vmap(game.init)(jax.random.split(key, num_games))
            over = stepped.terminated | stepped.truncated
            stepped = jax.tree.map(lambda new, old: jnp.where(over.reshape((-1,) + (1,) * (old.ndim - 1)), new, old),
                                   fresh, stepped)
            return stepped, (states.observation, states.legal_action_mask)

        states = jax.vmap(game.init)(jax.random.split(key, num_games))
        return jax.lax.scan(ply, states, jax.random.split(key, plies))[1]

    observation, legal = play(jax.random.key(seed))
    observation = np.asarray(observation).reshape((-1,) + tuple(observation.shape[2:])).astype(np.float16)
    return observation, np.asarray(legal).reshape(-1, legal.shape[-1])


@dataclasses.dataclass
class FrameBytes:
    """Host bytes of one replay frame, dense (the storage dtypes) and compact (the window's encoding)."""

    dense: float
    compact: float
    policy_width: int  # non-zero policy entries stored per frame
    positions: int  # random positions the estimate was made from
    codec: FrameCodec  # the window's codec of those positions


#: The device memory budget of a plan when neither ``--device-memory-gib`` nor ``selfplay.device_memory_gib`` sets
#: one: an 80 GB accelerator (an H100).
DEFAULT_PLAN_DEVICE_GIB = 80.0


@dataclasses.dataclass
class DeviceFit:
    """How a run's programs fit one device of a pod under a memory budget.

    Attributes:
      num_devices: devices of the mesh the programs were compiled for.
      games_per_device: self-play games each device plays.
      budget_bytes: the device memory budget.
      chunk: the chunk a device plays its games in (:mod:`zerolab.selfplay.chunks`); None where even one game a
        device does not fit.
      smallest: the smallest self-play program compiled (chunks of one game), where it was compiled.
    """

    num_devices: int
    games_per_device: int
    budget_bytes: int
    chunk: ChunkChoice | None
    smallest: ProgramCost | None = None

    def does_not_fit(self, programs: list[ProgramCost]) -> list[str]:
        """Why the run does not fit a device: self-play (even its chunks of one game) or one of the other
        ``programs`` (the training step) over the budget, in words; empty where it fits."""
        budget = f"the {format_bytes(self.budget_bytes)} budget"
        reasons = []
        if self.chunk is None:
            reasons.append(f"{self.smallest.name} (1 game a device at a time) takes "
                           f"{format_bytes(self.smallest.device_bytes)} a device against {budget}")
        reasons.extend(f"{program.name} takes {format_bytes(program.device_bytes)} a device against {budget}"
                       for program in programs if program.device_bytes > self.budget_bytes)
        return reasons

    def describe(self, selfplay: ProgramCost, training: ProgramCost) -> str:
        """One line: the devices, a device's games, the budget, the chunk chosen (or why it does not fit) and the
        memory a device of self-play and of the training step."""
        head = (f"devices: {self.num_devices}, {self.games_per_device} self-play games a device, budget "
                f"{format_bytes(self.budget_bytes)} a device: ")
        reasons = self.does_not_fit([training])
        if reasons:
            return head + "does not fit: " + "; ".join(reasons)
        chunk = self.chunk
        if chunk.num_chunks == 1:
            played = f"self-play in one chunk, {format_bytes(chunk.device_bytes)} a device"
        else:
            played = (f"self-play in {chunk.num_chunks} chunks of {chunk.chunk_games} games, "
                      f"{format_bytes(chunk.device_bytes)} a device "
                      f"(in one chunk: {format_bytes(selfplay.device_bytes)})")
        return head + f"{played}; training step {format_bytes(training.device_bytes)} a device"


def fit_selfplay(selfplay_fn: Any, variables: Any, key: Any, whole: ProgramCost, budget_bytes: int,
                 num_devices: int) -> tuple[DeviceFit, list[ProgramCost]]:
    """The chunk a device would play its self-play games in under ``budget_bytes`` — the run's own rule
    (:func:`zerolab.selfplay.chunks.choose_chunk_games`) over the programs ``selfplay_fn.lower(variables, key,
    chunk_games)`` compiled here — and the programs compiled beyond ``whole`` (one chunk a device, compiled already),
    named ``self-play, chunks of N``."""
    games = selfplay_fn.games_per_device
    costs = {games: whole}

    def memory_of(chunk_games: int) -> int:
        if chunk_games not in costs:
            costs[chunk_games] = compile_cost(f"self-play, chunks of {chunk_games}",
                                              selfplay_fn.lower(variables, key, chunk_games))
        return costs[chunk_games].device_bytes

    try:
        chunk = choose_chunk_games(games, memory_of, budget_bytes)
    except SelfPlayDoesNotFit:
        chunk = None
    fit = DeviceFit(num_devices, games, budget_bytes, chunk, smallest=costs.get(1))
    return fit, [cost for size, cost in sorted(costs.items(), reverse=True) if size != games]


def plan_mesh(num_devices: int | None) -> Any:
    """The mesh a plan compiles for: one device of the local backend (``None``), or ``num_devices`` CPU devices (a pod
    shape; the CPU backend must have been started with that many:
    ``XLA_FLAGS=--xla_force_host_platform_device_count``)."""
    if num_devices is None:
        return make_mesh(jax.devices()[:1])
    devices = jax.devices("cpu")
    if len(devices) < num_devices:
        raise ValueError(f"a plan on {num_devices} devices needs {num_devices} CPU devices, this process has "
                         f"{len(devices)}: start it with XLA_FLAGS=--xla_force_host_platform_device_count="
                         f"{num_devices} (python -m experiments plan --devices {num_devices} does)")
    return make_mesh(devices[:num_devices])


def frame_bytes(game: Game, simulations: int, search_kind: str, extras_bytes: int) -> FrameBytes:
    """Bytes of a frame of ``game``, from the replay window's own encoding (with the codec self-play stores the
    game's frames with: :func:`zerolab.selfplay.frames.frame_codec`) of random positions whose policy targets cover
    every legal move (Gumbel MuZero's) or, with ``search_kind='muzero'``, at most ``simulations`` of them (visit
    counts); ``extras_bytes``: a method's per-frame fields, added to both."""
    observation, legal = random_positions(game)
    policy = legal.astype(np.float32)
    if search_kind == "muzero":
        policy *= np.cumsum(legal, axis=1) <= simulations
    policy /= np.maximum(policy.sum(axis=1, keepdims=True), 1.0)
    count = len(observation)
    fields = {"observation": observation, "legal_action_mask": legal, "policy_target": policy,
              "value_target": np.zeros(count, np.float32), "value_mask": np.ones(count, bool)}
    window = FrameWindow.from_fields({name: np.asarray(value).astype(STORAGE_DTYPES[name])
                                      for name, value in fields.items()}, frame_codec(game))
    dense = sum(array.nbytes for array in window.fields().values()) / count
    width = int(window.arrays["policy_indices"].shape[1])
    return FrameBytes(dense + extras_bytes, window.bytes_per_frame() + extras_bytes, width, count, window.codec)


def selfplay_host_bytes(frames: PackedFrames, records: Any, frame: FrameBytes) -> int:
    """Bytes self-play sends to the host an iteration: its frames ``[T, B, ...]`` (abstract), stored in the scan,
    with the policy arrays cut to ``frame``'s policy width (:meth:`FrameWindow.from_packed_frames`), extras as they
    are, and its records."""
    def cut(name: str, value: Any) -> Any:
        if name not in POLICY_ARRAYS:
            return value
        return jax.ShapeDtypeStruct(value.shape[:-1] + (min(frame.policy_width, value.shape[-1]),), value.dtype)

    fields = jax.eval_shape(lambda packed: packed.stored_fields(), frames)
    return tree_bytes({name: cut(name, value) for name, value in fields.items()}) + tree_bytes(records)


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

    games = int(config.selfplay.num_games)
    game = components.game
    observation = jax.ShapeDtypeStruct((games,) + tuple(game.observation_shape), jnp.float32)
    legal = jax.ShapeDtypeStruct((games, game.num_actions), jnp.bool_)

    def evaluate(variables, observation, legal):
        return apply_network(components.network, variables, NetworkInputs(observation, legal), train=False)[0]

    evaluation = compile_cost("network evaluation", jax.jit(evaluate).lower(variables, observation, legal))

    batch_size = int(config.train.batch_size)
    shapes = {"observation": tuple(game.observation_shape), "legal_action_mask": (game.num_actions,),
              "policy_target": (game.num_actions,), "value_target": (), "value_mask": ()}
    batch = Frames(**{name: jax.ShapeDtypeStruct((batch_size,) + shapes[name], dtype)
                      for name, dtype in STORAGE_DTYPES.items()},
                   extras={name: jax.ShapeDtypeStruct((batch_size,) + tuple(leaf.shape[2:]), leaf.dtype)
                           for name, leaf in frames.extras.items()})  # the window's dense frames, as training reads them
    training = compile_cost("training step", programs.train_step.lower(state, batch))

    plies = int(config.selfplay.plies_per_iteration)
    simulations = int(config.search.num_simulations)
    frames_per_iteration = games * plies
    window_size = int(config.replay.window_size)
    epochs = float(config.train.epochs_per_iteration)
    iterations = int(config.iterations)
    updates = [components.train.updates(min(window_size, frames_per_iteration * iteration))
               for iteration in range(1, iterations + 1)]
    extras_bytes = sum(math.prod(leaf.shape[2:]) * np.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(frames.extras))
    model = config.model
    size_keys = ("name", "channels", "num_blocks")
    description = {
        # float32 is every measured rate's dtype: only another dtype is an option that sets a rate apart
        "model_options": tuple(sorted((key, value) for key, value in model.items()
                                      if key not in size_keys and (key, value) != ("dtype", "float32"))),
        "game": config.game.name, "model": model.name, "width": int(model.get("channels", 0)),
        "blocks": int(model.get("num_blocks", 0)), "search": config.search.kind, "simulations": simulations,
        "games": games, "plies": plies, "batch_size": batch_size, "window_size": window_size,
        "epochs_per_iteration": epochs, "iterations": iterations,
    }
    frame = frame_bytes(game, simulations, str(config.search.kind), extras_bytes)
    return RunPlan(
        label=label, description=description, programs=[selfplay, *chunk_programs, evaluation, training],
        evaluations_per_iteration=plies * evaluations_per_search(simulations), updates_per_iteration=updates[-1],
        total_updates=sum(updates), frames_per_iteration=frames_per_iteration, iterations=iterations,
        frame=frame, window_size=window_size,
        selfplay_host_bytes=selfplay_host_bytes(frames, records, frame), train_state_bytes=tree_bytes(state),
        parameters=count_parameters(state.params), seconds=time.perf_counter() - started, fit=fit,
        num_devices=int(mesh.devices.size),
    )


def check_accelerator(accelerator: str) -> None:
    """Raises :class:`~zerolab.config.ConfigError` unless some rate of :data:`MEASURED_RATES` was measured on
    ``accelerator`` (time estimates exist only there)."""
    check_choice("--accelerator", accelerator, sorted({rate.accelerator for rate in MEASURED_RATES}))


def matching_rates(plan: RunPlan, program: str, accelerator: str) -> list[MeasuredRate]:
    """The measured rates for ``program`` of this run's game and network family on ``accelerator``."""
    d = plan.description
    return [rate for rate in MEASURED_RATES
            if rate.accelerator == accelerator and rate.program == program and rate.game == d["game"]
            and rate.model == d["model"]]


def estimate_seconds(plan: RunPlan, program: str, accelerator: str) -> tuple[float | None, str]:
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
        from zerolab.config import default_config

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




def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "not measured"
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.1f} s"


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
    lines.append(f"on one {accelerator.upper()}: self-play {_duration(selfplay_seconds)}{per_iteration} ({selfplay_how})")
    per_iteration = " an iteration at a full window" if train_seconds is not None else ""
    lines.append(f"{'':>{len(accelerator) + 8}}training {_duration(train_seconds)}{per_iteration} ({train_how})")
    if selfplay_seconds is not None and train_seconds is not None:
        train_total = train_seconds / plan.updates_per_iteration * plan.total_updates
        lines.append(f"{'':>{len(accelerator) + 8}}whole run: {_duration(selfplay_seconds * plan.iterations + train_total)} "
                     f"({plan.iterations} iterations, {plan.total_updates:,} updates)")
    lines.append(f"(plan made in {plan.seconds:.0f} s on {jax.devices()[0].platform})")
    return "\n".join(lines)


# --- experiments that are not one training run: tables of planned programs ------------------------------------------


@dataclasses.dataclass
class PlannedProgram:
    """A compiled program of an experiment and how often the experiment calls it.

    Attributes:
      cost: the compiled program's figures.
      calls: how many times the whole experiment calls it (an upper bound where games may end early).
      flops_per_call: FLOPs of one call where XLA's count misses loops (a search: its network evaluations); default
        ``cost.flops``.
      what: what one call does, in words.
    """

    cost: ProgramCost
    calls: int
    what: str
    flops_per_call: float | None = None

    @property
    def flops(self) -> float:
        return self.cost.flops if self.flops_per_call is None else self.flops_per_call

    @classmethod
    def evaluation(cls, name: str, game: Game, network: Any, variables: Any, batch: int, calls: int = 1,
                   what: str = "") -> PlannedProgram:
        """One evaluation of ``network`` over ``batch`` positions of ``game`` (abstract ``variables``), compiled."""
        observation = jax.ShapeDtypeStruct((batch,) + tuple(game.observation_shape), jnp.float32)
        legal = jax.ShapeDtypeStruct((batch, game.num_actions), jnp.bool_)
        lowered = jax.jit(lambda v, o, m: apply_network(network, v, NetworkInputs(o, m))[0]).lower(
            variables, observation, legal)
        return cls(compile_cost(name, lowered), calls, what or f"one network evaluation of {batch} positions")

    @classmethod
    def search(cls, cost: ProgramCost, calls: int, what: str, evaluation_flops: float, num_simulations: int,
               searches: int = 1) -> PlannedProgram:
        """A compiled program of ``searches`` searches a call (one move; a self-play call: one a ply) whose FLOPs are
        those of its network evaluations, :func:`evaluations_per_search` of ``evaluation_flops`` each a search: XLA
        counts a loop's body once (the simulations', the plies')."""
        return cls(cost, calls, what,
                   flops_per_call=evaluation_flops * evaluations_per_search(num_simulations) * int(searches))


def evaluation_flops(game: Game, network: Any, variables: Any, batch: int) -> float:
    """FLOPs of one evaluation of ``network`` over ``batch`` positions of ``game`` (:meth:`PlannedProgram.evaluation`),
    compiled once per game, network, batch and variable shapes: a plan's arms of one network share it."""
    leaves, structure = jax.tree.flatten(variables)
    shapes = tuple((tuple(leaf.shape), jnp.dtype(leaf.dtype).name) for leaf in leaves)
    return _evaluation_flops(game, network, int(batch), structure, shapes)


@functools.lru_cache(maxsize=64)
def _evaluation_flops(game: Game, network: Any, batch: int, structure: Any, shapes: tuple) -> float:
    variables = jax.tree.unflatten(structure, [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in shapes])
    return PlannedProgram.evaluation("evaluation", game, network, variables, batch).flops


def evaluations_per_search(num_simulations: int) -> int:
    """The network evaluations of one search of ``num_simulations`` simulations: the root, then one leaf each."""
    return num_simulations + 1


def abstract_states(game: Game, batch: int) -> Any:
    """``jax.ShapeDtypeStruct``s of ``batch`` pgx states of ``game`` (traced, not run)."""
    return jax.eval_shape(lambda key: jax.vmap(game.init)(jax.random.split(key, batch)), jax.random.key(0))


def format_programs(title: str, programs: list[PlannedProgram], notes: list[str] = ()) -> str:
    """A table of an experiment's programs: compile time, FLOPs and device memory per call, calls, total FLOPs (the
    name column as wide as the longest name needs, 34 at least)."""
    width = max([34] + [len(program.cost.name) + 2 for program in programs])
    lines = [f"== {title}",
             f"{'program':<{width}}{'compile':>9}{'GFLOP/call':>13}{'device memory':>15}{'calls':>14}"
             f"{'total PFLOP':>13}  what a call does"]
    for program in programs:
        lines.append(f"{program.cost.name:<{width}}{program.cost.compile_seconds:>8.1f}s{program.flops / 1e9:>13,.2f}"
                     f"{format_bytes(program.cost.device_bytes):>15}{program.calls:>14,}"
                     f"{program.flops * program.calls / 1e15:>13,.2f}  {program.what}")
    total = sum(program.flops * program.calls for program in programs)
    lines.append(f"total: {total / 1e15:,.1f} PFLOP; no rate measured for these programs on an accelerator, so no time "
                 f"estimate (a search's FLOPs are its network evaluations; calls are upper bounds where games end early)")
    lines.extend(notes)
    return "\n".join(lines)
