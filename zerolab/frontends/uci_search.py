"""Any zerolab checkpoint as a UCI chess engine: a network with a search behind :class:`zerolab.frontends.uci.UCIServer`.

::

    python -m zerolab uci --checkpoint RUN_OR_STEP_DIR [--simulations N] [--step S] [search.KEY=VALUE ...]

``--checkpoint`` takes a run directory (its newest readable checkpoint, or ``--step``) or one checkpoint step
directory, loaded by :func:`zerolab.frontends.loaded_search.checkpoint_search`.  The network is built for 8×8 chess from the run's model config (:func:`zerolab.play.agents.load_search_agent`
with the chess game), so a board-size independent network trained on Gardner chess (AlphaGateau) plays 8×8 too;
a network whose parameters do not fit 8×8 is refused with a clear error.  The search is the run's
(:class:`zerolab.search.mcts.SearchConfig`, with its rules: ``search.rules`` / ``search.rule_options``) with play
defaults (:data:`zerolab.frontends.loaded_search.PLAY_SEARCH_DEFAULTS`: no Gumbel or Dirichlet noise, so the engine plays its best move), then the
``search.KEY=VALUE`` overrides of the command line (``search.kind=muzero``, ``search.rules=pkg.mod:factory``,
``search.rule_options.NAME=VALUE``; read by :meth:`zerolab.search.mcts.SearchConfig.with_overrides`: a field's
value as its type, a rule option as a Python literal when it parses, else as text).  UCI options:
``Simulations`` (spin) and the server's ``Move Overhead``.

**Position** (:class:`zerolab.games.board.StateTracker`): the GUI's ``position startpos|fen ... moves ...``, checked by
python-chess, becomes a pgx state stepped by pgx from the root FEN, so the network sees pgx's own history planes
and repetition counts, exactly as in self-play; consecutive positions of one game step only the new moves.

**Compile cache.**  mctx's loop length is static, so every simulation count is its own program: each is compiled
ahead of time once and kept (``--compilation-cache DIR`` also keeps them on disk, in JAX's persistent cache, for
the next start).

**From ``go`` to simulations** (:func:`plan_simulations`):

* ``go nodes N``: exactly N simulations (``nodes`` counts simulations), compiled on first use;
* ``go movetime T`` or a clock (``wtime``/``btime`` …): the server's time rule gives a per-move budget ``T``
  (:func:`zerolab.frontends.uci_protocol.time_for_move`); the engine affords ``n = (0.8·T_left − fixed) / per_simulation``
  simulations, where ``fixed`` (one network call and the position set-up) and ``per_simulation`` are measured at
  start-up, and ``per_simulation`` is updated after every timed search of a compiled size (the mean of the last
  :data:`TIMING_WINDOW` measurements, :meth:`SearchEngine.record_search`).  It plays ``Simulations`` when ``n``
  reaches it, else the largest power of two ≤ ``n`` that is already compiled, else the raw policy (the network's
  most likely legal move, 0 simulations).  Smaller power-of-two sizes are compiled in the background after
  start-up, so that short time controls find them ready;
* plain ``go``, ``go infinite``, ``go ponder``: ``Simulations`` simulations (``infinite``/``ponder`` then hold the
  ``bestmove`` until ``stop``/``ponderhit``, as the server does).

``go searchmoves ...`` limits the search to those moves.  A jitted search cannot be interrupted: ``stop`` ends
``infinite`` waits, not a search under way.  The ``info`` line gives the root value as centipawns (lc0's map,
:func:`value_to_centipawns`).

**Any agent** (a team, an external engine, a searchless predictor): :func:`agent_server` puts it behind the same
server through :class:`AgentMoveChooser` (no time rule: the agent decides its own effort).

**Start-up.** JAX, pgx and the network are loaded in a warm-up thread, so ``uci`` is answered at once; ``isready``
(and the first ``go``) wait until the network is loaded and the ``Simulations`` search is compiled.  If loading
fails, ``isready`` answers with an ``info string error`` first and every ``go`` plays the server's fallback move.
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

from zerolab.frontends.loaded_search import LoadedSearch, with_compilation_cache
from zerolab.frontends.uci import UCIServer, main_loop
from zerolab.frontends.uci_protocol import MoveChoice, SearchBudget, UCIOption

if TYPE_CHECKING:  # imported where used: the UCI handshake does not wait the seconds JAX and pgx take to import
    import pgx

    from zerolab.games.board import StateTracker
    from zerolab.games import ChessGame
    from zerolab.search.mcts import SearchConfig

logger = logging.getLogger("zerolab.frontends.uci_search")

ENGINE_AUTHOR = "zerolab"
MAXIMUM_SIMULATIONS = 100_000
TIME_SAFETY = 0.8  # share of the remaining move time that searching may use
TIMING_WINDOW = 8  # searches averaged in the per-simulation time
QUIT_TIMEOUT = 5.0  # seconds ``quit`` waits for a compilation under way
# --- the time rule --------------------------------------------------------------------------------------------------


def largest_power_of_two(n: int) -> int:
    """The largest power of two ≤ ``n`` (0 when ``n`` < 1)."""
    return 0 if n < 1 else 1 << (int(n).bit_length() - 1)


def is_timed(budget: SearchBudget) -> bool:
    """True when ``go`` set a move time or a clock (not ``infinite`` / ``ponder``)."""
    clock = budget.move_time is not None or budget.white_time is not None or budget.black_time is not None
    return clock and not (budget.infinite or budget.ponder) and budget.time_budget is not None


def plan_simulations(
    budget: SearchBudget,
    configured: int,
    fixed_seconds: float,
    seconds_per_simulation: float,
    compiled: Sequence[int],
) -> int:
    """Simulations for one move; 0 means the raw policy (see the module docstring for the rule).

    Args:
      budget: what ``go`` asked for, with the server's per-move ``time_budget``.
      configured: the ``Simulations`` option.
      fixed_seconds: measured cost of a move without simulations.
      seconds_per_simulation: measured cost of one simulation.
      compiled: simulation counts whose search is compiled and ready.
    """
    if budget.nodes is not None:
        return min(max(int(budget.nodes), 0), MAXIMUM_SIMULATIONS)
    if not is_timed(budget):
        return configured
    available = TIME_SAFETY * budget.time_left() - fixed_seconds
    affordable = math.floor(available / seconds_per_simulation) if available > 0 else 0
    if affordable >= configured:
        return configured
    candidates = [size for size in compiled if 0 < size <= affordable and size == largest_power_of_two(size)]
    return max(candidates, default=0)


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


# --- the engine ----------------------------------------------------------------------------------------------------


class SearchEngine:
    """Chooses moves for :class:`zerolab.frontends.uci.UCIServer`: board → pgx state → search → UCI move.

    Args:
      load: returns the :class:`LoadedSearch`; called by :meth:`warm_up`, so the server can answer ``uci`` before
        the (slow) loading is done.
      simulations: the ``Simulations`` value (default: the loaded search's ``num_simulations``).
      seed: seed of the search keys.
    """

    def __init__(self, load: Callable[[], LoadedSearch], simulations: int | None = None, seed: int = 0):
        self.load = load
        self.loaded: LoadedSearch | None = None
        self.game: ChessGame | None = None
        self.positions: StateTracker | None = None
        self.simulations = None if simulations is None else int(simulations)
        self.seed = int(seed)
        self.key = None
        self.fixed_seconds = 0.0
        self.simulation_seconds: collections.deque[float] = collections.deque(maxlen=TIMING_WINDOW)
        self._programs: dict[int, Callable] = {}
        self._compiling: dict[int, threading.Event] = {}  # sizes being compiled, set when done
        self._lock = threading.RLock()  # guards _programs, _compiling and the timings
        self._ready = threading.Event()
        self._closing = threading.Event()
        self.error: BaseException | None = None  # why the warm-up failed, if it did
        self._example: pgx.State | None = None

    # --- compilation and timing ---------------------------------------------------------------------------------
    def _program(self, simulations: int) -> Callable:
        """The compiled ``(variables, key, states) -> (action [1], value [1])`` for ``simulations`` (0: policy)."""
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
            program = self._compile(simulations)
            with self._lock:
                self._programs[simulations] = program
            return program
        finally:
            with self._lock:
                self._compiling.pop(simulations).set()

    def _compile(self, simulations: int) -> Callable:
        """Compiles the move choice for ``simulations`` ahead of time, for a batch of one state."""
        import jax
        import jax.numpy as jnp

        from zerolab.search.mcts import evaluate, run_search

        network, game = self.loaded.network, self.game
        if simulations == 0:
            def choose(variables, key, states):
                del key
                logits, value = evaluate(network, variables, states)
                return jnp.argmax(logits, axis=-1), value
        else:
            config = dataclasses.replace(self.loaded.search, num_simulations=simulations)

            def choose(variables, key, states):
                output = run_search(config, game, network, variables, key, states)
                return output.action, output.root_value
        return jax.jit(choose).lower(self.loaded.variables, self.key, self._example).compile()

    def compiled_sizes(self) -> list[int]:
        with self._lock:
            return sorted(self._programs)

    def warm_up(self, background_sizes: bool = True) -> None:
        """Loads the network, compiles pgx's step, the policy and the ``Simulations`` search, measures their cost and
        marks the engine ready; then compiles the smaller power-of-two sizes (for time controls) unless
        ``background_sizes`` is off.  A failure is kept in :attr:`error` (and logged) and still marks it ready."""
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
            self._measure()
        except Exception as error:  # noqa: BLE001 - reported to the GUI by the server
            logger.error("the engine failed to start: %s: %s", type(error).__name__, error)
            self.error = error
            return
        finally:
            self._ready.set()
        if background_sizes:
            size = largest_power_of_two(self.simulations - 1)
            while size >= 1 and not self._closing.is_set():
                self._program(size)
                size //= 2

    def close(self) -> None:
        """Stops the background compilation after the size under way."""
        self._closing.set()

    def _measure(self) -> None:
        for simulations in (0, self.simulations):
            self._run(simulations, self._example)  # compiles
        started = time.perf_counter()
        self._run(0, self._example)
        fixed = time.perf_counter() - started
        started = time.perf_counter()
        self._run(self.simulations, self._example)
        searched = time.perf_counter() - started
        with self._lock:
            self.fixed_seconds = fixed
            self.simulation_seconds.clear()
        self.record_search(self.simulations, searched)
        logger.info("%d simulations: %.3f s per move, of which %.3f s fixed", self.simulations, searched, fixed)

    def record_search(self, simulations: int, seconds: float) -> None:
        """Adds one search's measured time to the per-simulation estimate (the mean of the last few)."""
        if simulations <= 0:
            return
        with self._lock:
            self.simulation_seconds.append(max(seconds - self.fixed_seconds, 1e-6) / simulations)

    def wait_until_ready(self) -> None:
        self._ready.wait()

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
        logger.info("search is now %s", search)
        self._measure()

    def set_simulations(self, simulations: int) -> None:
        """The ``Simulations`` option: compiles that search (if new) and re-measures the cost per simulation."""
        self.check_started()
        self.simulations = int(simulations)
        self._measure()

    def new_game(self) -> None:
        if self.positions is not None:
            self.positions.reset()

    # --- moves ----------------------------------------------------------------------------------------------------
    def _run(self, simulations: int, states: pgx.State) -> tuple[int, float]:
        import jax

        self.key, key = jax.random.split(self.key)
        action, value = self._program(simulations)(self.loaded.variables, key, states)
        return int(action[0]), float(value[0])

    def check_started(self) -> None:
        """Waits for the warm-up; raises RuntimeError if it failed."""
        self.wait_until_ready()
        if self.error is not None:
            raise RuntimeError(f"the engine failed to start: {type(self.error).__name__}: {self.error}")

    def choose_move(self, board: chess.Board, budget: SearchBudget) -> MoveChoice:
        """The move for ``board`` under ``budget`` (the :data:`zerolab.frontends.uci.ChooseMove` callback)."""
        self.check_started()
        state = self.positions.state(board)
        if budget.search_moves:
            state = restricted(self.game, state, budget.search_moves)
        simulations = plan_simulations(budget, self.simulations, self.fixed_seconds, self.seconds_per_simulation,
                                       self.compiled_sizes())
        was_compiled = simulations in self.compiled_sizes()
        started = time.perf_counter()
        action, value = self._run(simulations, batched(state))
        if was_compiled:  # a first use includes its compilation, which says nothing of the search's speed
            self.record_search(simulations, time.perf_counter() - started)
        move = self.game.action_to_uci(action, state)
        return MoveChoice(move, score_centipawns=value_to_centipawns(value), nodes=simulations,
                          depth=1 if simulations == 0 else None, principal_variation=(move,))


class SearchServer(UCIServer):
    """The UCI server of a :class:`SearchEngine`: a ``Simulations`` option, and ``isready`` waits for the warm-up."""

    def __init__(self, engine: SearchEngine, name: str, simulations: int, options: Sequence[UCIOption] = ()):
        option = UCIOption("Simulations", "spin", simulations, 1, MAXIMUM_SIMULATIONS, on_change=engine.set_simulations)
        super().__init__(name, ENGINE_AUTHOR, engine.choose_move, options=[option, *options],
                         on_new_game=engine.new_game)
        self.engine = engine

    def handle(self, line: str) -> bool:
        if line.split()[:1] == ["isready"]:
            try:
                self.engine.check_started()
            except RuntimeError as error:
                self.send_error(str(error))
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
                        compilation_cache: str = "", options: SearchOptionsFn | None = None) -> int:
    """Runs a :class:`SearchEngine` on standard input and output; loading and compiling happen while the GUI
    handshakes.  ``simulations`` is the ``Simulations`` option's start (it replaces the loaded search's count);
    ``options`` adds UCI options built for the engine."""
    if compilation_cache:
        load = with_compilation_cache(load, compilation_cache)
    engine = SearchEngine(load, simulations, seed)
    warm_up = threading.Thread(target=engine.warm_up, name="warm-up", daemon=True)
    warm_up.start()
    main_loop(SearchServer(engine, name, simulations, options(engine) if options is not None else ()))
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
    "largest_power_of_two",
    "plan_simulations",
    "serve_search_engine",
    "value_to_centipawns",
]
