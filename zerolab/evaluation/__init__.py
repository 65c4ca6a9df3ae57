"""Evaluation: Elo ratings, rating a run's checkpoints, plots.

Method packages import this layer's names from here (``from zerolab.evaluation import EloBook``), as listed in
``__all__`` (the rule: :mod:`zerolab`); they resolve lazily (:mod:`zerolab.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_names

__getattr__, __dir__ = lazy_names(__name__, {
    "zerolab.evaluation.book": ("EloBook",),
    "zerolab.evaluation.rating": ("Contestant", "EvaluationConfig", "rate_contestants"),
})

__all__ = ["Contestant", "EloBook", "EvaluationConfig", "rate_contestants"]

if TYPE_CHECKING:
    from zerolab.evaluation.book import EloBook
    from zerolab.evaluation.rating import Contestant, EvaluationConfig, rate_contestants
