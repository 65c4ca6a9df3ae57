"""Engines: clients of external UCI and GTP engines (Stockfish, Fairy-Stockfish, GNU Go).

``__all__`` is the layer's declared surface: the names of this layer that a method package may import, from here
(``from zerolab.engines import find_engine``) and never from the modules inside (the ones it shares with other methods
come from ``zerolab`` itself). Names resolve lazily (PEP 562, :mod:`zerolab.lazy`): importing one imports only the
module that defines it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_names

__getattr__, __dir__ = lazy_names(__name__, {
    "zerolab.engines.uci_client": ("EngineError", "UCIEngine", "find_engine"),
})

__all__ = ["EngineError", "UCIEngine", "find_engine"]

if TYPE_CHECKING:
    from zerolab.engines.uci_client import EngineError, UCIEngine, find_engine
