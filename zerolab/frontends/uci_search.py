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
``Simulations`` (spin), ``MultiPV``, ``TreeNodes`` and the server's ``Move Overhead``.

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

**Compilation** (:mod:`zerolab.frontends.search_programs`): every simulation count is its own program, compiled once
and kept, on disk too.  A ``go`` that needs a search not compiled yet **waits** for it and says so in an ``info
string`` (the time waited is not counted in ``nps``).

**From ``go`` to simulations**:

* ``go nodes N``: exactly N simulations (``nodes`` counts simulations), compiled on first use;
* plain ``go``, ``go infinite``, ``go ponder``: ``Simulations`` simulations (``infinite``/``ponder`` then hold the
  ``bestmove`` until ``stop``/``ponderhit``, as the server does);
* ``go movetime T`` or a clock (``wtime``/``btime`` …): the engine **searches until**
  :data:`~zerolab.frontends.search_timing.TIME_SAFETY` **of the move's budget is used**
  (:mod:`zerolab.frontends.search_timing`): again and again, each time the largest compiled search that still fits,
  and combines the searches by adding their root visit counts (:func:`~zerolab.frontends.search_report.combined`,
  root parallelisation); when no search fits, the raw policy (the network's most likely legal move, 0 simulations).
  A timed move that finds no search compiled yet waits, inside its own time, for the one being compiled
  (:meth:`~zerolab.frontends.search_programs.SearchPrograms.wait_for_a_search`); when its time runs out first it plays
  the policy and says so in an ``info string``: it never waits past the clock.

**The growing tree** (:mod:`zerolab.frontends.growing_tree`): a PUCT search (``search.kind=muzero``) plays every
move on a tree kept between moves (lc0's tree reuse), and so does analysis whatever the search: ``go infinite``,
``go ponder``, ``go depth``, ``MultiPV`` above 1.

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

import dataclasses
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import chess
import numpy as np

from zerolab.frontends.growing_tree import MAXIMUM_MULTIPV, MAXIMUM_TREE_NODES, GrowingTree
from zerolab.frontends.loaded_search import DEFAULT_COMPILATION_CACHE, LoadedSearch, with_compilation_cache
from zerolab.frontends.search_positions import batched, restricted, variation_moves
from zerolab.frontends.search_programs import ProgramKey, SearchPrograms, compile_search, compile_tree_program
from zerolab.frontends.search_report import SearchResult, combined, value_to_centipawns
from zerolab.frontends.search_timing import SearchTiming
from zerolab.frontends.uci import UCIServer, main_loop
from zerolab.frontends.uci_options import UCIOption
from zerolab.frontends.uci_protocol import (
    MAXIMUM_SIMULATIONS, MoveChoice, SearchBudget, affordable_simulations, fixed_simulations, largest_power_of_two,
)

if TYPE_CHECKING:  # imported where used: the UCI handshake does not wait the seconds JAX and pgx take to import
    import pgx

    from zerolab.games.board import StateTracker
    from zerolab.games import ChessGame

logger = logging.getLogger("zerolab.frontends.uci_search")

ENGINE_AUTHOR = "zerolab"
QUIT_TIMEOUT = 5.0  # seconds ``quit`` waits for a compilation under way
FAILED_START_STATUS = 2  # exit status of ``serve_search_engine`` when the network cannot be loaded


# --- the engine ----------------------------------------------------------------------------------------------------


class SearchEngine:
    """Chooses moves for :class:`zerolab.frontends.uci.UCIServer`: board → pgx state → search → UCI move.

    Args:
      load: returns the :class:`LoadedSearch`; called by :meth:`warm_up`, so the server can answer ``uci`` before
        the (slow) loading is done.
      simulations: the ``Simulations`` value (default: the loaded search's ``num_simulations``).
      seed: seed of the search keys.
      on_failure: called with the error when loading fails (``serve_search_engine`` ends the process with it).

    Attributes:
      programs: the compiled searches and growing tree's programs (:mod:`zerolab.frontends.search_programs`).
      timing: the searches' measured costs (:mod:`zerolab.frontends.search_timing`).
      tree: the tree that grows and is kept between moves (:mod:`zerolab.frontends.growing_tree`).
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
        self.programs = SearchPrograms(self._compile)
        self.timing = SearchTiming()
        self.tree = GrowingTree(self.programs, self.timing, self.next_key)
        self._ready = threading.Event()
        self._closing = threading.Event()
        self._key_lock = threading.Lock()
        self._noted = False  # the loaded search's note was sent
        self.error: BaseException | None = None  # why the warm-up failed, if it did
        self._example: pgx.State | None = None

    # --- compilation, start-up and settings ---------------------------------------------------------------------
    def _compile(self, program: ProgramKey) -> Callable:
        """The search of ``program`` simulations (0: the policy), or the growing tree's ``program`` (a tuple),
        compiled for the loaded network and search and a batch of one state."""
        if isinstance(program, tuple):
            return compile_tree_program(program, self.loaded, self.game, self.key, self._example, self.tree.nodes)
        return compile_search(program, self.loaded, self.game, self.key, self._example)

    def next_key(self) -> Any:
        """A fresh search key (moves and the background compilations search in different threads)."""
        import jax

        with self._key_lock:
            self.key, key = jax.random.split(self.key)
        return key

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
            self.timing.fixed_seconds = self._run(0, self._example).seconds
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
            self.tree.measure(self.loaded, self._example, self.simulations)
        else:
            self._measure(self.simulations)
        if background_sizes:
            size = largest_power_of_two(self.simulations - 1)
            while size >= 1 and not self._closing.is_set():
                self.programs.compiled(("grow", size) if growing else size)
                size //= 2
            if not growing and not self._closing.is_set():  # analysis grows a tree whatever the search
                self.tree.measure(self.loaded, self._example, self.simulations)

    def close(self) -> None:
        """Stops the background compilation after the size under way."""
        self._closing.set()

    def _measure(self, simulations: int) -> None:
        """Compiles the ``simulations`` search (if new) and adds one timed run to the per-simulation estimate."""
        self._run(simulations, self._example)
        result = self._run(simulations, self._example)
        self.timing.record_search(simulations, result.seconds)
        logger.info("%d simulations: %.3f s per move, of which %.3f s fixed", simulations, result.seconds,
                    self.timing.fixed_seconds)

    def wait_until_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def set_search(self, **changes: Any) -> None:
        """Replaces fields of the search (``kind``, ``rules``, ``rule_options``, ...), as a UCI option does: the
        compiled searches are dropped (each size compiles again on first use) and the cost is measured again."""
        self.check_started()
        search = dataclasses.replace(self.loaded.search, **changes)
        search.make_rules()  # bad rules or options fail here, before any search is dropped
        self.loaded = dataclasses.replace(self.loaded, search=search)
        self.programs.drop_searches()
        self.timing.forget()
        self.tree.kept = None
        logger.info("search is now %s", search)
        if search.kind == "muzero":  # PUCT moves grow the kept tree
            self.tree.measure(self.loaded, self._example, self.simulations)
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
        self.tree.kept = None
        if self.positions is not None:
            self.positions.reset()

    # --- moves ----------------------------------------------------------------------------------------------------
    def _run(self, simulations: int, states: pgx.State) -> SearchResult:
        """One search (compiled first if needed: not counted in ``seconds``)."""
        import jax

        program = self.programs.compiled(simulations)
        key = self.next_key()
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
        """The fresh searches of one move (see the module docstring) and notes for the GUI about compilations."""
        notes = []
        simulations = fixed_simulations(budget, self.simulations)
        if simulations is not None:
            if not self.programs.is_compiled(simulations):
                started = time.perf_counter()
                self.programs.compiled(simulations)
                notes.append(f"waited {time.perf_counter() - started:.1f} s for the {simulations}-simulation search "
                             "to compile (first use; not counted in nps)")
            result = self._run(simulations, states)
            self.timing.record_search(simulations, result.seconds)
            return result, notes
        deadline = self.timing.deadline(budget)
        waited = self.programs.wait_for_a_search(deadline - self.timing.fixed_seconds)
        if waited >= 0.05:
            notes.append(f"waited {waited:.1f} s of this move's time for the first search to compile")
        results = []
        while not budget.stop_event.is_set():
            size = affordable_simulations(deadline - time.monotonic(), self.timing.fixed_seconds,
                                          self.timing.seconds_per_simulation, self.programs.compiled_sizes())
            if size == 0:
                break
            results.append(self._run(size, states))
            self.timing.record_search(size, results[-1].seconds)
        if not results:
            results.append(self._run(0, states))
        if not self.programs.is_compiled(self.simulations):
            notes.append(f"the {self.simulations}-simulation search is still compiling; this move used the searches "
                         f"compiled so far ({', '.join(map(str, self.programs.compiled_sizes()))} simulations)")
        return combined(results), notes

    def choose_move(self, board: chess.Board, budget: SearchBudget) -> MoveChoice:
        """The move for ``board`` under ``budget`` (the :data:`zerolab.frontends.uci.ChooseMove` callback)."""
        loading = not self._ready.is_set()
        self.check_started()
        state = self.positions.state(board)
        if budget.search_moves:
            state = restricted(self.game, state, budget.search_moves)
        if self.tree.grows(budget, self.loaded.search.kind):
            choice, notes = self.tree.grow(self.loaded, board, state, budget, self.simulations)
        else:
            result, notes = self.search(budget, batched(state))
            move = self.game.action_to_uci(result.action, state)
            variation = variation_moves(self.game, state, result.principal_variation) or (move,)
            choice = MoveChoice(move, score_centipawns=value_to_centipawns(result.value), nodes=result.simulations,
                                depth=max(int(round(result.mean_depth)), 1), seldepth=max(result.max_depth, 1),
                                principal_variation=variation, search_seconds=result.seconds)
        if loading:
            notes.insert(0, f"waited for the network to load (this move's time {budget.elapsed():.1f} s includes it)")
        if not self._noted and self.loaded.note:
            notes.insert(0, self.loaded.note)
            self._noted = True
        return dataclasses.replace(choice, note="; ".join(notes))


class SearchServer(UCIServer):
    """The UCI server of a :class:`SearchEngine`: a ``Simulations`` option; ``isready`` is answered when the engine
    can move (:meth:`SearchEngine.wait_until_ready`), after the reason when it failed to start."""

    def __init__(self, engine: SearchEngine, name: str, simulations: int, options: Sequence[UCIOption] = ()):
        option = UCIOption("Simulations", "spin", simulations, 1, MAXIMUM_SIMULATIONS, on_change=engine.set_simulations)
        multipv = UCIOption("MultiPV", "spin", 1, 1, MAXIMUM_MULTIPV, on_change=engine.tree.set_multipv)
        tree_nodes = UCIOption("TreeNodes", "spin", engine.tree.nodes, 64, MAXIMUM_TREE_NODES,
                               on_change=engine.tree.set_nodes)
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


__all__ = ["ENGINE_AUTHOR", "FAILED_START_STATUS", "QUIT_TIMEOUT", "SearchEngine", "SearchOptionsFn", "SearchServer",
           "serve_search_engine"]
