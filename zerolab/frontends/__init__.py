"""Front ends: the UCI and GTP servers, the command lines, benchmarks and experiment set-up.

Method packages import this layer's names from here (``from zerolab.frontends import GTPServer``), as listed in
``__all__`` (the rule: :mod:`zerolab`); they resolve lazily (:mod:`zerolab.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_names

__getattr__, __dir__ = lazy_names(__name__, {
    "zerolab.frontends.bench": ("interleaved_best_times",),
    "zerolab.frontends.gtp": ("GTPError", "GTPServer"),
    "zerolab.frontends.lc0_convert": ("convert_to_run",),
    "zerolab.frontends.uci": ("UCIServer", "main_loop"),
    "zerolab.frontends.uci_protocol": ("MoveChoice", "SearchBudget", "UCIOption"),
    "zerolab.frontends.loaded_search": ("LoadedSearch", "checkpoint_search", "play_search"),
    "zerolab.frontends.uci_search": ("serve_search_engine",),
})

__all__ = [
    "GTPError", "GTPServer", "LoadedSearch", "MoveChoice", "SearchBudget", "UCIOption", "UCIServer",
    "checkpoint_search", "convert_to_run", "interleaved_best_times", "main_loop", "play_search", "serve_search_engine",
]

if TYPE_CHECKING:
    from zerolab.frontends.bench import interleaved_best_times
    from zerolab.frontends.gtp import GTPError, GTPServer
    from zerolab.frontends.lc0_convert import convert_to_run
    from zerolab.frontends.uci import UCIServer, main_loop
    from zerolab.frontends.uci_protocol import MoveChoice, SearchBudget, UCIOption
    from zerolab.frontends.loaded_search import LoadedSearch, checkpoint_search, play_search
    from zerolab.frontends.uci_search import serve_search_engine
