"""The score of a head-to-head match (or of several, one a seed) with its standard errors, and the Elo difference it
implies: the statistics of the ``alphagateau-versus`` and ``alphagateau-finetune`` experiments."""

from __future__ import annotations

import math

import numpy as np


def score_statistics(results: list[dict[str, int]]) -> dict[str, float]:
    """Pooled score of the first player over matches ``[{'wins', 'draws', 'losses'}]``, its standard error over the
    games, the standard error between matches (seeds), and the Elo difference of the pooled score (± from its se)."""
    scores = np.concatenate([np.repeat([1.0, 0.5, 0.0], [r["wins"], r["draws"], r["losses"]]) for r in results])
    score = float(scores.mean())
    game_se = float(scores.std(ddof=1) / math.sqrt(len(scores))) if len(scores) > 1 else float("nan")
    per_seed = [(r["wins"] + 0.5 * r["draws"]) / (r["wins"] + r["draws"] + r["losses"]) for r in results]
    seed_se = float(np.std(per_seed, ddof=1) / math.sqrt(len(per_seed))) if len(per_seed) > 1 else float("nan")
    clipped = min(max(score, 1e-3), 1 - 1e-3)
    elo = 400 * math.log10(clipped / (1 - clipped))
    elo_se = 400 / math.log(10) * game_se / (clipped * (1 - clipped))  # delta method
    return {"games": int(len(scores)), "score": score, "score_se": game_se, "seed_scores": per_seed,
            "score_se_between_seeds": seed_se, "elo": elo, "elo_se": elo_se}
