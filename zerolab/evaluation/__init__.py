"""Evaluation: Elo ratings, rating a run's checkpoints, scheduled pairings, plots, and the launchers' shared recipes
(compare runs: :class:`RunComparison`; train then rate: :func:`train_then_rate`).

Method packages and launchers import this layer's names from here (``from zerolab.evaluation import EloBook``), as
listed in ``__all__`` (the rule: :mod:`zerolab`); they resolve lazily (:mod:`zerolab.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zerolab.lazy import lazy_surface

if TYPE_CHECKING:
    from zerolab.evaluation.book import EloBook
    from zerolab.evaluation.elo import score_standard_error
    from zerolab.evaluation.checkpoints import (
        checkpoint_agent, checkpoint_loader, checkpoint_steps, rated_steps, run_statistics,
    )
    from zerolab.evaluation.rating import Contestant, EvaluationConfig, check_game_count, rate_contestants
    from zerolab.evaluation.pairings import Pairing, PairingRecord, play_pairings
    from zerolab.evaluation.plots import new_figure, save_figure
    from zerolab.evaluation.recipes import (
        EloPanel, RatedTraining, RunComparison, TrainedRun, interleaved_steps, train_then_rate,
    )

__all__ = [
    "Contestant", "EloBook", "EloPanel", "EvaluationConfig", "Pairing", "PairingRecord", "RatedTraining",
    "RunComparison", "TrainedRun", "check_game_count", "checkpoint_agent", "checkpoint_loader", "checkpoint_steps",
    "interleaved_steps", "new_figure", "play_pairings", "rate_contestants", "rated_steps", "run_statistics",
    "save_figure", "score_standard_error", "train_then_rate"
]
__getattr__, __dir__ = lazy_surface(__name__)
