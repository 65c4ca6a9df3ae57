"""Search: Gumbel and PUCT over a tree of legal moves with method rules (node state, selection, backup); its settings
and rules in ``config``, the search in ``mcts``.

Method packages import this layer's names from here (``from zerolab.search import selection_functions``), as listed in
``__all__`` (the rule: :mod:`zerolab`); they resolve lazily (:mod:`zerolab.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_surface

if TYPE_CHECKING:
    from zerolab.search.config import (SEARCH_KINDS, SELECTIONS, SearchChanges, SearchConfig, SearchRules,
                                       selection_functions)
    from zerolab.search.mcts import grow_tree, growing_config, masked_logits, run_search, search_policy, start_tree
    from zerolab.search.tree import RecurrentFn, RecurrentOutput, Tree, child_index, subtree

__all__ = [
    "RecurrentFn", "RecurrentOutput", "SEARCH_KINDS", "SELECTIONS", "SearchChanges", "SearchConfig", "SearchRules",
    "Tree", "child_index", "grow_tree", "growing_config", "masked_logits", "run_search", "search_policy",
    "selection_functions", "start_tree", "subtree"
]
__getattr__, __dir__ = lazy_surface(__name__)
