"""What a compiled program costs, read from XLA before anything runs: :func:`compile_cost` (compile time, FLOPs, bytes
accessed and device memory of one call: :class:`ProgramCost`), and the table of an experiment's programs with their
call counts (:class:`PlannedProgram`, gathered in a :class:`ProgramSection` that :func:`format_programs` formats)
for the experiments that are not one training run.
:mod:`zerolab.training.plan` plans a training run from the same figures.

XLA counts the body of a loop once, whatever its trip count, so a search's FLOPs are taken from its network
evaluations (:meth:`PlannedProgram.search`, :func:`evaluations_per_search`).
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

from zerolab.devices import ProgramMemory, format_bytes, program_memory
from zerolab.games import Game
from zerolab.networks.network import NetworkInputs, apply_network

logger = logging.getLogger(__name__)


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


@dataclasses.dataclass(frozen=True)
class ProgramSection:
    """The programs an experiment calls outside the core's training loop, with their call counts: one table of a plan
    (:func:`format_programs`).

    Attributes:
      title: what the programs are for (the table's heading).
      programs: the compiled programs and their calls, in the table's order.
      notes: lines printed under the table (what the counts assume, what is not planned).
    """

    title: str
    programs: tuple[PlannedProgram, ...]
    notes: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "programs", tuple(self.programs))
        object.__setattr__(self, "notes", tuple(self.notes))


def format_programs(section: ProgramSection) -> str:
    """A section as a table: each program's compile time, FLOPs and device memory per call, calls, total FLOPs (the
    name column as wide as the longest name needs, 34 at least), then the section's notes."""
    programs = section.programs
    width = max([34] + [len(program.cost.name) + 2 for program in programs])
    lines = [f"== {section.title}",
             f"{'program':<{width}}{'compile':>9}{'GFLOP/call':>13}{'device memory':>15}{'calls':>14}"
             f"{'total PFLOP':>13}  what a call does"]
    for program in programs:
        lines.append(f"{program.cost.name:<{width}}{program.cost.compile_seconds:>8.1f}s{program.flops / 1e9:>13,.2f}"
                     f"{format_bytes(program.cost.device_bytes):>15}{program.calls:>14,}"
                     f"{program.flops * program.calls / 1e15:>13,.2f}  {program.what}")
    total = sum(program.flops * program.calls for program in programs)
    lines.append(f"total: {total / 1e15:,.1f} PFLOP; no rate measured for these programs on an accelerator, so no time "
                 f"estimate (a search's FLOPs are its network evaluations; calls are upper bounds where games end early)")
    lines.extend(section.notes)
    return "\n".join(lines)


__all__ = ["PlannedProgram", "ProgramCost", "ProgramSection", "abstract", "abstract_states", "compile_cost",
           "evaluation_flops", "evaluations_per_search", "format_programs", "tree_bytes"]
