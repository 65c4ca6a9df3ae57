"""AlphaGateau as a UCI engine, on zerolab's UCI front end (:mod:`zerolab.uci`).

::

    python -m alphagateau.uci --checkpoint RUN_OR_STEP_DIR [--simulations N]
    python -m alphagateau.uci --random-init [--embedding-size H --blocks L] [--simulations N]

``--checkpoint`` takes a zerolab run directory (its newest checkpoint) or one checkpoint step directory
(``RUN/checkpoints/12``).  A checkpoint trained on 5×5 Gardner chess plays 8×8 too (AlphaGateau's parameters do not
depend on the board); a ResNet checkpoint must come from an 8×8 run.  ``--random-init`` plays an untrained
AlphaGateau, for smoke checks.  UCI options: ``Simulations`` (spin) and zerolab's ``Move Overhead``.

**Position.** The GUI's position (``position startpos|fen ... moves ...``, checked by python-chess in
:class:`zerolab.uci.UCIServer`) becomes a pgx state by :class:`PositionTracker`: pgx reads the root FEN
(``ChessGame.from_fen``) and steps the move list itself, so the network sees pgx's own history planes and
repetition counts — exactly what it saw in self-play.  Consecutive positions of one game only step the new moves.
When pgx cannot continue that way — it considers the game over (threefold repetition, which python-chess only
makes claimable, or pgx's 512-step limit) or disagrees about a move — the state is rebuilt from a later position
(the last 8 plies stepped from the FEN 8 plies back, then fewer), which keeps as much history as pgx accepts.

**Search.** Gumbel MuZero through :func:`zerolab.search.run_search` (``--gumbel-scale 0`` by default: no noise,
the engine plays its best move).  Every simulation count is its own compiled program (mctx's loop length is
static), compiled ahead of time and kept.

**From ``go`` to simulations** (:func:`plan_simulations`):

* ``go nodes N``: exactly N simulations (``nodes`` counts simulations), compiled on first use;
* ``go movetime T`` or a clock (``wtime``/``btime`` …): zerolab's time rule gives a per-move budget ``T``
  (:func:`zerolab.uci.time_for_move`); the engine affords ``n = (0.8·T_left − fixed) / per_simulation``
  simulations, where ``fixed`` (one network call and the position set-up) and ``per_simulation`` are measured at
  start-up and ``per_simulation`` is updated after every search (mean of the last measurements).  It plays
  ``Simulations`` when ``n`` reaches it, else the largest power of two ≤ ``n`` that is already compiled, else the
  raw policy (the network's most likely legal move, 0 simulations).  Smaller power-of-two sizes are compiled in
  the background after start-up, so that short time controls find them ready;
* plain ``go``, ``go infinite``, ``go ponder``: ``Simulations`` simulations (``infinite``/``ponder`` then hold the
  ``bestmove`` until ``stop``/``ponderhit``, as zerolab's server does).

``go searchmoves ...`` limits the search to those moves.  A jitted search cannot be interrupted: ``stop`` ends
``infinite`` waits, not a search under way.

**Start-up.** JAX, pgx and the network are loaded in a warm-up thread, so ``uci`` is answered at once; ``isready``
(and the first ``go``) wait until the network is loaded and the ``Simulations`` search is compiled.  If loading
fails, ``isready`` answers with an ``info string error`` first and every ``go`` plays zerolab's fallback move.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import logging
import math
import os
import pathlib
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import chess
import numpy as np

from zerolab.api import MoveChoice, SearchBudget, UCIOption, UCIServer, main_loop

if TYPE_CHECKING:  # imported where used: the UCI handshake does not wait the seconds JAX and pgx take to import
    import pgx

    from zerolab.api import ChessGame
    from zerolab.api import SearchConfig

logger = logging.getLogger("alphagateau.uci")  # also when run as __main__

ENGINE_NAME = "AlphaGateau (zerolab)"
ENGINE_AUTHOR = "zerolab"
DEFAULT_SIMULATIONS = 64
MAXIMUM_SIMULATIONS = 100_000
TIME_SAFETY = 0.8  # share of the remaining move time that searching may use
HISTORY_PLIES = 8  # positions pgx keeps in its observation
TIMING_WINDOW = 8  # searches averaged in the per-simulation time
QUIT_TIMEOUT = 5.0  # seconds ``quit`` waits for a compilation under way


# --- networks ---------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class LoadedNetwork:
    """A network ready for 8×8 chess: the game, the module, its variables, its search settings and a description."""

    game: ChessGame
    network: Any
    variables: Any
    search: SearchConfig
    description: str


def random_network(embedding_size: int, num_blocks: int, seed: int) -> LoadedNetwork:
    """An untrained AlphaGateau (``embedding_size`` H, ``num_blocks`` L) for 8×8 chess; parameters from ``seed``."""
    import jax

    from alphagateau.network import AlphaGateau
    from zerolab.api import make_game
    from zerolab.api import init_variables
    from zerolab.api import SearchConfig

    game = make_game("chess")
    network = AlphaGateau(embedding_size=embedding_size, num_blocks=num_blocks)
    variables = init_variables(network, game, jax.random.key(seed))
    description = f"untrained AlphaGateau H={embedding_size} L={num_blocks}"
    return LoadedNetwork(game, network, variables, SearchConfig(), description)


def checkpoint_network(path: str | pathlib.Path) -> LoadedNetwork:
    """The network of a zerolab checkpoint (run directory: newest step; or a step directory), built for 8×8 chess.

    Raises:
      FileNotFoundError: no checkpoint at ``path``.
      ValueError: the checkpoint's parameters do not fit 8×8 chess (a ResNet trained on Gardner chess).
    """
    import jax

    from zerolab.api import make_game
    from zerolab.api import init_variables, make_network
    from zerolab.api import SearchConfig
    from zerolab.api import load_trained_variables

    game = make_game("chess")
    trained = load_trained_variables(path)
    network = make_network(trained.config.model, game)
    expected = jax.eval_shape(lambda: init_variables(network, game, jax.random.key(0)))
    shapes = lambda tree: jax.tree.map(lambda leaf: tuple(leaf.shape), tree)  # noqa: E731
    if shapes(expected) != shapes(trained.variables):
        raise ValueError(
            f"{path}: the network of this checkpoint ({trained.config.model.name} trained on "
            f"{trained.config.game.name}) does not fit {game.name}; only AlphaGateau's parameters are board-size "
            "independent"
        )
    search = SearchConfig.from_config(trained.config.search)
    description = f"{trained.config.model.name} from {trained.path} ({trained.config.game.name}, step {trained.step})"
    return LoadedNetwork(game, network, trained.variables, search, description)


# --- positions ----------------------------------------------------------------------------------------------------


def batched(state: pgx.State) -> pgx.State:
    """A batch of one."""
    import jax

    return jax.tree.map(lambda leaf: leaf[None], state)


class PositionTracker:
    """pgx states of python-chess boards: root FEN + the move list stepped by pgx (see the module docstring).

    Remembers the last position, so the next position of the same game only steps the new moves.
    """

    def __init__(self, game: ChessGame):
        import jax

        self.game = game
        self._step = jax.jit(game.step)
        self._root_fen: str | None = None
        self._moves: tuple[str, ...] = ()
        self._state: pgx.State | None = None
        self.rebuilds = 0  # positions pgx could not reach by stepping from the root (for tests and logs)

    def reset(self) -> None:
        self._root_fen, self._moves, self._state = None, (), None

    def state(self, board: chess.Board) -> pgx.State:
        """The unbatched pgx state of ``board`` (which must have a legal move)."""
        root_fen = board.root().fen()
        moves = tuple(move.uci() for move in board.move_stack)
        try:
            state = self._continue(root_fen, moves)
        except ValueError as error:
            logger.info("pgx cannot step the move list (%s); rebuilding from a later position", error)
            state = None
        if state is None or bool(state.terminated):
            state = self._rebuild(board)
        self._root_fen, self._moves, self._state = root_fen, moves, state
        return state

    def _continue(self, root_fen: str, moves: tuple[str, ...]) -> pgx.State:
        known = self._moves
        if self._state is not None and root_fen == self._root_fen and moves[: len(known)] == known:
            state, remaining = self._state, moves[len(known):]
        else:
            state, remaining = self.game.from_fen(root_fen), moves
        return self._play(state, remaining)

    def _play(self, state: pgx.State, moves: Sequence[str]) -> pgx.State:
        for move in moves:
            if bool(state.terminated):
                return state
            state = self._step(state, np.int32(self.game.uci_to_action(move, state)))
        return state

    def _rebuild(self, board: chess.Board) -> pgx.State:
        """The last plies stepped from an earlier FEN: as many (up to 8) as keep pgx's game going."""
        self.rebuilds += 1
        for plies in range(min(HISTORY_PLIES, len(board.move_stack)), -1, -1):
            earlier = board.copy()
            recent = [earlier.pop().uci() for _ in range(plies)][::-1]
            try:
                state = self._play(self.game.from_fen(earlier.fen()), recent)
            except ValueError:
                continue
            if not bool(state.terminated):
                return state
        return self.game.from_fen(board.fen())


