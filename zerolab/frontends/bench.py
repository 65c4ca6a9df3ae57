"""Benchmarks: self-play and training throughput, and the cost of the project's machinery over a bare loop.

``python -m zerolab bench`` prints one JSON line per case.  A self-play case times the project's jitted self-play
(``zerolab.selfplay.programs``) and a bare reference loop written here in a few lines — pgx + ``mctx.gumbel_muzero_policy``
+ the same network, with its own recurrent function — on the same game, network, batch and number of simulations,
and reports ``overhead`` = project time / reference time.  It also times the case's *floor* (:func:`floor_program`):
the work self-play cannot avoid — per ply, S + 1 network evaluations and S game steps on the batch, with no tree —
and reports ``efficiency`` = floor time / project time (1 would mean the search costs nothing beyond that work).
Self-play, floor and reference are timed in rounds (:func:`interleaved_best_times`), so a busy spell on a shared
machine slows all three alike.  A training case times ``zerolab.training.train``'s update step.
Each timing is the best of ``repeats`` runs after a warm-up run that compiles; ``compile_s`` is the self-play's first
run's time (compilation plus one run), and ``peak_memory_gib`` the device's peak allocation where the backend reports it
(GPU, TPU).  Cases name any network the configs can (``model="alphagateau.network:make_alphagateau"``), so the same
command measures the paper-scale settings on an accelerator:
``python -m zerolab bench --game chess --model alphagateau.network:make_alphagateau --width 128 --blocks 5
--games 256 --plies 32 --simulations 128``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import time
from collections.abc import Callable, Mapping

import flax.struct
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec
import mctx
import ml_collections
import numpy as np

from zerolab.devices import DATA_AXIS, make_mesh, replicate, shard_host_batch
from zerolab.games import make_game
from zerolab.networks.network import NetworkInputs, apply_network, count_parameters, init_variables, make_network
from zerolab.search.config import SearchConfig
from zerolab.search.mcts import evaluate
from zerolab.selfplay.frames import Frames
from zerolab.selfplay.hooks import standard_initial_states
from zerolab.selfplay.programs import make_selfplay_fn
from zerolab.selfplay.types import SelfPlayConfig
from zerolab.training.train_state import TrainConfig, init_train_state, make_optimizer
from zerolab.training.train import make_train_step

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class BenchCase:
    game: str = "gardner_chess"
    channels: int = 32
    num_blocks: int = 2
    num_games: int = 64
    plies: int = 32
    num_simulations: int = 32
    train_batch_size: int = 256
    search: tuple[tuple[str, str], ...] = ()  # search overrides as text, e.g. (("rules", "pkg.mod:rules"),)
    model: str = "resnet"  # config.model.name: "resnet" or "package.module:factory"
    dtype: str = "float32"  # config.model.dtype: what the network computes in (float32 | bfloat16)
    reference: bool = True  # also time the bare pgx + mctx loop
    floor: bool = True  # also time the floor: the evaluations and game steps alone (floor_program)

    def model_config(self) -> ml_collections.ConfigDict:
        """``config.model`` for this case: ``channels`` and ``num_blocks`` under the case's network name, computing in
        ``dtype``."""
        return ml_collections.ConfigDict(
            {"name": self.model, "channels": self.channels, "num_blocks": self.num_blocks, "dtype": self.dtype})

    def search_config(self) -> SearchConfig:
        """The case's search: Gumbel with ``num_simulations``, then the ``search`` overrides."""
        return SearchConfig(kind="gumbel", num_simulations=self.num_simulations).with_overrides(dict(self.search))


DEFAULT_CASES = (
    BenchCase(game="gardner_chess", channels=32, num_blocks=2, num_games=64, plies=32, num_simulations=32),
    BenchCase(game="chess", channels=32, num_blocks=2, num_games=32, plies=16, num_simulations=32),
)


def first_call_seconds(function: Callable[[], object], label: str = "") -> float:
    """Seconds of ``function``'s first call (compilation included), logged (INFO)."""
    started = time.perf_counter()
    jax.block_until_ready(function())
    first = time.perf_counter() - started
    logger.info("%s: first call (compiling) %.1f s", label, first)
    return first


def timed_runs(function: Callable[[], object], repeats: int, label: str = "") -> tuple[float, float]:
    """``(first_seconds, best_seconds)``: the first call (compilation included), then the best of ``repeats``.
    Each call's time is logged (INFO), so a case cut short by a time limit still says how far it got."""
    first = first_call_seconds(function, label)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        jax.block_until_ready(function())
        times.append(time.perf_counter() - started)
        logger.info("%s: run %.2f s", label, times[-1])
    return first, min(times)


