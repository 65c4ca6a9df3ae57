"""Any zerolab checkpoint as a UCI chess engine: a network with a search behind :class:`zerolab.frontends.uci.UCIServer`.

::

    python -m zerolab uci --checkpoint RUN_OR_STEP_DIR [--simulations N] [--step S] [search.KEY=VALUE ...]

``--checkpoint`` takes a run directory (its newest readable checkpoint, or ``--step``) or one checkpoint step
directory, loaded by :func:`zerolab.frontends.loaded_search.checkpoint_search`.  The network is built for 8×8 chess from the run's model config (:func:`zerolab.play.search_agents.load_search_agent`
with the chess game), so a board-size independent network trained on Gardner chess (AlphaGateau) plays 8×8 too;
a network whose parameters do not fit 8×8 is refused with a clear error.  The search is the run's
(:class:`zerolab.search.config.SearchConfig`, with its rules: ``search.rules`` / ``search.rule_options``) with play
defaults (:data:`zerolab.frontends.loaded_search.PLAY_SEARCH_DEFAULTS`: no Gumbel or Dirichlet noise, so the engine plays its best move), then the
``search.KEY=VALUE`` overrides of the command line (``search.kind=muzero``, ``search.rules=pkg.mod:factory``,
``search.rule_options.NAME=VALUE``; read by :meth:`zerolab.search.config.SearchConfig.with_overrides`: a field's
value as its type, a rule option as a Python literal when it parses, else as text).  UCI options:
``Simulations`` (spin) and the server's ``Move Overhead``.

**Position** (:class:`zerolab.games.board.StateTracker`): the GUI's ``position startpos|fen ... moves ...``, checked by
python-chess, becomes a pgx state stepped by pgx from the root FEN, so the network sees pgx's own history planes
and repetition counts, exactly as in self-play; consecutive positions of one game step only the new moves.

**Start-up** (measured in ``zerolab/README.md``).  ``python -m zerolab uci`` first checks what it can without
loading the network (:func:`zerolab.frontends.loaded_search.check_checkpoint`: the checkpoint and ``--step``, the run's
game, the search overrides) and refuses a mistake with one ``error:`` line, exit status 2, before any ``uciok``.
Then JAX, pgx and the network load in a warm-up thread while the GUI handshakes: ``uci`` is answered at once;
``readyok`` means ready, as lc0's and Stockfish's do: ``isready`` is answered when a move can be made (the network
loaded, pgx's step and the policy compiled: a timed move can then always answer in its time), so python-chess, which
sends ``isready`` before a game's first ``go``, starts that move's clock on a loaded engine.  With a warm compilation
cache that takes a few seconds (zerolab/README.md, "The UCI engine's start"); the checkpoint is read once.  If loading
fails after all (e.g. a network whose parameters do not fit 8×8), the engine writes
``info string error: ...`` and ``error: ...`` on standard error and exits with status 2: it never plays fallback moves
for a network it does not have.

**Compilation.**  mctx's loop length is static, so every simulation count is its own program, compiled once and kept;
on disk too, in JAX's persistent compilation cache (``--compilation-cache DIR``, by default
:data:`zerolab.frontends.loaded_search.DEFAULT_COMPILATION_CACHE`, per user), so a second start reads them back.
The warm-up compiles the policy (0 simulations), then the ``Simulations`` search, then the smaller power-of-two sizes.
A ``go`` that needs a search not compiled yet **waits** for it and says so in an ``info string`` (the time waited is
not counted in ``nps``).

**From ``go`` to simulations**:

* ``go nodes N``: exactly N simulations (``nodes`` counts simulations), compiled on first use;
* plain ``go``, ``go infinite``, ``go ponder``: ``Simulations`` simulations (``infinite``/``ponder`` then hold the
  ``bestmove`` until ``stop``/``ponderhit``, as the server does);
* ``go movetime T`` or a clock (``wtime``/``btime`` …): the server's time rule gives a per-move budget
  (:func:`zerolab.frontends.uci_protocol.time_for_move`, after ``Move Overhead``) and the engine **searches until
  :data:`TIME_SAFETY` of it is used**: again and again, each time the largest compiled search that still fits
  (:func:`affordable_simulations`: a search costs ``fixed + n · per_simulation``, both measured, ``per_simulation``
  the mean of the last :data:`TIMING_WINDOW` searches), and combines the searches by adding their root visit counts
  (:func:`combined`, root parallelisation); when no search fits, the raw policy (the network's most likely legal
  move, 0 simulations).  A timed move that finds no search compiled yet waits, inside its own time, for the one
  being compiled (:meth:`SearchEngine.wait_for_a_search`); when its time runs out first it plays the policy and says
  so in an ``info string``: it never waits past the clock.

``go searchmoves ...`` limits the search to those moves.  A jitted search cannot be interrupted: ``stop`` ends
``infinite`` waits and the repeated searches of a timed move, not a search under way.

**The ``info`` line** (:func:`tree_summary`, read from the search tree): ``depth`` is the mean depth of the tree's
nodes (each simulation adds one: lc0's "average depth"), ``seldepth`` the deepest node, ``pv`` the move played then
the most visited child at each node, ``score cp`` the root's searched value as centipawns (lc0's map,
:func:`value_to_centipawns`).  A network trained on another board (AlphaGateau on Gardner chess) says so in an
``info string`` with its first move: its scores on 8×8 are extrapolations.

**Any agent** (a team, an external engine, a searchless predictor): :func:`agent_server` puts it behind the same
server through :class:`AgentMoveChooser` (no time rule: the agent decides its own effort).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import chess
import numpy as np

from zerolab.frontends.loaded_search import DEFAULT_COMPILATION_CACHE, LoadedSearch, with_compilation_cache
from zerolab.frontends.uci import UCIServer, main_loop
from zerolab.frontends.uci_protocol import MoveChoice, SearchBudget, UCIOption

if TYPE_CHECKING:  # imported where used: the UCI handshake does not wait the seconds JAX and pgx take to import
    import pgx

    from zerolab.games.board import StateTracker
    from zerolab.games import ChessGame

logger = logging.getLogger("zerolab.frontends.uci_search")

ENGINE_AUTHOR = "zerolab"
MAXIMUM_SIMULATIONS = 100_000
TIME_SAFETY = 0.9  # share of the move's time budget that the searches may fill
TIMING_WINDOW = 8  # searches averaged in the per-simulation time
QUIT_TIMEOUT = 5.0  # seconds ``quit`` waits for a compilation under way
PRINCIPAL_VARIATION_LENGTH = 32  # most moves of a principal variation read from the tree
FAILED_START_STATUS = 2  # exit status of ``serve_search_engine`` when the network cannot be loaded


# --- the time rule --------------------------------------------------------------------------------------------------


def largest_power_of_two(n: int) -> int:
    """The largest power of two ≤ ``n`` (0 when ``n`` < 1)."""
    return 0 if n < 1 else 1 << (int(n).bit_length() - 1)


def is_timed(budget: SearchBudget) -> bool:
    """True when ``go`` set a move time or a clock (not ``infinite`` / ``ponder``)."""
    clock = budget.move_time is not None or budget.white_time is not None or budget.black_time is not None
    return clock and not (budget.infinite or budget.ponder) and budget.time_budget is not None


def fixed_simulations(budget: SearchBudget, configured: int) -> int | None:
    """The simulations of a move that is not timed: ``go nodes N`` searches N, plain ``go`` / ``infinite`` /
    ``ponder`` the ``Simulations`` option; None for a timed move (:func:`affordable_simulations` then)."""
    if budget.nodes is not None:
        return min(max(int(budget.nodes), 0), MAXIMUM_SIMULATIONS)
    return None if is_timed(budget) else configured


def affordable_simulations(seconds_left: float, fixed_seconds: float, seconds_per_simulation: float,
                           compiled: Sequence[int]) -> int:
    """The largest compiled search (simulations > 0) that fits ``seconds_left`` — one costs ``fixed_seconds`` and
    ``seconds_per_simulation`` per simulation — or 0 when none fits."""
    fits = [size for size in compiled if 0 < size and fixed_seconds + size * seconds_per_simulation <= seconds_left]
    return max(fits, default=0)


def value_to_centipawns(value: float) -> int:
    """lc0's legacy map from an expected score Q in [-1, 1] to centipawns: ``290.68 · tan(1.548 · Q)``."""
    value = float(np.clip(value, -0.99, 0.99))
    return int(round(290.680623072 * math.tan(1.548090806 * value)))