# --- the time rule ------------------------------------------------------------------------------------------------


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
      budget: what ``go`` asked for, with zerolab's per-move ``time_budget``.
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


# --- the engine ----------------------------------------------------------------------------------------------------


class GateauEngine:
    """Chooses moves for :class:`zerolab.uci.UCIServer`: pgx state → Gumbel MuZero search → UCI move.

    Args:
      load: returns the network, its variables and the game; called by :meth:`warm_up`, so a UCI front end can
        answer ``uci`` before the (slow) loading is done.
      simulations: the ``Simulations`` value.
      gumbel_scale: Gumbel noise of the search (0: deterministic).
      seed: seed of the search keys.
    """

    def __init__(self, load: Callable[[], LoadedNetwork], simulations: int, gumbel_scale: float = 0.0, seed: int = 0):
        self.load = load
        self.loaded: LoadedNetwork | None = None
        self.game: ChessGame | None = None
        self.positions: PositionTracker | None = None
        self.simulations = int(simulations)
        self.gumbel_scale = float(gumbel_scale)
        self.seed = int(seed)
        self.search_config: SearchConfig | None = None
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

        from zerolab.api import NetworkInputs, apply_network
        from zerolab.api import masked_logits, run_search

        network, game = self.loaded.network, self.game
        if simulations == 0:
            def choose(variables, key, states):
                del key
                (logits, value, _), _ = apply_network(network, variables, NetworkInputs.from_states(states))
                return jnp.argmax(masked_logits(logits, states.legal_action_mask), axis=-1), value
        else:
            config = dataclasses.replace(self.search_config, num_simulations=simulations)

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

            self.loaded = self.load()
            self.game = self.loaded.game
            self.positions = PositionTracker(self.game)
            self.key = jax.random.key(self.seed)
            self.search_config = dataclasses.replace(self.loaded.search, kind="gumbel", gumbel_scale=self.gumbel_scale)
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
            self.simulation_seconds.append(max(searched - fixed, 1e-6) / self.simulations)
        logger.info("%d simulations: %.3f s per move, of which %.3f s fixed", self.simulations, searched, fixed)

    def wait_until_ready(self) -> None:
        self._ready.wait()

    @property
    def seconds_per_simulation(self) -> float:
        with self._lock:
            return float(np.mean(self.simulation_seconds)) if self.simulation_seconds else 1e-3

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

    def restricted(self, state: pgx.State, search_moves: Sequence[str]) -> pgx.State:
        """``state`` with its legal actions limited to ``search_moves`` (``go searchmoves``), when any is legal."""
        allowed = np.zeros(self.game.num_actions, bool)
        for move in search_moves:
            try:
                allowed[self.game.uci_to_action(move, state)] = True
            except ValueError:
                continue
        if not allowed.any():
            return state
        return state.replace(legal_action_mask=state.legal_action_mask & allowed)

    def check_started(self) -> None:
        """Waits for the warm-up; raises RuntimeError if it failed."""
        self.wait_until_ready()
        if self.error is not None:
            raise RuntimeError(f"the engine failed to start: {type(self.error).__name__}: {self.error}")

    def choose_move(self, board: chess.Board, budget: SearchBudget) -> MoveChoice:
        """The move for ``board`` under ``budget`` (the :data:`zerolab.uci.ChooseMove` callback)."""
        self.check_started()
        state = self.positions.state(board)
        if budget.search_moves:
            state = self.restricted(state, budget.search_moves)
        simulations = plan_simulations(budget, self.simulations, self.fixed_seconds, self.seconds_per_simulation,
                                       self.compiled_sizes())
        was_compiled = simulations in self.compiled_sizes()
        started = time.perf_counter()
        action, value = self._run(simulations, batched(state))
        elapsed = time.perf_counter() - started
        if simulations > 0 and was_compiled:
            with self._lock:
                self.simulation_seconds.append(max(elapsed - self.fixed_seconds, 1e-6) / simulations)
        move = self.game.action_to_uci(action, state)
        return MoveChoice(move, score_centipawns=value_to_centipawns(value), nodes=simulations,
                          depth=1 if simulations == 0 else None, principal_variation=(move,))


