"""The UCI search engine's compiled programs, one per size, compiled once and kept (:class:`SearchPrograms`).

mctx's loop length is static, so every simulation count is its own program (:func:`compile_search`; 0 simulations:
the network's policy), and so is each chunk size of the growing tree (:func:`compile_tree_program`,
:mod:`zerolab.frontends.growing_tree`).  Each is compiled once and kept; on disk too, in JAX's persistent compilation
cache (``--compilation-cache DIR``, by default :data:`zerolab.frontends.loaded_search.DEFAULT_COMPILATION_CACHE`, per
user), so a second start reads them back.  The engine's warm-up
(:meth:`zerolab.frontends.uci_search.SearchEngine.warm_up`) compiles the policy, then the ``Simulations`` search, then
the smaller power-of-two sizes.  A ``go`` that needs a
search not compiled yet **waits** for it and says so in an ``info string`` (the time waited is not counted in
``nps``); a timed move waits only inside its own time (:meth:`SearchPrograms.wait_for_a_search`).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from zerolab.frontends.search_report import root_lines, tree_summary

if TYPE_CHECKING:  # imported where used: the UCI handshake does not wait the seconds JAX and pgx take to import
    import pgx

    from zerolab.frontends.loaded_search import LoadedSearch
    from zerolab.games import ChessGame

logger = logging.getLogger("zerolab.frontends.search_programs")

PRINCIPAL_VARIATION_LENGTH = 32  # most moves of a principal variation read from the tree

ProgramKey = int | tuple
"""A program's key: a fresh search's simulations (0: the policy), or a tuple naming a program of the growing tree."""


class SearchPrograms:
    """The compiled programs by key, each compiled on first use by ``compile_program`` (another thread compiling the
    same one is waited for, not doubled).

    Args:
      compile_program: ``key -> program``, the compilation of one program (:func:`compile_search`,
        :func:`compile_tree_program`).

    Attributes:
      compile_seconds: each compiled program's compilation time, by key.
    """

    def __init__(self, compile_program: Callable[[ProgramKey], Callable]):
        self.compile_program = compile_program
        self.compile_seconds: dict[ProgramKey, float] = {}
        self._programs: dict[ProgramKey, Callable] = {}
        self._compiling: dict[ProgramKey, threading.Event] = {}  # keys being compiled, set when done
        self._lock = threading.RLock()  # guards _programs, _compiling and compile_seconds

    def compiled(self, key: ProgramKey) -> Callable:
        """The program of ``key``, compiled on first use (another thread compiling the same one is waited for)."""
        with self._lock:
            if key in self._programs:
                return self._programs[key]
            underway = self._compiling.get(key)
            if underway is None:
                self._compiling[key] = threading.Event()
        if underway is not None:  # another thread compiles this size: wait for it instead of compiling it twice
            underway.wait()
            return self.compiled(key)
        try:
            started = time.perf_counter()
            program = self.compile_program(key)
            with self._lock:
                self._programs[key] = program
                self.compile_seconds[key] = time.perf_counter() - started
            logger.info("compiled the %s search in %.1f s", key if isinstance(key, tuple) else
                        f"{key}-simulation", self.compile_seconds[key])
            return program
        finally:
            with self._lock:
                self._compiling.pop(key).set()

    def compiled_sizes(self) -> list[int]:
        """The fresh searches' compiled sizes (simulations; 0: the policy)."""
        with self._lock:
            return sorted(size for size in self._programs if isinstance(size, int))

    def compiled_chunks(self) -> list[int]:
        """The growing tree's compiled chunk sizes."""
        with self._lock:
            return sorted(key[1] for key in self._programs if isinstance(key, tuple) and key[0] == "grow")

    def is_compiled(self, key: ProgramKey) -> bool:
        with self._lock:
            return key in self._programs

    def wait_for_a_search(self, until: float) -> float:
        """Waits, until the ``time.monotonic()`` instant ``until`` at the latest, for a search (simulations > 0) to be
        compiled, when none is yet and one is being compiled; returns the seconds waited (0 when a search was
        already compiled or none is being compiled)."""
        started = time.monotonic()
        while time.monotonic() < until:
            with self._lock:  # fresh searches only (the growing tree's programs are keyed by tuples)
                if any(isinstance(size, int) and size > 0 for size in self._programs):
                    break
                underway = [event for size, event in self._compiling.items() if isinstance(size, int) and size > 0]
            if not underway:
                break
            underway[0].wait(timeout=max(until - time.monotonic(), 0.0))
        return time.monotonic() - started

    def drop_searches(self) -> None:
        """Drops every program but the policy's (a new search: each compiles again on first use)."""
        with self._lock:
            self._programs = {key: program for key, program in self._programs.items() if key == 0}

    def drop_tree_programs(self) -> None:
        """Drops the growing tree's programs (a tree of another size: each compiles again on first use)."""
        with self._lock:
            self._programs = {key: program for key, program in self._programs.items() if not isinstance(key, tuple)}


