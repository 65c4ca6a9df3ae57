"""The UCI search engine's tree that grows in chunks and is kept between moves (:class:`GrowingTree`).

A PUCT search (``search.kind=muzero``) plays every move on it, and so does analysis whatever the search — ``go
infinite``, ``go ponder``, ``go depth``, ``MultiPV`` above 1 (:meth:`GrowingTree.grows`).  A ``go`` starts from the
last search's subtree at the new position when the tree searched the moves that lead there (lc0's tree reuse:
:meth:`GrowingTree.kept_subtree`), else from a new root, and grows it in chunks of compiled sizes
(:mod:`zerolab.frontends.search_programs`) until the ``go``'s limit: ``nodes``, ``depth``, the move's time (its chunks
timed apart, :class:`zerolab.frontends.search_timing.SearchTiming`), ``stop``, or a full tree of ``TreeNodes`` nodes.
A search that goes on reports its ``MultiPV`` lines every :data:`REPORT_INTERVAL` seconds, and ``stop`` is heard
between chunks of about :data:`CHUNK_SECONDS`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import chess
import numpy as np

from zerolab.frontends.search_positions import batched, variation_moves
from zerolab.frontends.search_programs import SearchPrograms
from zerolab.frontends.search_report import value_to_centipawns
from zerolab.frontends.search_timing import SearchTiming
from zerolab.frontends.uci_protocol import (
    MoveChoice, SearchBudget, affordable_simulations, is_timed, largest_power_of_two,
)

if TYPE_CHECKING:  # imported where used: the UCI handshake does not wait the seconds JAX and pgx take to import
    import pgx

    from zerolab.frontends.loaded_search import LoadedSearch

TREE_NODES = 2048  # nodes of the tree that grows and is kept between moves (the TreeNodes option; chess: ~15 MB)
MAXIMUM_TREE_NODES = 1 << 20
REPORT_INTERVAL = 1.0  # seconds between the ``info`` lines of a search that goes on
CHUNK_SECONDS = 0.25  # a search that goes on grows in chunks of about this long (``stop`` is heard between them)
MAXIMUM_MULTIPV = 8  # lines one compiled program reports (MultiPV up to this)


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


class GrowingTree:
    """The growing tree of a :class:`zerolab.frontends.uci_search.SearchEngine`: its size, its ``MultiPV`` lines and
    the tree kept from the last ``go``.

    Args:
      programs: the engine's compiled programs (the tree's are keyed by tuples:
        :func:`~zerolab.frontends.search_programs.compile_tree_program`, of :attr:`nodes` nodes).
      timing: the engine's measured costs (the tree's chunks are recorded there).
      next_key: returns a fresh search key.

    Attributes:
      nodes: the tree's nodes (the ``TreeNodes`` option).
      multipv: the lines each ``info`` reports (the ``MultiPV`` option).
      kept: the last search's tree, for the next ``go`` (tree reuse).
      reused_visits: root visits the last search started with (kept from the one before).
    """

    def __init__(self, programs: SearchPrograms, timing: SearchTiming, next_key: Callable[[], Any]):
        self.programs = programs
        self.timing = timing
        self.next_key = next_key
        self.nodes = TREE_NODES
        self.multipv = 1
        self.kept: KeptTree | None = None
        self.reused_visits = 0

    def set_nodes(self, nodes: int) -> None:
        """The ``TreeNodes`` option: the tree's size; its programs compile again on first use and the kept tree is
        dropped.  A simulation's cost grows with the tree's size on a CPU (zerolab/README.md)."""
        self.nodes = int(nodes)
        self.programs.drop_tree_programs()
        self.timing.forget_growth()
        self.kept = None

    def set_multipv(self, lines: int) -> None:
        """The ``MultiPV`` option: how many best moves each ``info`` reports (more than one grows a tree)."""
        self.multipv = int(lines)

    def grows(self, budget: SearchBudget, kind: str) -> bool:
        """Whether this ``go`` grows the kept tree: always for a PUCT search (``kind`` ``muzero``); for analysis —
        ``go infinite``, ``go ponder``, ``go depth``, ``MultiPV`` above 1 — whatever the search; a timed move of a
        Gumbel search never (it plays fresh searches, :meth:`zerolab.frontends.uci_search.SearchEngine.search`).  A
        timed move also needs the tree's programs compiled already, else it plays fresh searches inside its time."""
        analysing = budget.infinite or budget.ponder or budget.depth is not None or self.multipv > 1
        if not analysing and kind != "muzero":
            return False
        if is_timed(budget) and not analysing:
            needed = (("start",), ("cut",), ("lines", MAXIMUM_MULTIPV))
            compiled = all(self.programs.is_compiled(program) for program in needed)
            return compiled and bool(self.programs.compiled_chunks())
        return True

    def measure(self, loaded: LoadedSearch, example: pgx.State, simulations: int) -> None:
        """Compiles the tree's programs (start, cut, the lines, a chunk of ``simulations``) and times a chunk."""
        for program in (("start",), ("lines", MAXIMUM_MULTIPV), ("cut",)):
            self.programs.compiled(program)
        simulations = min(simulations, self.nodes - 1)
        start = self.programs.compiled(("start",))
        self.grow_chunk(loaded, start(loaded.variables, example), 1, simulations)  # each chunk takes its tree (donated)
        tree = start(loaded.variables, example)
        started = time.perf_counter()
        self.grow_chunk(loaded, tree, 1, simulations)
        self.timing.record_growth(simulations, time.perf_counter() - started)

    def grow_chunk(self, loaded: LoadedSearch, tree: Any, first: int, simulations: int) -> Any:
        """``simulations`` more simulations in ``tree`` from node ``first`` (waits until they are done)."""
        import jax

        program = self.programs.compiled(("grow", simulations))
        key = self.next_key()
        return jax.block_until_ready(program(loaded.variables, key, tree, np.array([first], np.int32)))

    def kept_subtree(self, loaded: LoadedSearch, board: chess.Board) -> tuple[Any, int] | None:
        """``(tree, nodes in use)`` of the last search's subtree at ``board``, when ``board`` is that search's
        position or follows from it by moves the tree searched (the move played and the reply: lc0's tree reuse; with
        rules that keep a node state, such as search-contempt's, only with the same side to move); None otherwise."""
        import jax

        kept, game = self.kept, loaded.game
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
                action = game.uci_to_action(move, state)
            except ValueError:
                return None
            actions, children = jax.device_get((kept.tree.children_actions[0, node], kept.tree.children_index[0, node]))
            found = np.flatnonzero(actions == action)
            if not found.size or children[found[0]] < 0:
                return None
            node = int(children[found[0]])
            state = game.jitted_step(state, np.int32(action))
        tree, count = self.programs.compiled(("cut",))(kept.tree, np.array([node], np.int32))
        return tree, int(count[0])

    def grow(self, loaded: LoadedSearch, board: chess.Board, state: pgx.State, budget: SearchBudget,
             simulations_option: int) -> tuple[MoveChoice, list[str]]:
        """One ``go`` on the tree: the kept subtree (or a new root), grown in chunks until the ``go``'s limit —
        ``nodes`` (simulations this move), ``depth`` (the tree's mean depth), the move's time, ``stop`` (and
        ``ponderhit``) for ``infinite``/``ponder``, else ``simulations_option`` (``Simulations``) — reporting every
        :data:`REPORT_INTERVAL` seconds; the tree is then kept for the next ``go``."""
        notes = []
        kept = None if budget.search_moves else self.kept_subtree(loaded, board)
        if kept is None:
            tree, used = self.programs.compiled(("start",))(loaded.variables, batched(state)), 1
        else:
            tree, used = kept
        self.reused_visits = int(np.asarray(tree.node_visits[0, 0])) - 1
        lines = min(self.multipv, MAXIMUM_MULTIPV)
        timed, going_on = is_timed(budget), budget.infinite or budget.ponder
        target = budget.nodes if budget.nodes is not None else (
            None if timed or going_on or budget.depth is not None else simulations_option)
        deadline = self.timing.deadline(budget) if timed else None
        simulations, seconds, last_report = 0, 0.0, time.monotonic()
        while not budget.stop_event.is_set():
            room = self.nodes - used
            if target is not None and simulations >= target:
                break
            if budget.depth is not None and simulations and self.read_lines(tree)[4] >= budget.depth:
                break
            if room <= 0:
                notes.append(f"the search tree is full ({self.nodes} nodes)")
                break
            size = self.chunk_size(deadline, target, simulations, room, simulations_option)
            if size == 0:
                break
            self.programs.compiled(("grow", size))  # compiled first, its compilation not timed
            started = time.perf_counter()
            tree = self.grow_chunk(loaded, tree, used, size)
            elapsed = time.perf_counter() - started
            seconds += elapsed
            self.timing.record_growth(size, elapsed)
            used, simulations = used + size, simulations + size
            if budget.report is not None and time.monotonic() - last_report >= REPORT_INTERVAL:
                budget.report(self.choice(loaded, tree, state, lines, seconds))
                last_report = time.monotonic()
        if going_on:  # a full tree (or a finished depth): the GUI still decides when the search ends
            budget.stop_event.wait()
        self.kept = None if budget.search_moves else KeptTree(
            tree, used, state, board.root().fen(), tuple(move.uci() for move in board.move_stack))
        return self.choice(loaded, tree, state, lines, seconds), notes

    def chunk_size(self, deadline: float | None, target: int | None, simulations: int, room: int,
                   simulations_option: int) -> int:
        """The next chunk's simulations (0: none fits): a timed move's largest compiled chunk that fits before
        ``deadline`` (None: untimed); else exactly the simulations left of ``target``, in power-of-two
        chunks; else (no target) chunks of about :data:`CHUNK_SECONDS`, of the sizes compiled (``Simulations``'
        at first)."""
        if deadline is not None:
            return affordable_simulations(deadline - time.monotonic(), 0.0, self.timing.seconds_per_growth,
                                          [size for size in self.programs.compiled_chunks() if size <= room])
        if target is not None:
            return largest_power_of_two(min(target - simulations, room))
        wanted = max(1, int(CHUNK_SECONDS / max(self.timing.seconds_per_growth, 1e-6)))
        sizes = [size for size in self.programs.compiled_chunks() if size <= min(wanted, room)]
        return max(sizes) if sizes else largest_power_of_two(min(simulations_option, room))

    def read_lines(self, tree: Any) -> tuple[np.ndarray, ...]:
        """:func:`~zerolab.frontends.search_report.root_lines` of ``tree`` (:data:`MAXIMUM_MULTIPV` lines), on the
        host."""
        import jax

        return jax.device_get(self.programs.compiled(("lines", MAXIMUM_MULTIPV))(tree))

    def choice(self, loaded: LoadedSearch, tree: Any, state: pgx.State, count: int, seconds: float) -> MoveChoice:
        """The tree's best move and its ``count`` lines (``MultiPV``) as a :class:`MoveChoice`."""
        actions, visits, qvalues, variations, mean_depth, max_depth, _, root_visits = self.read_lines(tree)
        choices = []
        for rank in range(count):
            if actions[rank] < 0 or (rank and visits[rank] == 0):
                break
            moves = variation_moves(loaded.game, state, [int(step) for step in variations[rank] if step >= 0])
            choices.append(MoveChoice(
                moves[0] if moves else loaded.game.action_to_uci(int(actions[rank]), state),
                score_centipawns=value_to_centipawns(float(qvalues[rank])), nodes=int(root_visits) - 1,
                depth=max(int(round(float(mean_depth))), 1), seldepth=max(int(max_depth), 1),
                principal_variation=moves, search_seconds=seconds or None,
                multipv=rank + 1 if count > 1 else None))
        return dataclasses.replace(choices[0], lines=tuple(choices[1:]))


__all__ = ["CHUNK_SECONDS", "GrowingTree", "KeptTree", "MAXIMUM_MULTIPV", "MAXIMUM_TREE_NODES", "REPORT_INTERVAL",
           "TREE_NODES"]