def restricted(game: ChessGame, state: pgx.State, search_moves: Sequence[str]) -> pgx.State:
    """``state`` with its legal actions limited to ``search_moves`` (``go searchmoves``), when any is legal."""
    allowed = np.zeros(game.num_actions, bool)
    for move in search_moves:
        try:
            allowed[game.uci_to_action(move, state)] = True
        except ValueError:
            continue
    if not allowed.any():
        return state
    return state.replace(legal_action_mask=state.legal_action_mask & allowed)


def batched(state: pgx.State) -> pgx.State:
    """A batch of one."""
    import jax

    return jax.tree.map(lambda leaf: leaf[None], state)


# --- what one search found, and several searches together ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """One search of one position, on the host.

    Attributes:
      simulations: its simulations (0: the network's policy alone).
      action: the move it chose (pgx action).
      value: the root's searched value, to the side to move.
      visit_counts: [A] the root's visit counts.
      principal_variation: actions from the root, the chosen one first, then the most visited child at each node.
      mean_depth: the mean depth of the tree's nodes (each simulation adds one node: its leaf).
      max_depth: the deepest node.
      seconds: the time the search took (its compilation excluded).
    """

    simulations: int
    action: int
    value: float
    visit_counts: np.ndarray
    principal_variation: tuple[int, ...]
    mean_depth: float
    max_depth: int
    seconds: float


def combined(results: Sequence[SearchResult]) -> SearchResult:
    """Several searches of one position as one (root parallelisation): the visit counts added, the move the most
    visited in all (ties: the move of the largest search), the value weighted by simulations, the principal variation
    of the largest search that chose that move, the depths of all nodes."""
    if len(results) == 1:
        return results[0]
    largest = sorted(results, key=lambda result: -result.simulations)
    visits = np.sum([result.visit_counts for result in results], axis=0)
    best = visits.max()
    action = next((result.action for result in largest if visits[result.action] == best), int(np.argmax(visits)))
    simulations = sum(result.simulations for result in results)
    weights = [max(result.simulations, 1) for result in results]
    choosing = [result for result in largest if result.action == action]
    return SearchResult(
        simulations=simulations,
        action=int(action),
        value=float(np.average([result.value for result in results], weights=weights)),
        visit_counts=visits,
        principal_variation=choosing[0].principal_variation if choosing else (int(action),),
        mean_depth=float(np.average([result.mean_depth for result in results], weights=weights)),
        max_depth=max(result.max_depth for result in results),
        seconds=sum(result.seconds for result in results),
    )


def tree_summary(tree: Any, action: Any, length: int) -> tuple[Any, Any, Any]:
    """``(principal variation [length] (-1 padded), mean node depth, max node depth)`` of one unbatched search tree
    (:class:`zerolab.search.tree.Tree`), jittable: the variation starts with ``action`` and follows the most visited
    child; a node's depth is its parent's plus one."""
    import jax
    import jax.numpy as jnp

    nodes = tree.parents.shape[0]

    def depth_of(index, depths):
        parent = tree.parents[index]
        return depths.at[index].set(jnp.where(parent >= 0, depths[jnp.maximum(parent, 0)] + 1, 0))

    depths = jax.lax.fori_loop(1, nodes, depth_of, jnp.zeros(nodes, jnp.int32))
    in_tree = tree.parents >= 0
    mean_depth = jnp.sum(jnp.where(in_tree, depths, 0)) / jnp.maximum(jnp.sum(in_tree), 1)
    root_slot = jnp.argmax(tree.children_actions[tree.ROOT_INDEX] == action)
    start = tree.children_index[tree.ROOT_INDEX, root_slot]

    def follow(index, carry):
        node, variation = carry
        inside = node != tree.UNVISITED
        visits = tree.children_visits[jnp.maximum(node, 0)]
        slot = jnp.argmax(visits)
        going_on = inside & (visits[slot] > 0)
        variation = variation.at[index].set(jnp.where(going_on, tree.children_actions[jnp.maximum(node, 0), slot], -1))
        return jnp.where(going_on, tree.children_index[jnp.maximum(node, 0), slot], tree.UNVISITED), variation

    variation = jnp.full(length, -1, jnp.int32).at[0].set(action)
    _, variation = jax.lax.fori_loop(1, length, follow, (start, variation))
    return variation, mean_depth, jnp.max(depths)


# --- the engine ----------------------------------------------------------------------------------------------------


class SearchEngine:
    """Chooses moves for :class:`zerolab.frontends.uci.UCIServer`: board → pgx state → search → UCI move.

    Args:
      load: returns the :class:`LoadedSearch`; called by :meth:`warm_up`, so the server can answer ``uci`` before
        the (slow) loading is done.
      simulations: the ``Simulations`` value (default: the loaded search's ``num_simulations``).
      seed: seed of the search keys.
      on_failure: called with the error when loading fails (``serve_search_engine`` ends the process with it).
    """

    def __init__(self, load: Callable[[], LoadedSearch], simulations: int | None = None, seed: int = 0,
                 on_failure: Callable[[BaseException], None] | None = None):
        self.load = load
        self.loaded: LoadedSearch | None = None
        self.game: ChessGame | None = None
        self.positions: StateTracker | None = None
        self.simulations = None if simulations is None else int(simulations)
        self.seed = int(seed)
        self.on_failure = on_failure
        self.key = None
        self.fixed_seconds = 0.0
        self.simulation_seconds: collections.deque[float] = collections.deque(maxlen=TIMING_WINDOW)
        self.compile_seconds: dict[int, float] = {}  # each compiled size's compilation time
        self._programs: dict[int, Callable] = {}
        self._compiling: dict[int, threading.Event] = {}  # sizes being compiled, set when done
        self._lock = threading.RLock()  # guards _programs, _compiling and the timings
        self._ready = threading.Event()
        self._closing = threading.Event()
        self._key_lock = threading.Lock()
        self._noted = False  # the loaded search's note was sent
        self.error: BaseException | None = None  # why the warm-up failed, if it did
        self._example: pgx.State | None = None

    # --- compilation and timing ---------------------------------------------------------------------------------
    def _program(self, simulations: int) -> Callable:
        """The compiled search for ``simulations`` (0: the policy), compiled on first use (another thread compiling
        the same size is waited for)."""
        with self._lock:
            if simulations in self._programs:
                return self._programs[simulations]
            underway = self._compiling.get(simulations)
            if underway is None:
                self._compiling[simulations] = threading.Event()
        if underway is not None:  # another thread compiles this size: wait for it instead of compiling it twice
            underway.wait()
            return self._program(simulations)
        try:
            started = time.perf_counter()
            program = self._compile(simulations)
            with self._lock:
                self._programs[simulations] = program
                self.compile_seconds[simulations] = time.perf_counter() - started
            logger.info("compiled the %d-simulation search in %.1f s", simulations, self.compile_seconds[simulations])
            return program
        finally:
            with self._lock:
                self._compiling.pop(simulations).set()

    def _compile(self, simulations: int) -> Callable:
        """Compiles ``(variables, key, states) -> (action, value, visit counts [A], principal variation, mean depth,
        max depth)`` for a batch of one state, ahead of time."""
        import jax
        import jax.numpy as jnp

        from zerolab.search.mcts import evaluate, run_search

        network, game = self.loaded.network, self.game
        if simulations == 0:
            def choose(variables, key, states):
                del key
                logits, value = evaluate(network, variables, states)
                action = jnp.argmax(logits, axis=-1)
                return (action, value, jnp.zeros(game.num_actions, jnp.int32), action.astype(jnp.int32),
                        jnp.zeros(()), jnp.zeros((), jnp.int32))
        else:
            config = dataclasses.replace(self.loaded.search, num_simulations=simulations)
            length = min(simulations, PRINCIPAL_VARIATION_LENGTH)

            def choose(variables, key, states):
                output = run_search(config, game, network, variables, key, states, keep_tree=True)
                tree = jax.tree.map(lambda leaf: leaf[0], output.tree)
                variation, mean_depth, max_depth = tree_summary(tree, output.action[0], length)
                return (output.action, output.root_value, output.visit_counts[0].astype(jnp.int32), variation,
                        mean_depth, max_depth)
        return jax.jit(choose).lower(self.loaded.variables, self.key, self._example).compile()

    def compiled_sizes(self) -> list[int]:
        with self._lock:
            return sorted(self._programs)

    def is_compiled(self, simulations: int) -> bool:
        with self._lock:
            return simulations in self._programs

    def wait_for_a_search(self, until: float) -> float:
        """Waits, until the ``time.monotonic()`` instant ``until`` at the latest, for a search (simulations > 0) to be
        compiled, when none is yet and one is being compiled; returns the seconds waited (0 when a search was
        already compiled or none is being compiled)."""
        started = time.monotonic()
        while time.monotonic() < until:
            with self._lock:
                if any(size > 0 for size in self._programs):
                    break
                underway = [event for size, event in self._compiling.items() if size > 0]
            if not underway:
                break
            underway[0].wait(timeout=max(until - time.monotonic(), 0.0))
        return time.monotonic() - started

    def warm_up(self, background_sizes: bool = True) -> None:
        """Loads the network, compiles pgx's step and the policy and measures a move's fixed cost, then marks the
        engine ready (``isready`` and every ``go`` wait for this); then compiles and times the ``Simulations``
        search and, unless ``background_sizes`` is off, the smaller power-of-two sizes (for time controls).  A
        failure is kept in :attr:`error` (logged, passed to ``on_failure``) and still marks it ready."""
        try:
            import jax

            from zerolab.games.board import StateTracker

            self.loaded = self.load()
            logger.info("%s, searching with %s", self.loaded.description, self.loaded.search)
            self.game = self.loaded.game
            if self.simulations is None:
                self.simulations = int(self.loaded.search.num_simulations)
            self.positions = StateTracker(self.game)
            self.key = jax.random.key(self.seed)
            self._example = batched(self.game.from_fen(self.game.start_fen))
            board = chess.Board()
            board.push_uci("e2e4")
            self.positions.state(board)  # compiles pgx's step
            self.positions.reset()
            self._run(0, self._example)  # compiles
            self.fixed_seconds = self._run(0, self._example).seconds
        except Exception as error:  # noqa: BLE001 - reported to the GUI by the server
            logger.error("the engine failed to start: %s: %s", type(error).__name__, error)
            self.error = error
            self._ready.set()
            if self.on_failure is not None:
                self.on_failure(error)
            return
        self._ready.set()
        self._measure(self.simulations)
        if background_sizes:
            size = largest_power_of_two(self.simulations - 1)
            while size >= 1 and not self._closing.is_set():
                self._program(size)
                size //= 2

    def close(self) -> None:
        """Stops the background compilation after the size under way."""
        self._closing.set()

    def _measure(self, simulations: int) -> None:
        """Compiles the ``simulations`` search (if new) and adds one timed run to the per-simulation estimate."""
        self._run(simulations, self._example)
        result = self._run(simulations, self._example)
        self.record_search(simulations, result.seconds)
        logger.info("%d simulations: %.3f s per move, of which %.3f s fixed", simulations, result.seconds,
                    self.fixed_seconds)

    def record_search(self, simulations: int, seconds: float) -> None:
        """Adds one search's measured time to the per-simulation estimate (the mean of the last few)."""
        if simulations <= 0:
            return
        with self._lock:
            self.simulation_seconds.append(max(seconds - self.fixed_seconds, 1e-6) / simulations)

    def wait_until_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    @property
    def seconds_per_simulation(self) -> float:
        with self._lock:
            return float(np.mean(self.simulation_seconds)) if self.simulation_seconds else 1e-3

    def set_search(self, **changes: Any) -> None:
        """Replaces fields of the search (``kind``, ``rules``, ``rule_options``, ...), as a UCI option does: the
        compiled searches are dropped (each size compiles again on first use) and the cost is measured again."""
        self.check_started()
        search = dataclasses.replace(self.loaded.search, **changes)
        search.make_rules()  # bad rules or options fail here, before any search is dropped
        with self._lock:
            self.loaded = dataclasses.replace(self.loaded, search=search)
            self._programs = {size: program for size, program in self._programs.items() if size == 0}
            self.simulation_seconds.clear()
        logger.info("search is now %s", search)
        self._measure(self.simulations)

    def set_simulations(self, simulations: int) -> None:
        """The ``Simulations`` option: that search is compiled and timed in the background (a plain ``go`` before it
        is ready waits for it); the protocol loop does not wait."""
        self.simulations = int(simulations)

        def prepare() -> None:
            if self.wait_until_ready() and self.error is None:
                self._measure(int(simulations))

        threading.Thread(target=prepare, name="compile-simulations", daemon=True).start()

    def new_game(self) -> None:
        if self.positions is not None:
            self.positions.reset()

    # --- moves ----------------------------------------------------------------------------------------------------
    def _run(self, simulations: int, states: pgx.State) -> SearchResult:
        """One search (compiled first if needed: not counted in ``seconds``)."""
        import jax

        program = self._program(simulations)
        with self._key_lock:
            self.key, key = jax.random.split(self.key)
        started = time.perf_counter()
        action, value, visits, variation, mean_depth, max_depth = jax.device_get(
            program(self.loaded.variables, key, states))
        seconds = time.perf_counter() - started
        variation = tuple(int(step) for step in np.atleast_1d(variation) if step >= 0)
        return SearchResult(simulations, int(action[0]), float(value[0]), np.asarray(visits), variation,
                            float(mean_depth), int(max_depth), seconds)

    def check_started(self) -> None:
        """Waits for the warm-up; raises RuntimeError if it failed."""
        self.wait_until_ready()
        if self.error is not None:
            raise RuntimeError(f"the engine failed to start: {type(self.error).__name__}: {self.error}")

    def search(self, budget: SearchBudget, states: pgx.State) -> tuple[SearchResult, list[str]]:
        """The searches of one move (see the module docstring) and notes for the GUI about compilations."""
        notes = []
        simulations = fixed_simulations(budget, self.simulations)
        if simulations is not None:
            if not self.is_compiled(simulations):
                started = time.perf_counter()
                self._program(simulations)
                notes.append(f"waited {time.perf_counter() - started:.1f} s for the {simulations}-simulation search "
                             "to compile (first use; not counted in nps)")
            result = self._run(simulations, states)
            self.record_search(simulations, result.seconds)
            return result, notes
        deadline = budget.started_at + TIME_SAFETY * budget.time_budget
        waited = self.wait_for_a_search(deadline - self.fixed_seconds)
        if waited >= 0.05:
            notes.append(f"waited {waited:.1f} s of this move's time for the first search to compile")
        results = []
        while not budget.stop_event.is_set():
            size = affordable_simulations(deadline - time.monotonic(), self.fixed_seconds,
                                          self.seconds_per_simulation, self.compiled_sizes())
            if size == 0:
                break
            results.append(self._run(size, states))
            self.record_search(size, results[-1].seconds)
        if not results:
            results.append(self._run(0, states))
        if not self.is_compiled(self.simulations):
            notes.append(f"the {self.simulations}-simulation search is still compiling; this move used the searches "
                         f"compiled so far ({', '.join(map(str, self.compiled_sizes()))} simulations)")
        return combined(results), notes

    def variation_moves(self, state: pgx.State, actions: Sequence[int]) -> tuple[str, ...]:
        """The UCI moves of a principal variation of pgx actions from ``state`` (cut where the game ends)."""
        moves = []
        for action in actions:
            if bool(state.terminated):
                break
            try:
                moves.append(self.game.action_to_uci(action, state))
            except ValueError:
                break
            state = self.game.jitted_step(state, np.int32(action))  # the type StateTracker compiled it for
        return tuple(moves)

    def choose_move(self, board: chess.Board, budget: SearchBudget) -> MoveChoice:
        """The move for ``board`` under ``budget`` (the :data:`zerolab.frontends.uci.ChooseMove` callback)."""
        loading = not self._ready.is_set()
        self.check_started()
        state = self.positions.state(board)
        if budget.search_moves:
            state = restricted(self.game, state, budget.search_moves)
        result, notes = self.search(budget, batched(state))
        if loading:
            notes.insert(0, f"waited for the network to load (this move's time {budget.elapsed():.1f} s includes it)")
        if not self._noted and self.loaded.note:
            notes.insert(0, self.loaded.note)
            self._noted = True
        move = self.game.action_to_uci(result.action, state)
        variation = self.variation_moves(state, result.principal_variation) or (move,)
        return MoveChoice(move, score_centipawns=value_to_centipawns(result.value), nodes=result.simulations,
                          depth=max(int(round(result.mean_depth)), 1), seldepth=max(result.max_depth, 1),
                          principal_variation=variation, search_seconds=result.seconds, note="; ".join(notes))


class SearchServer(UCIServer):
    """The UCI server of a :class:`SearchEngine`: a ``Simulations`` option; ``isready`` is answered when the engine
    can move (:meth:`SearchEngine.wait_until_ready`), after the reason when it failed to start."""

    def __init__(self, engine: SearchEngine, name: str, simulations: int, options: Sequence[UCIOption] = ()):
        option = UCIOption("Simulations", "spin", simulations, 1, MAXIMUM_SIMULATIONS, on_change=engine.set_simulations)
        super().__init__(name, ENGINE_AUTHOR, engine.choose_move, options=[option, *options],
                         on_new_game=engine.new_game)
        self.engine = engine

    def handle(self, line: str) -> bool:
        if line.split()[:1] == ["isready"] and self.engine.wait_until_ready() and self.engine.error:
            self.send_error(f"the engine failed to start: {type(self.engine.error).__name__}: {self.engine.error}")
        return super().handle(line)


class AgentMoveChooser:
    """Any zerolab agent (``select_actions`` over pgx states: a search, a team, an external engine, a searchless
    predictor) as a :data:`zerolab.frontends.uci.ChooseMove` callback for 8×8 chess, the UCI twin of
    :func:`zerolab.frontends.gtp.agent_chooser`.  The GUI's board becomes a pgx state with its history
    (:class:`zerolab.games.board.StateTracker`); ``searchmoves`` restrict the state's legal actions.  Each call gets a new
    key split from ``seed``."""

    def __init__(self, agent: Any, seed: int = 0):
        import jax

        from zerolab.games.board import StateTracker
        from zerolab.games import make_game

        self.agent = agent
        self.game = getattr(agent, "game", None) or make_game("chess")
        if getattr(self.game, "board_size", None) != 8:
            raise ValueError(f"a UCI engine plays 8x8 chess; agent {getattr(agent, 'name', agent)!r} plays "
                             f"{self.game.name}")
        self.positions = StateTracker(self.game)
        self.key = jax.random.key(seed)

    def __call__(self, board: chess.Board, budget: SearchBudget) -> MoveChoice:
        import jax

        state = self.positions.state(board)
        if budget.search_moves:
            state = restricted(self.game, state, budget.search_moves)
        self.key, key = jax.random.split(self.key)
        action = int(np.asarray(self.agent.select_actions(batched(state), key))[0])
        return MoveChoice(self.game.action_to_uci(action, state))

    def new_game(self) -> None:
        self.positions.reset()
        self.agent.new_game()


def agent_server(agent: Any, name: str | None = None, seed: int = 0) -> UCIServer:
    """A UCI server in front of any zerolab agent (see :class:`AgentMoveChooser`)."""
    chooser = AgentMoveChooser(agent, seed)
    return UCIServer(name or f"zerolab {agent.name}", ENGINE_AUTHOR, chooser, on_new_game=chooser.new_game)


SearchOptionsFn = Callable[[SearchEngine], Sequence[UCIOption]]
"""``(engine) -> options``: further UCI options of a search engine (a method's search settings, e.g. ``ScLimit``),
whose ``on_change`` typically calls :meth:`SearchEngine.set_search`."""


def serve_search_engine(load: Callable[[], LoadedSearch], name: str, simulations: int, *, seed: int = 0,
                        compilation_cache: str | None = None, options: SearchOptionsFn | None = None) -> int:
    """Runs a :class:`SearchEngine` on standard input and output; loading and compiling happen while the GUI
    handshakes.  ``simulations`` is the ``Simulations`` option's start (it replaces the loaded search's count);
    ``options`` adds UCI options built for the engine.  ``compilation_cache``: JAX's persistent compilation cache
    directory (``~`` expanded; None: the per-user :data:`~zerolab.frontends.loaded_search.DEFAULT_COMPILATION_CACHE`;
    empty: none).

    When loading fails (what the launcher could not check before: e.g. a network that does not fit 8×8), the
    engine does not play fallback moves: it writes ``info string error: ...`` and ``error: ...`` on standard error
    and the process ends with exit status :data:`FAILED_START_STATUS`."""
    if compilation_cache is None:
        compilation_cache = DEFAULT_COMPILATION_CACHE
    if compilation_cache:
        load = with_compilation_cache(load, compilation_cache)
    server: SearchServer | None = None

    def stop_on_failure(error: BaseException) -> None:
        message = f"the engine failed to start: {type(error).__name__}: {error}"
        if server is not None:
            server.send_error(message)
        print(f"error: {message}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(FAILED_START_STATUS)  # the protocol loop is blocked reading standard input

    engine = SearchEngine(load, simulations, seed, on_failure=stop_on_failure)
    server = SearchServer(engine, name, simulations, options(engine) if options is not None else ())
    warm_up = threading.Thread(target=engine.warm_up, name="warm-up", daemon=True)
    warm_up.start()
    main_loop(server)
    engine.close()
    warm_up.join(QUIT_TIMEOUT)
    if warm_up.is_alive():  # still compiling: leaving the interpreter under a running XLA compilation aborts it
        sys.stdout.flush()
        os._exit(0)
    return 0


__all__ = [
    "AgentMoveChooser",
    "SearchEngine",
    "SearchOptionsFn",
    "SearchServer",
    "agent_server",
    "FAILED_START_STATUS",
    "SearchResult",
    "affordable_simulations",
    "combined",
    "fixed_simulations",
    "largest_power_of_two",
    "tree_summary",
    "serve_search_engine",
    "value_to_centipawns",
]
