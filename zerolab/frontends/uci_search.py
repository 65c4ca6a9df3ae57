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
  (:func:`~zerolab.frontends.uci_protocol.affordable_simulations`: a search costs ``fixed + n · per_simulation``, both measured, ``per_simulation``
  the mean of the last :data:`TIMING_WINDOW` searches), and combines the searches by adding their root visit counts
  (:func:`~zerolab.frontends.search_report.combined`, root parallelisation); when no search fits, the raw policy (the network's most likely legal
  move, 0 simulations).  A timed move that finds no search compiled yet waits, inside its own time, for the one
  being compiled (:meth:`SearchEngine.wait_for_a_search`); when its time runs out first it plays the policy and says
  so in an ``info string``: it never waits past the clock.

``go searchmoves ...`` limits the search to those moves.  A jitted search cannot be interrupted: ``stop`` ends
``infinite`` waits and the repeated searches of a timed move, not a search under way.

**The ``info`` line** (:func:`~zerolab.frontends.search_report.tree_summary`, read from the search tree): ``depth`` is the mean depth of the tree's
nodes (each simulation adds one: lc0's "average depth"), ``seldepth`` the deepest node, ``pv`` the move played then
the most visited child at each node, ``score cp`` the root's searched value as centipawns (lc0's map,
:func:`~zerolab.frontends.search_report.value_to_centipawns`).  A network trained on another board (AlphaGateau on Gardner chess) says so in an
``info string`` with its first move: its scores on 8×8 are extrapolations.

**Any agent** (a team, an external engine, a searchless predictor): :func:`zerolab.frontends.agent_uci.agent_server`
puts it behind the same server (no time rule: the agent decides its own effort).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
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
from zerolab.frontends.search_report import SearchResult, combined, root_lines, tree_summary, value_to_centipawns
from zerolab.frontends.uci_options import UCIOption
from zerolab.frontends.uci_protocol import (
    MAXIMUM_SIMULATIONS, MoveChoice, SearchBudget, affordable_simulations, fixed_simulations, is_timed,
    largest_power_of_two,
)

if TYPE_CHECKING:  # imported where used: the UCI handshake does not wait the seconds JAX and pgx take to import
    import pgx

    from zerolab.games.board import StateTracker
    from zerolab.games import ChessGame

logger = logging.getLogger("zerolab.frontends.uci_search")

ENGINE_AUTHOR = "zerolab"
TIME_SAFETY = 0.9  # share of the move's time budget that the searches may fill
TIMING_WINDOW = 8  # searches averaged in the per-simulation time
QUIT_TIMEOUT = 5.0  # seconds ``quit`` waits for a compilation under way
PRINCIPAL_VARIATION_LENGTH = 32  # most moves of a principal variation read from the tree
TREE_NODES = 2048  # nodes of the tree that grows and is kept between moves (the TreeNodes option; chess: ~15 MB)
MAXIMUM_TREE_NODES = 1 << 20
REPORT_INTERVAL = 1.0  # seconds between the ``info`` lines of a search that goes on
CHUNK_SECONDS = 0.25  # a search that goes on grows in chunks of about this long (``stop`` is heard between them)
MAXIMUM_MULTIPV = 8  # lines one compiled program reports (MultiPV up to this)
FAILED_START_STATUS = 2  # exit status of ``serve_search_engine`` when the network cannot be loaded


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


