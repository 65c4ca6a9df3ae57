"""Win probabilities as classes: K uniform bins over [0, 1] with midpoint values (the paper's section 2.2).

Bin ``i`` covers ``[i / K, (i + 1) / K)`` (the last bin includes 1.0) and stands for its midpoint
``(i + 0.5) / K``.  A predictor outputs K logits; its win probability is the expectation of the midpoints under
the softmax, and its loss the cross-entropy against the bin of the target.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def bin_edges(num_bins: int) -> np.ndarray:
    """[K + 1] edges ``linspace(0, 1, K + 1)``."""
    if num_bins < 2:
        raise ValueError(f"num_bins must be at least 2, got {num_bins}")
    return np.linspace(0.0, 1.0, num_bins + 1)


def bin_midpoints(num_bins: int) -> np.ndarray:
    """[K] value each bin stands for."""
    edges = bin_edges(num_bins)
    return (edges[:-1] + edges[1:]) / 2


def win_probability_to_bin(win_probability: np.ndarray | float, num_bins: int) -> np.ndarray:
    """[...] int32 bin of each win probability in [0, 1] (values outside are clipped into the end bins)."""
    probability = np.clip(np.asarray(win_probability, dtype=np.float64), 0.0, 1.0)
    return np.minimum((probability * num_bins).astype(np.int64), num_bins - 1).astype(np.int32)


def expected_win_probability(logits: jax.Array) -> jax.Array:
    """[...] expected midpoint under ``softmax(logits)`` for logits [..., K]."""
    num_bins = logits.shape[-1]
    midpoints = jnp.asarray(bin_midpoints(num_bins), dtype=jnp.float32)
    return jax.nn.softmax(logits.astype(jnp.float32), axis=-1) @ midpoints


def expected_win_probability_numpy(logits: np.ndarray) -> np.ndarray:
    """:func:`expected_win_probability` on the host, for logits [..., K] already fetched from the device."""
    logits = np.asarray(logits, dtype=np.float64)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (weights @ bin_midpoints(logits.shape[-1])) / weights.sum(axis=-1)


__all__ = ["bin_edges", "bin_midpoints", "expected_win_probability", "expected_win_probability_numpy",
           "win_probability_to_bin"]
