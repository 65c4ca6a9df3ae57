"""Search: mctx's Gumbel and PUCT loops with method rules (node state, selection, backup).

``__all__`` is the layer's declared surface: the names of this layer that a method package may import, from here
(``from zerolab.search import selection_functions``) and never from the modules inside (the ones it shares with other
methods come from ``zerolab`` itself). Names resolve lazily (PEP 562, :mod:`zerolab.lazy`): importing one imports only
the module that defines it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_names

__getattr__, __dir__ = lazy_names(__name__, {
    "zerolab.search.mcts": ("SearchConfig", "SearchRules", "masked_logits", "project_loop_rules", "run_search",
                            "search_policy", "selection_functions"),
})

__all__ = [
    "SearchConfig", "SearchRules", "masked_logits", "project_loop_rules", "run_search", "search_policy",
    "selection_functions",
]

if TYPE_CHECKING:
    from zerolab.search.mcts import (
        SearchConfig, SearchRules, masked_logits, project_loop_rules, run_search, search_policy, selection_functions,
    )