def best_time(function: Callable[[], object], repeats: int, label: str = "") -> float:
    return timed_runs(function, repeats, label)[1]


def interleaved_best_times(functions: Mapping[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """``{name: best seconds of repeats}`` for already-compiled ``functions``, timed in rounds (each round runs each
    function once, in order), so that a busy spell on a shared machine slows every function alike."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    seconds = {name: float("inf") for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            started = time.perf_counter()
            jax.block_until_ready(function())
            elapsed = time.perf_counter() - started
            seconds[name] = min(seconds[name], elapsed)
            logger.info("%s: run %.3f s", name, elapsed)
    return seconds


def peak_memory_gib() -> float | None:
    """Peak bytes the first local device has allocated, in GiB, or None where the backend keeps no statistics."""
    stats = jax.local_devices()[0].memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    return None if peak is None else peak / 2**30


def reference_selfplay(game, network, num_games: int, plies: int, num_simulations: int):
    """The bare loop: pgx + mctx.gumbel_muzero_policy + the network, nothing else (the standard search; a case with
    other search settings or rules is timed against it all the same, so its overhead includes theirs)."""

    def evaluate(variables, states):
        output, _ = apply_network(network, variables, NetworkInputs(states.observation, states.legal_action_mask))
        logits = output.policy_logits
        return jnp.where(states.legal_action_mask, logits, jnp.finfo(logits.dtype).min), output.value

    def recurrent_fn(variables, key, action, states):
        mover = states.current_player
        states = jax.vmap(game.env.step)(states, action)
        logits, value = evaluate(variables, states)
        reward = states.rewards[jnp.arange(num_games), mover]
        output = mctx.RecurrentFnOutput(
            reward=reward,
            discount=jnp.where(states.terminated, 0.0, -1.0),
            prior_logits=logits,
            value=jnp.where(states.terminated, 0.0, value),
        )
        return output, states

    @jax.jit
    def run(variables, key):
        def ply(carry, _):
            states, key = carry
            key, search_key, reset_key = jax.random.split(key, 3)
            logits, value = evaluate(variables, states)
            root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=states)
            output = mctx.gumbel_muzero_policy(variables, search_key, root, recurrent_fn, num_simulations,
                                               invalid_actions=~states.legal_action_mask)
            next_states = jax.vmap(game.env.step)(states, output.action)
            fresh = jax.vmap(game.env.init)(jax.random.split(reset_key, num_games))
            done = next_states.terminated.reshape(-1)
            next_states = jax.tree.map(lambda a, b: jnp.where(done.reshape((-1,) + (1,) * (b.ndim - 1)), a, b),
                                       fresh, next_states)
            return (next_states, key), (states.observation, output.action_weights, next_states.rewards)

        states = jax.vmap(game.env.init)(jax.random.split(key, num_games))
        _, outputs = jax.lax.scan(ply, (states, key), None, length=plies)
        return outputs

    return run


@flax.struct.dataclass
class FloorCounts:
    """The work one ply of the floor did: ``evaluations`` (network calls on the batch) and ``steps`` (batched game
    steps), int32 scalars ([T] once stacked over the plies)."""

    evaluations: jax.Array
    steps: jax.Array


@flax.struct.dataclass
class FloorWalk:
    """The floor's carry through one ply's simulations.

    Attributes:
      states: [B] the positions reached by the latest step.
      logits: [B, A] their masked policy logits (the latest evaluation); the next step plays their argmax.
      value_total: [B] the sum of every value evaluated this ply, so that no evaluation is dead code.
      counts: the work done so far this ply.
    """

    states: object
    logits: jax.Array
    value_total: jax.Array
    counts: FloorCounts


@flax.struct.dataclass
class FloorPly:
    """What the floor keeps of each ply: ``value_total`` [T, B], ``action`` [T, B] (the argmax of the ply's last
    evaluation) and ``counts`` ([T] each); returning them keeps every evaluation and step of the ply live."""

    value_total: jax.Array
    action: jax.Array
    counts: FloorCounts


def floor_program(game, network, num_games: int, plies: int, num_simulations: int
                  ) -> Callable[[object, jax.Array], FloorPly]:
    """The floor of self-play: a jitted ``run(variables, key) -> FloorPly`` doing, for each of ``plies`` plies, only
    the work a search of ``num_simulations`` (S) simulations cannot avoid on a batch of ``num_games`` (B) games —
    S + 1 network evaluations (the root, then one per simulation) and S batched game steps — with no tree.

    One ply evaluates its root states, then each simulation steps the latest states by the argmax of the latest
    evaluation's logits and evaluates the result: a walk S plies deep, each evaluation feeding the next step (and
    a value sum returned), so XLA cannot drop any of the work.  The first simulation's states are the next ply's
    roots: the move played is a child the tree already holds, so self-play's own move step is not part of the floor.
    Evaluation is the search's (:func:`zerolab.search.mcts.evaluate`), steps are the game's (``vmap(game.step)``),
    the start is self-play's (:func:`zerolab.selfplay.hooks.standard_initial_states`); the vmapped step costs the same
    for a finished game (pgx selects between both branches), so games that end need no reset.
    """
    initial_states = standard_initial_states(game)

    def simulate(variables, walk: FloorWalk) -> FloorWalk:
        """One simulation's work: a batched step by the latest logits' argmax, then an evaluation of the result."""
        states = jax.vmap(game.step)(walk.states, jnp.argmax(walk.logits, axis=-1))
        logits, value = evaluate(network, variables, states)
        counts = FloorCounts(evaluations=walk.counts.evaluations + 1, steps=walk.counts.steps + 1)
        return FloorWalk(states=states, logits=logits, value_total=walk.value_total + value, counts=counts)

    def ply(variables, states, _):
        logits, value = evaluate(network, variables, states)
        walk = FloorWalk(states=states, logits=logits, value_total=value,
                         counts=FloorCounts(evaluations=jnp.int32(1), steps=jnp.int32(0)))
        walk = simulate(variables, walk)
        next_states = walk.states
        walk = jax.lax.fori_loop(1, num_simulations, lambda _, carry: simulate(variables, carry), walk)
        return next_states, FloorPly(value_total=walk.value_total, action=jnp.argmax(walk.logits, axis=-1),
                                     counts=walk.counts)

    @jax.jit
    def run(variables, key: jax.Array) -> FloorPly:
        _, outputs = jax.lax.scan(functools.partial(ply, variables), initial_states(key, num_games), None,
                                  length=plies)
        return outputs

    return run


@dataclasses.dataclass(frozen=True)
class SelfPlayProgram:
    """A case's jitted self-play with its arguments: ``run()`` plays one scan (the thing timed and profiled)."""

    game: object
    network: object
    variables: dict
    run: Callable[[], object]


def selfplay_program(case: BenchCase) -> SelfPlayProgram:
    game = make_game(case.game)
    network = make_network(case.model_config(), game)
    variables = init_variables(network, game, jax.random.key(0))
    mesh = make_mesh()
    config = SelfPlayConfig(num_games=case.num_games, plies_per_iteration=case.plies, max_game_plies=10_000)
    project = make_selfplay_fn(game, network, case.search_config(), config, mesh)
    replicated_variables = replicate(variables, mesh)
    key = jax.random.key(1)
    return SelfPlayProgram(game, network, variables, lambda: project(replicated_variables, key))


def comparison_programs(case: BenchCase, program: SelfPlayProgram) -> dict[str, Callable[[], object]]:
    """``{"floor": run, "reference": run}`` (each where the case asks for it): what the case's self-play is timed
    against, on its game, network and variables.  The floor splits the games over the devices as self-play does and
    runs every device's share at once (``shard_map``, each device its own key), so where devices share the machine's
    cores (host devices on a CPU) the floor has the same cores as self-play."""
    key = jax.random.key(1)
    programs = {}
    if case.floor:
        mesh = make_mesh()
        floor = floor_program(program.game, program.network, case.num_games // mesh.devices.size, case.plies,
                              case.search_config().num_simulations)
        if mesh.devices.size == 1:
            programs["floor"] = lambda: floor(program.variables, key)
        else:
            def per_device(variables, key):
                return floor(variables, jax.random.fold_in(key, jax.lax.axis_index(DATA_AXIS)))

            sharded_floor = jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=(PartitionSpec(), PartitionSpec()),
                                                  out_specs=PartitionSpec(DATA_AXIS), check_vma=False))
            replicated_variables = replicate(program.variables, mesh)
            programs["floor"] = lambda: sharded_floor(replicated_variables, key)
    if case.reference:
        reference = reference_selfplay(program.game, program.network, case.num_games, case.plies,
                                       case.num_simulations)
        programs["reference"] = lambda: reference(program.variables, key)
    return programs


