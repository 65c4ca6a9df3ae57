"""The time a move's searches take, measured, so that a timed move spends its budget (:class:`SearchTiming`).

A ``go movetime T`` or a clock (``wtime``/``btime`` …) gives a per-move budget (the server's time rule:
:func:`zerolab.frontends.uci_protocol.time_for_move`, after ``Move Overhead``), and the engine
(:class:`zerolab.frontends.uci_search.SearchEngine`) **searches until :data:`TIME_SAFETY` of it is used**
(:meth:`SearchTiming.deadline`): again and again, each time the largest compiled search that still fits
(:func:`~zerolab.frontends.uci_protocol.affordable_simulations`).  A fresh search costs ``fixed + n · per_simulation``,
both measured: ``fixed`` a move's cost without a search (the network's policy), ``per_simulation`` the mean of the last
:data:`TIMING_WINDOW` searches.  A simulation of the growing tree (:mod:`zerolab.frontends.growing_tree`) costs more
than one of a fresh search, and more the larger the tree: its chunks are timed apart.
"""

from __future__ import annotations

import collections
import threading

import numpy as np

from zerolab.frontends.uci_protocol import SearchBudget

TIME_SAFETY = 0.9  # share of the move's time budget that the searches may fill
TIMING_WINDOW = 8  # searches averaged in the per-simulation time


class SearchTiming:
    """The measured costs of a move's searches: the fixed cost, and the time per simulation of the fresh searches and
    of the growing tree's chunks (each the mean of the last :data:`TIMING_WINDOW`).

    Attributes:
      fixed_seconds: a move's cost without a search (the network's policy: 0 simulations).
      simulation_seconds: the last fresh searches' seconds per simulation (their fixed cost taken off).
      growth_seconds: the last chunks' of the growing tree seconds per simulation.
    """

    def __init__(self):
        self.fixed_seconds = 0.0
        self.simulation_seconds: collections.deque[float] = collections.deque(maxlen=TIMING_WINDOW)
        self.growth_seconds: collections.deque[float] = collections.deque(maxlen=TIMING_WINDOW)
        self._lock = threading.RLock()  # searches are timed in more than one thread

    @staticmethod
    def deadline(budget: SearchBudget) -> float:
        """The ``time.monotonic()`` instant by which a timed move's searches end: :data:`TIME_SAFETY` of its budget."""
        return budget.started_at + TIME_SAFETY * budget.time_budget

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
    def seconds_per_simulation(self) -> float:
        with self._lock:
            return float(np.mean(self.simulation_seconds)) if self.simulation_seconds else 1e-3

    @property
    def seconds_per_growth(self) -> float:
        """The growing tree's seconds per simulation; a fresh search's until a chunk was timed."""
        with self._lock:
            return float(np.mean(self.growth_seconds)) if self.growth_seconds else self.seconds_per_simulation

    def forget(self) -> None:
        """Drops the per-simulation times (a new search costs what it costs); the fixed cost stays."""
        with self._lock:
            self.simulation_seconds.clear()
            self.growth_seconds.clear()

    def forget_growth(self) -> None:
        """Drops the growing tree's per-simulation times (a tree of another size)."""
        with self._lock:
            self.growth_seconds.clear()


__all__ = ["SearchTiming", "TIME_SAFETY", "TIMING_WINDOW"]
