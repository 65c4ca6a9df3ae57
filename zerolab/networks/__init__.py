"""Networks: the input/output contract, the AlphaZero ResNet, and lc0-format networks (maia).

Method packages import this layer's names from here (``from zerolab.networks import load_lc0_weights``), as listed in
``__all__`` (the rule: :mod:`zerolab`); they resolve lazily (:mod:`zerolab.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_surface

if TYPE_CHECKING:
    from zerolab.networks.lc0 import load_lc0_weights
    from zerolab.networks.network import (
        NETWORK_DTYPES, AlphaZeroResNet, NetworkInputs, NetworkOutput, abstract_variables, apply_network,
        compute_dtype, count_parameters, float32_output, init_variables, make_network, policy_head, residual_tower,
    )

__all__ = [
    "AlphaZeroResNet", "NETWORK_DTYPES", "NetworkInputs", "NetworkOutput", "abstract_variables", "apply_network",
    "compute_dtype", "count_parameters", "float32_output", "init_variables", "load_lc0_weights", "make_network",
    "policy_head", "residual_tower"
]
__getattr__, __dir__ = lazy_surface(__name__)
