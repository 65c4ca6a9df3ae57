"""Benchmarks: self-play and training throughput, and the cost of the project's machinery over a bare loop.

``python -m zerolab bench`` prints one JSON line per case.  A self-play case times the project's jitted self-play
(``zerolab.selfplay.scan``) and a bare reference loop written here in a few lines — pgx + ``mctx.gumbel_muzero_policy``
+ the same network, with its own recurrent function — on the same game, network, batch and number of simulations,
and reports ``overhead`` = project time / reference time.  A training case times ``zerolab.training.train``'s update step.
Each timing is the best of ``repeats`` runs after a warm-up run that compiles; ``compile_s`` is that first run's
time (compilation plus one run), and ``peak_memory_gib`` the device's peak allocation where the backend reports it
(GPU, TPU).  Cases name any network the configs can (``model="alphagateau.network:make_alphagateau"``), so the same
command measures the paper-scale settings on an accelerator:
``python -m zerolab bench --game chess --model alphagateau.network:make_alphagateau --width 128 --blocks 5
--games 256 --plies 32 --simulations 128``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import mctx
import ml_collections
import numpy as np

from zerolab.devices import make_mesh, replicate, shard_host_batch
from zerolab.games import make_game
from zerolab.networks.network import NetworkInputs, apply_network, count_parameters, init_variables, make_network
from zerolab.search.mcts import SearchConfig
from zerolab.selfplay.scan import Frames, SelfPlayConfig, make_selfplay_fn
from zerolab.training.train import init_train_state, make_optimizer, make_train_step

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
    reference: bool = True  # also time the bare pgx + mctx loop

    def model_config(self) -> ml_collections.ConfigDict:
        """``config.model`` for this case: ``channels`` and ``num_blocks`` (and ``embedding_size`` = channels, which
        AlphaGateau reads) under the case's network name."""
        return ml_collections.ConfigDict(
            {"name": self.model, "channels": self.channels, "embedding_size": self.channels,
             "num_blocks": self.num_blocks})


DEFAULT_CASES = (
    BenchCase(game="gardner_chess", channels=32, num_blocks=2, num_games=64, plies=32, num_simulations=32),
    BenchCase(game="chess", channels=32, num_blocks=2, num_games=32, plies=16, num_simulations=32),
)


def timed_runs(function: Callable[[], object], repeats: int, label: str = "") -> tuple[float, float]:
    """``(first_seconds, best_seconds)``: the first call (compilation included), then the best of ``repeats``.
    Each call's time is logged (INFO), so a case cut short by a time limit still says how far it got."""
    started = time.perf_counter()
    jax.block_until_ready(function())
    first = time.perf_counter() - started
    logger.info("%s: first call (compiling) %.1f s", label, first)
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
    search = SearchConfig(kind="gumbel", num_simulations=case.num_simulations).with_overrides(dict(case.search))
    config = SelfPlayConfig(num_games=case.num_games, plies_per_iteration=case.plies, max_game_plies=10_000)
    project = make_selfplay_fn(game, network, search, config, mesh)
    replicated_variables = replicate(variables, mesh)
    key = jax.random.key(1)
    return SelfPlayProgram(game, network, variables, lambda: project(replicated_variables, key))


def bench_selfplay(case: BenchCase, repeats: int) -> dict:
    program = selfplay_program(case)
    game, network, variables, key = program.game, program.network, program.variables, jax.random.key(1)
    compile_seconds, project_seconds = timed_runs(program.run, repeats, f"self-play {case.model} {case.game}")
    moves = case.num_games * case.plies
    result = {
        "case": "selfplay",
        **dataclasses.asdict(case),
        "search": dict(case.search),
        "parameters": count_parameters(variables["params"]),
        "devices": jax.device_count(),
        "selfplay_moves_per_s": moves / project_seconds,
        "simulations_per_s": moves * case.num_simulations / project_seconds,
        # one evaluation of the root and one per simulation, for every game of the batch
        "network_evaluations_per_s": moves * (case.num_simulations + 1) / project_seconds,
        "project_s": project_seconds,
        "compile_s": compile_seconds,
        "peak_memory_gib": peak_memory_gib(),
    }
    if case.reference:
        reference = reference_selfplay(game, network, case.num_games, case.plies, case.num_simulations)
        reference_seconds = best_time(lambda: reference(variables, key), repeats, "reference loop")
        result.update(reference_s=reference_seconds, reference_moves_per_s=moves / reference_seconds,
                      overhead=project_seconds / reference_seconds)
    return result


def training_program(case: BenchCase, updates: int = 10) -> Callable[[], object]:
    """``updates`` training steps of the case's network on one random batch of ``train_batch_size`` frames."""
    game = make_game(case.game)
    network = make_network(case.model_config(), game)
    optimizer = make_optimizer(type("TrainConfig", (), {"learning_rate": 1e-3}))
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
    return {"case": "train", "game": case.game, "model": case.model, "channels": case.channels,
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