def compile_search(simulations: int, loaded: LoadedSearch, game: ChessGame, key: Any, example: pgx.State) -> Callable:
    """Compiles ``(variables, key, states) -> (action, value, visit counts [A], principal variation, mean depth,
    max depth)`` for a batch of one state (``example``'s shape), ahead of time: ``loaded``'s search of
    ``simulations`` (0: the network's most likely move)."""
    import jax
    import jax.numpy as jnp

    from zerolab.search.mcts import evaluate, run_search

    network = loaded.network
    if simulations == 0:
        def choose(variables, key, states):
            del key
            logits, value = evaluate(network, variables, states)
            action = jnp.argmax(logits, axis=-1)
            return (action, value, jnp.zeros(game.num_actions, jnp.int32), action.astype(jnp.int32),
                    jnp.zeros(()), jnp.zeros((), jnp.int32))
    else:
        config = dataclasses.replace(loaded.search, num_simulations=simulations)
        length = min(simulations, PRINCIPAL_VARIATION_LENGTH)

        def choose(variables, key, states):
            output = run_search(config, game, network, variables, key, states, keep_tree=True)
            tree = jax.tree.map(lambda leaf: leaf[0], output.tree)
            variation, mean_depth, max_depth = tree_summary(tree, output.action[0], length)
            return (output.action, output.root_value, output.visit_counts[0].astype(jnp.int32), variation,
                    mean_depth, max_depth)
    return jax.jit(choose).lower(loaded.variables, key, example).compile()


def compile_tree_program(program: tuple, loaded: LoadedSearch, game: ChessGame, key: Any, example: pgx.State,
                         nodes: int) -> Callable:
    """The growing tree's programs (a batch of one, ``nodes`` nodes): ``("start",)`` (variables, states) → tree;
    ``("grow", n)`` (variables, key, tree, first node [1]) → tree after n more simulations; ``("cut",)`` (tree, node
    [1]) → (the subtree below node, its nodes [1]); ``("lines", k)`` tree →
    :func:`~zerolab.frontends.search_report.root_lines` of k lines."""
    import jax
    import jax.numpy as jnp

    from zerolab.search.mcts import grow_tree, start_tree
    from zerolab.search.tree import subtree

    network, search = loaded.network, loaded.search

    def start(variables, states):
        return start_tree(search, game, network, variables, states, nodes)

    tree_shape = jax.eval_shape(start, loaded.variables, example)
    index_shape = jax.ShapeDtypeStruct((1,), jnp.int32)
    kind = program[0]
    if kind == "start":
        return jax.jit(start).lower(loaded.variables, example).compile()
    if kind == "grow":
        # The tree is donated: grown in place, not copied whole at each chunk (half of a simulation's cost at
        # 8,192 nodes); every caller goes on with the returned tree (a kept tree is cut into a new one first).
        grow = functools.partial(grow_tree, search, game, network, num_simulations=program[1])
        return jax.jit(lambda variables, key, tree, first: grow(variables, key, tree, first),
                       donate_argnums=2).lower(loaded.variables, key, tree_shape, index_shape).compile()
    if kind == "cut":
        return jax.jit(subtree).lower(tree_shape, index_shape).compile()
    if kind == "lines":
        count, length = program[1], PRINCIPAL_VARIATION_LENGTH
        return jax.jit(lambda tree: root_lines(jax.tree.map(lambda leaf: leaf[0], tree), count, length)).lower(
            tree_shape).compile()
    raise ValueError(f"unknown tree program {program!r}")


__all__ = ["PRINCIPAL_VARIATION_LENGTH", "ProgramKey", "SearchPrograms", "compile_search", "compile_tree_program"]