@dataclasses.dataclass(frozen=True)
class KeptTree:
    """The engine's last search tree, kept for the next ``go`` (a batch of one).

    Attributes:
      tree: the tree (on the device), its root the position searched.
      used: its nodes in use (the next search grows from there).
      state: the pgx state of its root.
      start_fen: the FEN the GUI's ``position`` started from.
      moves: the GUI's moves from there to the root (UCI).
    """

    tree: Any
    used: int
    state: Any
    start_fen: str
    moves: tuple[str, ...]


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
        self.growth_seconds: collections.deque[float] = collections.deque(maxlen=TIMING_WINDOW)
        self.compile_seconds: dict[int, float] = {}  # each compiled size's compilation time
        self._programs: dict[int, Callable] = {}
        self._compiling: dict[int, threading.Event] = {}  # sizes being compiled, set when done
        self._lock = threading.RLock()  # guards _programs, _compiling and the timings
        self._ready = threading.Event()
        self._closing = threading.Event()
        self._key_lock = threading.Lock()
        self._noted = False  # the loaded search's note was sent
        self.tree_nodes = TREE_NODES
        self.multipv = 1
        self.kept: KeptTree | None = None  # the last search's tree, for the next go (tree reuse)
        self.reused_visits = 0  # root visits the last growing search started with (kept from the one before)
        self.error: BaseException | None = None  # why the warm-up failed, if it did
        self._example: pgx.State | None = None

    # --- compilation and timing ---------------------------------------------------------------------------------
    def _program(self, simulations: int | tuple) -> Callable:
        """The compiled search for ``simulations`` (0: the policy; a tuple: a program of the growing tree,
        :meth:`_compile_tree`), compiled on first use (another thread compiling the same one is waited for)."""
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
            logger.info("compiled the %s search in %.1f s", simulations if isinstance(simulations, tuple) else
                        f"{simulations}-simulation", self.compile_seconds[simulations])
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

        if isinstance(simulations, tuple):
            return self._compile_tree(simulations)
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

    def _compile_tree(self, program: tuple) -> Callable:
        """The growing tree's programs (a batch of one, :attr:`tree_nodes` nodes): ``("start",)`` (variables, states)
        → tree; ``("grow", n)`` (variables, key, tree, first node [1]) → tree after n more simulations;
        ``("cut",)`` (tree, node [1]) → (the subtree below node, its nodes [1]); ``("lines", k)`` tree →
        :func:`~zerolab.frontends.search_report.root_lines` of k lines."""
        import jax
        import jax.numpy as jnp

        from zerolab.search.mcts import grow_tree, start_tree
        from zerolab.search.tree import subtree

        network, game, search, nodes = self.loaded.network, self.game, self.loaded.search, self.tree_nodes

        def start(variables, states):
            return start_tree(search, game, network, variables, states, nodes)

        tree_shape = jax.eval_shape(start, self.loaded.variables, self._example)
        index_shape = jax.ShapeDtypeStruct((1,), jnp.int32)
        kind = program[0]
        if kind == "start":
            return jax.jit(start).lower(self.loaded.variables, self._example).compile()
        if kind == "grow":
            # The tree is donated: grown in place, not copied whole at each chunk (half of a simulation's cost at
            # 8,192 nodes); every caller goes on with the returned tree (a kept tree is cut into a new one first).
            grow = functools.partial(grow_tree, search, game, network, num_simulations=program[1])
            return jax.jit(lambda variables, key, tree, first: grow(variables, key, tree, first),
                           donate_argnums=2).lower(self.loaded.variables, self.key, tree_shape, index_shape).compile()
        if kind == "cut":
            return jax.jit(subtree).lower(tree_shape, index_shape).compile()
        if kind == "lines":
            count, length = program[1], PRINCIPAL_VARIATION_LENGTH
            return jax.jit(lambda tree: root_lines(jax.tree.map(lambda leaf: leaf[0], tree), count, length)).lower(
                tree_shape).compile()
        raise ValueError(f"unknown tree program {program!r}")

    def compiled_sizes(self) -> list[int]:
        with self._lock:
            return sorted(size for size in self._programs if isinstance(size, int))

    def compiled_chunks(self) -> list[int]:
        """The growing tree's compiled chunk sizes."""
        with self._lock:
            return sorted(key[1] for key in self._programs if isinstance(key, tuple) and key[0] == "grow")

    def is_compiled(self, simulations: int | tuple) -> bool:
        with self._lock:
            return simulations in self._programs

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
        growing = self.loaded.search.kind == "muzero"  # PUCT: every move grows the kept tree
        if growing:
            self._measure_tree(self.simulations)
        else:
            self._measure(self.simulations)
        if background_sizes:
            size = largest_power_of_two(self.simulations - 1)
            while size >= 1 and not self._closing.is_set():
                self._program(("grow", size) if growing else size)
                size //= 2
            if not growing and not self._closing.is_set():  # analysis grows a tree whatever the search
                self._measure_tree(self.simulations)

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

    def _measure_tree(self, simulations: int) -> None:
        """Compiles the growing tree's programs (start, cut, one line, a chunk of ``simulations``) and times a chunk."""
        for program in (("start",), ("lines", MAXIMUM_MULTIPV), ("cut",)):
            self._program(program)
        simulations = min(simulations, self.tree_nodes - 1)
        start = self._program(("start",))
        self._grow(start(self.loaded.variables, self._example), 1, simulations)  # each grow takes its tree (donated)
        tree = start(self.loaded.variables, self._example)
        started = time.perf_counter()
        self._grow(tree, 1, simulations)
        self.record_growth(simulations, time.perf_counter() - started)

    def _grow(self, tree: Any, first: int, simulations: int) -> Any:
        """``simulations`` more simulations in ``tree`` from node ``first`` (waits until they are done)."""
        import jax

        program = self._program(("grow", simulations))
        with self._key_lock:
            self.key, key = jax.random.split(self.key)
        return jax.block_until_ready(program(self.loaded.variables, key, tree, np.array([first], np.int32)))

    def record_search(self, simulations: int, seconds: float) -> None:
        """Adds one search's measured time to the per-simulation estimate (the mean of the last few)."""
        if simulations <= 0:
            return
        with self._lock:
            self.simulation_seconds.append(max(seconds - self.fixed_seconds, 1e-6) / simulations)

    def record_growth(self, simulations: int, seconds: float) -> None:
        """Adds one chunk of the growing tree's measured time to its per-simulation estimate (a simulation there
        costs more than in a fresh search, and more the larger the tree)."""
        with self._lock:
            self.growth_seconds.append(seconds / max(simulations, 1))

    @property
    def seconds_per_growth(self) -> float:
        with self._lock:
            return float(np.mean(self.growth_seconds)) if self.growth_seconds else self.seconds_per_simulation

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
            self.growth_seconds.clear()
            self.kept = None
        logger.info("search is now %s", search)
        if search.kind == "muzero":  # PUCT moves grow the kept tree
            self._measure_tree(self.simulations)
        else:
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
        self.kept = None
        if self.positions is not None:
            self.positions.reset()

    def set_tree_nodes(self, nodes: int) -> None:
        """The ``TreeNodes`` option: the growing tree's size; its programs compile again on first use and the kept
        tree is dropped.  A simulation's cost grows with the tree's size on a CPU (zerolab/README.md)."""
        with self._lock:
            self.tree_nodes = int(nodes)
            self._programs = {key: program for key, program in self._programs.items() if not isinstance(key, tuple)}
            self.growth_seconds.clear()
            self.kept = None

    def set_multipv(self, lines: int) -> None:
        """The ``MultiPV`` option: how many best moves each ``info`` reports (more than one grows a tree)."""
        self.multipv = int(lines)

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
        if self.grows(budget):
            choice, notes = self.grow(board, state, budget)
        else:
            result, notes = self.search(budget, batched(state))
            move = self.game.action_to_uci(result.action, state)
            variation = self.variation_moves(state, result.principal_variation) or (move,)
            choice = MoveChoice(move, score_centipawns=value_to_centipawns(result.value), nodes=result.simulations,
                                depth=max(int(round(result.mean_depth)), 1), seldepth=max(result.max_depth, 1),
                                principal_variation=variation, search_seconds=result.seconds)
        if loading:
            notes.insert(0, f"waited for the network to load (this move's time {budget.elapsed():.1f} s includes it)")
        if not self._noted and self.loaded.note:
            notes.insert(0, self.loaded.note)
            self._noted = True
        return dataclasses.replace(choice, note="; ".join(notes))

    # --- the growing tree: PUCT searches, analysis, the tree kept between moves -----------------------------------
    def grows(self, budget: SearchBudget) -> bool:
        """Whether this ``go`` grows the kept tree: always for a PUCT search (``search.kind=muzero``); for analysis
        — ``go infinite``, ``go ponder``, ``go depth``, ``MultiPV`` above 1 — whatever the search; a timed move of a
        Gumbel search never (it plays fresh searches, :meth:`search`).  A timed move also needs the tree's programs
        compiled already, else it plays fresh searches inside its time."""
        analysing = budget.infinite or budget.ponder or budget.depth is not None or self.multipv > 1
        if not analysing and self.loaded.search.kind != "muzero":
            return False
        if is_timed(budget) and not analysing:
            return all(self.is_compiled(program) for program in (("start",), ("cut",), ("lines", MAXIMUM_MULTIPV))) and bool(
                self.compiled_chunks())
        return True

    def kept_tree(self, board: chess.Board) -> tuple[Any, int] | None:
        """``(tree, nodes in use)`` of the last search's subtree at ``board``, when ``board`` is that search's
        position or follows from it by moves the tree searched (the move played and the reply: lc0's tree reuse; with
        rules that keep a node state, such as search-contempt's, only with the same side to move); None otherwise."""
        import jax

        kept = self.kept
        if kept is None:
            return None
        moves = tuple(move.uci() for move in board.move_stack)
        if board.root().fen() != kept.start_fen or moves[:len(kept.moves)] != kept.moves:
            return None
        later = moves[len(kept.moves):]
        if not later:
            return kept.tree, kept.used
        if len(later) % 2 and kept.tree.extra_data.node_state is not None:
            return None  # rules keep per-node state relative to the root's player (search-contempt): same side only
        node, state = 0, kept.state
        for move in later:
            try:
                action = self.game.uci_to_action(move, state)
            except ValueError:
                return None
            actions, children = jax.device_get((kept.tree.children_actions[0, node], kept.tree.children_index[0, node]))
            found = np.flatnonzero(actions == action)
            if not found.size or children[found[0]] < 0:
                return None
            node = int(children[found[0]])
            state = self.game.jitted_step(state, np.int32(action))
        tree, count = self._program(("cut",))(kept.tree, np.array([node], np.int32))
        return tree, int(count[0])

    def grow(self, board: chess.Board, state: pgx.State, budget: SearchBudget) -> tuple[MoveChoice, list[str]]:
        """One ``go`` on the growing tree: the kept subtree (or a new root), grown in chunks until the ``go``'s limit
        — ``nodes`` (simulations this move), ``depth`` (the tree's mean depth), the move's time, ``stop`` (and
        ``ponderhit``) for ``infinite``/``ponder``, else ``Simulations`` — reporting every
        :data:`REPORT_INTERVAL` seconds; the tree is then kept for the next ``go``."""
        notes = []
        kept = None if budget.search_moves else self.kept_tree(board)
        if kept is None:
            tree, used = self._program(("start",))(self.loaded.variables, batched(state)), 1
        else:
            tree, used = kept
        self.reused_visits = int(np.asarray(tree.node_visits[0, 0])) - 1
        lines = min(self.multipv, MAXIMUM_MULTIPV)
        timed, going_on = is_timed(budget), budget.infinite or budget.ponder
        target = budget.nodes if budget.nodes is not None else (
            None if timed or going_on or budget.depth is not None else self.simulations)
        deadline = budget.started_at + TIME_SAFETY * budget.time_budget if timed else math.inf
        simulations, seconds, last_report = 0, 0.0, time.monotonic()
        while not budget.stop_event.is_set():
            room = self.tree_nodes - used
            if target is not None and simulations >= target:
                break
            if budget.depth is not None and simulations and self.tree_lines(tree)[4] >= budget.depth:
                break
            if room <= 0:
                notes.append(f"the search tree is full ({self.tree_nodes} nodes)")
                break
            if timed:
                size = affordable_simulations(deadline - time.monotonic(), 0.0, self.seconds_per_growth,
                                              [size for size in self.compiled_chunks() if size <= room])
                if size == 0:
                    break
            elif target is not None:  # exactly the simulations asked for, in power-of-two chunks
                size = largest_power_of_two(min(target - simulations, room))
            else:  # chunks of about CHUNK_SECONDS, of the sizes compiled (Simulations' at first)
                wanted = max(1, int(CHUNK_SECONDS / max(self.seconds_per_growth, 1e-6)))
                sizes = [size for size in self.compiled_chunks() if size <= min(wanted, room)]
                size = max(sizes) if sizes else largest_power_of_two(min(self.simulations, room))
            self._program(("grow", size))  # compiled first, its compilation not timed
            started = time.perf_counter()
            tree = self._grow(tree, used, size)
            elapsed = time.perf_counter() - started
            seconds += elapsed
            self.record_growth(size, elapsed)
            used, simulations = used + size, simulations + size
            if budget.report is not None and time.monotonic() - last_report >= REPORT_INTERVAL:
                budget.report(self.tree_choice(tree, state, lines, seconds))
                last_report = time.monotonic()
        if going_on:  # a full tree (or a finished depth): the GUI still decides when the search ends
            budget.stop_event.wait()
        self.kept = None if budget.search_moves else KeptTree(
            tree, used, state, board.root().fen(), tuple(move.uci() for move in board.move_stack))
        return self.tree_choice(tree, state, lines, seconds), notes

    def tree_lines(self, tree: Any) -> tuple[np.ndarray, ...]:
        """:func:`~zerolab.frontends.search_report.root_lines` of ``tree`` (:data:`MAXIMUM_MULTIPV` lines) on the host."""
        import jax

        return jax.device_get(self._program(("lines", MAXIMUM_MULTIPV))(tree))

    def tree_choice(self, tree: Any, state: pgx.State, count: int, seconds: float) -> MoveChoice:
        """The tree's best move and its ``count`` lines (``MultiPV``) as a :class:`MoveChoice`."""
        actions, visits, qvalues, variations, mean_depth, max_depth, _, root_visits = self.tree_lines(tree)
        choices = []
        for rank in range(count):
            if actions[rank] < 0 or (rank and visits[rank] == 0):
                break
            moves = self.variation_moves(state, [int(step) for step in variations[rank] if step >= 0])
            choices.append(MoveChoice(
                moves[0] if moves else self.game.action_to_uci(int(actions[rank]), state),
                score_centipawns=value_to_centipawns(float(qvalues[rank])), nodes=int(root_visits) - 1,
                depth=max(int(round(float(mean_depth))), 1), seldepth=max(int(max_depth), 1),
                principal_variation=moves, search_seconds=seconds or None,
                multipv=rank + 1 if count > 1 else None))
        return dataclasses.replace(choices[0], lines=tuple(choices[1:]))


