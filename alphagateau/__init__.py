"""AlphaGateau: chess as a graph (squares = nodes, moves = edges) with edge-featured GATEAU attention.

Public API (imported lazily, so ``python -m alphagateau.graph_tools`` runs without importing its own module twice):

* graph (:mod:`alphagateau.graph`): :func:`board_graph`, :func:`graph_features`, :func:`node_features`,
  :func:`edge_features`, :func:`slot_logits_to_action_logits`, :func:`edge_logits_to_action_logits`,
  :func:`action_values_to_edges`, :class:`BoardGraph`, :data:`EDGE_FEATURE_NAMES`, :data:`NUM_NODE_FEATURES`,
  :data:`NUM_EDGE_FEATURES`, :data:`NON_EDGE_LOGIT`;
* graph tools (:mod:`alphagateau.graph_tools`): :func:`build_graphs` (a batch as one ``jraph.GraphsTuple``),
  :func:`graph_legal_moves_uci`, and the command line;
* topology (:mod:`alphagateau.topology`): :class:`Topology` (a fixed graph's incoming-slot layout),
  :class:`FixedGather` (a gather whose gradient is a gather), :func:`masked_softmax`: message passing without
  scatters;
* layers (:mod:`alphagateau.layers`): :class:`GATEAU`, :class:`ResGATEAU`, :class:`AttentionPooling`,
  :class:`GraphBatch`;
* network (:mod:`alphagateau.network`): :class:`AlphaGateau`, :func:`make_alphagateau` (the zerolab factory,
  ``config.model.name = "alphagateau.network:make_alphagateau"``), :func:`parameter_counts`,
  :func:`benchmark_graph_building`;
* statistics (:mod:`alphagateau.statistics`): :func:`score_statistics` (a head-to-head score ± se and its Elo).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "alphagateau.graph": (
        "BoardGraph",
        "EDGE_FEATURE_NAMES",
        "NON_EDGE_LOGIT",
        "NUM_EDGE_FEATURES",
        "NUM_NODE_FEATURES",
        "action_values_to_edges",
        "board_graph",
        "edge_features",
        "edge_logits_to_action_logits",
        "graph_features",
        "node_features",
        "slot_logits_to_action_logits",
    ),
    "alphagateau.graph_tools": ("build_graphs", "graph_legal_moves_uci"),
    "alphagateau.topology": ("FixedGather", "Topology", "masked_softmax"),
    "alphagateau.layers": ("GATEAU", "GraphBatch", "ResGATEAU", "AttentionPooling"),
    "alphagateau.network": ("AlphaGateau", "make_alphagateau", "parameter_counts", "benchmark_graph_building"),
    "alphagateau.statistics": ("score_statistics",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'alphagateau' has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULE_OF[name]), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