def selfplay_result(case: BenchCase, parameters: int, seconds: Mapping[str, float], compile_seconds: float,
                    peak_memory: float | None) -> dict:
    """A self-play case's JSON record from its best times ``seconds`` (``project`` and, where timed, ``floor`` and
    ``reference``): rates, ``overhead`` = project / reference and ``efficiency`` = floor / project."""
    moves = case.num_games * case.plies
    project_seconds = seconds["project"]
    result = {
        "case": "selfplay",
        **dataclasses.asdict(case),
        "search": dict(case.search),
        "parameters": parameters,
        "devices": jax.device_count(),
        "selfplay_moves_per_s": moves / project_seconds,
        "simulations_per_s": moves * case.num_simulations / project_seconds,
        # one evaluation of the root and one per simulation, for every game of the batch
        "network_evaluations_per_s": moves * (case.num_simulations + 1) / project_seconds,
        "project_s": project_seconds,
    }
    if "reference" in seconds:
        result.update(reference_s=seconds["reference"], reference_moves_per_s=moves / seconds["reference"],
                      overhead=project_seconds / seconds["reference"])
    if "floor" in seconds:
        result.update(floor_s=seconds["floor"], efficiency=seconds["floor"] / project_seconds)
    result.update(compile_s=compile_seconds, peak_memory_gib=peak_memory)
    return result