class SearchServer(UCIServer):
    """The UCI server of a :class:`SearchEngine`: a ``Simulations`` option; ``isready`` is answered when the engine
    can move (:meth:`SearchEngine.wait_until_ready`), after the reason when it failed to start."""

    def __init__(self, engine: SearchEngine, name: str, simulations: int, options: Sequence[UCIOption] = ()):
        option = UCIOption("Simulations", "spin", simulations, 1, MAXIMUM_SIMULATIONS, on_change=engine.set_simulations)
        multipv = UCIOption("MultiPV", "spin", 1, 1, MAXIMUM_MULTIPV, on_change=engine.set_multipv)
        tree_nodes = UCIOption("TreeNodes", "spin", engine.tree_nodes, 64, MAXIMUM_TREE_NODES,
                               on_change=engine.set_tree_nodes)
        super().__init__(name, ENGINE_AUTHOR, engine.choose_move, options=[option, multipv, tree_nodes, *options],
                         on_new_game=engine.new_game)
        self.engine = engine

    def handle(self, line: str) -> bool:
        if line.split()[:1] == ["isready"] and self.engine.wait_until_ready() and self.engine.error:
            self.send_error(f"the engine failed to start: {type(self.engine.error).__name__}: {self.engine.error}")
        return super().handle(line)


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
    "FAILED_START_STATUS",
    "SearchEngine",
    "SearchOptionsFn",
    "SearchServer",
    "serve_search_engine",
]
