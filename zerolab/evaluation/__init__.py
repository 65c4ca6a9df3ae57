"""Evaluation: Elo ratings, rating a run's checkpoints, plots.

``__all__`` is the layer's declared surface: the names of this layer that a method package may import, from here
(``from zerolab.evaluation import EloBook``) and never from the modules inside (the ones it shares with other methods
come from ``zerolab`` itself). Names resolve lazily (PEP 562, :mod:`zerolab.lazy`): importing one imports only the
module that defines it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_names

__getattr__, __dir__ = lazy_names(__name__, {
    "zerolab.evaluation.elo": ("EloBook",),
    "zerolab.evaluation.rating": ("Contestant", "EvaluationConfig", "rate_contestants"),
})

__all__ = ["Contestant", "EloBook", "EvaluationConfig", "rate_contestants"]

if TYPE_CHECKING:
    from zerolab.evaluation.elo import EloBook
    from zerolab.evaluation.rating import Contestant, EvaluationConfig, rate_contestants