class GateauServer(UCIServer):
    """zerolab's UCI server whose ``isready`` waits until the engine has loaded and compiled its search."""

    def __init__(self, engine: GateauEngine, name: str = ENGINE_NAME):
        simulations = UCIOption("Simulations", "spin", engine.simulations, 1, MAXIMUM_SIMULATIONS,
                                on_change=engine.set_simulations)
        super().__init__(name, ENGINE_AUTHOR, engine.choose_move, options=[simulations], on_new_game=engine.new_game)
        self.engine = engine

    def handle(self, line: str) -> bool:
        if line.split()[:1] == ["isready"]:
            try:
                self.engine.check_started()
            except RuntimeError as error:
                self.send_error(str(error))
        return super().handle(line)


# --- command line ---------------------------------------------------------------------------------------------------


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m alphagateau.uci", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint", help="a zerolab run directory (newest checkpoint) or checkpoint step directory")
    source.add_argument("--random-init", action="store_true", help="an untrained AlphaGateau, for smoke checks")
    parser.add_argument("--simulations", type=int, default=DEFAULT_SIMULATIONS, help="the Simulations option's start")
    parser.add_argument("--embedding-size", type=int, default=128, help="--random-init: embedding size H")
    parser.add_argument("--blocks", type=int, default=5, help="--random-init: ResGATEAU blocks L")
    parser.add_argument("--gumbel-scale", type=float, default=0.0, help="Gumbel noise of the search (0: none)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random init and of the search keys")
    parser.add_argument("--compilation-cache", default="", help="directory of JAX's persistent compilation cache")
    arguments = parser.parse_args(argv)
    if not 1 <= arguments.simulations <= MAXIMUM_SIMULATIONS:
        parser.error(f"--simulations must be from 1 to {MAXIMUM_SIMULATIONS}")
    return arguments


