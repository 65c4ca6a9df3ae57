"""Engines: clients of external UCI and GTP engines (Stockfish, Fairy-Stockfish, GNU Go).

Method packages import this layer's names from here (``from zerolab.engines import find_engine``), as listed in
``__all__`` (the rule: :mod:`zerolab`); they resolve lazily (:mod:`zerolab.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_surface

__all__ = ["EngineError", "UCIEngine", "find_engine"]

if TYPE_CHECKING:
    from zerolab.engines.executables import find_engine
    from zerolab.engines.uci_client import EngineError, UCIEngine

__all__ = [
    "EngineError", "UCIEngine", "find_engine"
]
__getattr__, __dir__ = lazy_surface(__name__)