def bench_selfplay(case: BenchCase, repeats: int) -> dict:
    """Times the case's self-play beside its floor and the bare reference loop (each compiled by a first call, then
    the best of ``repeats`` interleaved rounds) and returns :func:`selfplay_result`."""
    program = selfplay_program(case)
    compile_seconds = first_call_seconds(program.run, f"self-play {case.model} {case.game}")
    peak_memory = peak_memory_gib()
    comparisons = comparison_programs(case, program)
    for name, function in comparisons.items():
        first_call_seconds(function, name)
    seconds = interleaved_best_times({"project": program.run, **comparisons}, repeats)
    return selfplay_result(case, count_parameters(program.variables["params"]), seconds, compile_seconds,
                           peak_memory)


def training_program(case: BenchCase, updates: int = 10) -> Callable[[], object]:
    """``updates`` training steps of the case's network on one random batch of ``train_batch_size`` frames."""
    game = make_game(case.game)
    network = make_network(case.model_config(), game)
    optimizer = make_optimizer(TrainConfig(learning_rate=1e-3))
    mesh = make_mesh()
    step = make_train_step(network, optimizer, mesh, 0.0)
    rng = np.random.default_rng(0)
    batch = case.train_batch_size
    policy = rng.random((batch, game.num_actions)).astype(np.float32)
    frames = Frames(
        observation=rng.random((batch, *game.observation_shape)).astype(np.float32),
        legal_action_mask=np.ones((batch, game.num_actions), bool),
        policy_target=policy / policy.sum(-1, keepdims=True),
        value_target=rng.choice([-1.0, 0.0, 1.0], batch).astype(np.float32),
        value_mask=np.ones(batch, bool),
    )
    state_holder = [replicate(init_train_state(network, game, optimizer, jax.random.key(0)), mesh)]

    def run_updates():
        for _ in range(updates):
            state_holder[0], metrics = step(state_holder[0], shard_host_batch(frames, mesh))
        return metrics

    return run_updates


def bench_training(case: BenchCase, repeats: int, updates: int = 10) -> dict:
    seconds = best_time(training_program(case, updates), repeats, f"{updates} updates {case.model}")
    batch = case.train_batch_size
    return {"case": "train", "game": case.game, "model": case.model, "dtype": case.dtype, "channels": case.channels,
            "num_blocks": case.num_blocks, "batch_size": batch, "devices": jax.device_count(),
            "train_samples_per_s": updates * batch / seconds, "peak_memory_gib": peak_memory_gib()}


def run_benchmarks(cases=DEFAULT_CASES, repeats: int = 3, print_fn=print,
                   benches: tuple[str, ...] = ("selfplay", "train")) -> list[dict]:
    known = {"selfplay": bench_selfplay, "train": bench_training}
    unknown = [name for name in benches if name not in known]
    if unknown:
        raise ValueError(f"benches {unknown}: expected some of {sorted(known)}")
    results = []
    for case in cases:
        for bench in (known[name] for name in benches):
            result = bench(case, repeats)
            result["backend"] = jax.default_backend()
            print_fn(json.dumps(result))
            results.append(result)
    return results