def with_compilation_cache(load: Callable[[], LoadedNetwork], directory: str) -> Callable[[], LoadedNetwork]:
    """``load`` that first points JAX's persistent compilation cache at ``directory``."""

    def load_with_cache() -> LoadedNetwork:
        import jax

        jax.config.update("jax_compilation_cache_dir", directory)
        return load()

    return load_with_cache


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the engine on standard input and output; loading and compiling happen while the GUI handshakes."""
    arguments = parse_arguments(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    if arguments.checkpoint and not pathlib.Path(arguments.checkpoint).exists():
        print(f"error: --checkpoint {arguments.checkpoint}: no such directory", file=sys.stderr)
        return 2
    if arguments.random_init:
        def load() -> LoadedNetwork:
            return random_network(arguments.embedding_size, arguments.blocks, arguments.seed)
    else:
        def load() -> LoadedNetwork:
            return checkpoint_network(arguments.checkpoint)
    if arguments.compilation_cache:
        load = with_compilation_cache(load, arguments.compilation_cache)
    engine = GateauEngine(load, arguments.simulations, arguments.gumbel_scale, arguments.seed)
    warm_up = threading.Thread(target=engine.warm_up, name="warm-up", daemon=True)
    warm_up.start()
    main_loop(GateauServer(engine))
    engine.close()
    warm_up.join(QUIT_TIMEOUT)
    if warm_up.is_alive():  # still compiling: leaving the interpreter under a running XLA compilation aborts it
        sys.stdout.flush()
        os._exit(0)
    return 0


__all__ = [
    "GateauEngine",
    "GateauServer",
    "LoadedNetwork",
    "PositionTracker",
    "checkpoint_network",
    "plan_simulations",
    "random_network",
    "value_to_centipawns",
]


if __name__ == "__main__":
    sys.exit(main())
