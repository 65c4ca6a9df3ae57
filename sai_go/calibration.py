"""How well an SAI network's sigmoid knows the komi: held-out self-play at sampled komi, and the statistics that judge
its predictions against the games' outcomes.

**Held-out games** (:func:`selfplay`): a network's own self-play from the empty board, one game per lane, no
branches, at the agent's λ (sai-go-komi: the training λ, ``calibration.lam``), PUCT with root noise, the first 8
plies drawn from the visits; each game's komi is drawn as in
training (``⌊α_∅ + logit(U)/β_∅⌋ + ½``: the network's own Black winrate at the komi is then about uniform) or fixed.
:func:`first_games` turns a call's frames into :class:`HeldoutGames`: for each game its komi and Black's result,
and for each of its positions the mover's predicted winrate ``σ(β_s(α_s + k̄_s))`` and the mover's result.

**Statistics** (numpy, pure): means with standard errors clustered by game (:func:`cluster_mean_se`: positions of one
game are not independent; with one value per game it is the usual se), the Brier score and log-loss of a prediction
against a komi-blind baseline (the leave-one-game-out frequency of the event, :func:`leave_one_cluster_out_mean`),
paired by value (:func:`compare_scores`), reliability bins (:func:`reliability_bins`), the empirical fair komi (the
komi where Black's observed winrate is ½, by a two-parameter logistic fit: :func:`fit_fair_komi`) and a least-squares
slope for trends (:func:`ols_slope`).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from zerolab import SearchConfig, SelfPlayConfig
from sai_go.search import evaluate
from sai_go.selfplay import SaiSelfPlayOptions, make_sai_play_fn
from sai_go.value import signed_komi, winrate

# ---------------------------------------------------------------------------------------------- held-out self-play


@functools.lru_cache(maxsize=4)
def compiled_selfplay(game, network, num_simulations: int, lam: float = 0.0, pass_rule: str = "free"):
    """Self-play from the empty board, one game per lane (at most 2·N² plies), no branches, at ``lam`` under
    ``pass_rule`` (:class:`~sai_go.selfplay.SaiSelfPlayOptions`); jitted once per λ and rule (the komi of fresh
    games is an argument: NaN samples it as in training)."""
    config = SelfPlayConfig(num_games=1, plies_per_iteration=game.max_game_plies, max_game_plies=game.max_game_plies,
                            temperature_plies=8)
    search = SearchConfig(kind="muzero", num_simulations=num_simulations, dirichlet_alpha=0.03 * 361 / 49)
    options = SaiSelfPlayOptions(lam=float(lam), branch_probability=0.0, pass_rule=pass_rule)
    play = make_sai_play_fn(game, network, search, config, options)
    return jax.jit(lambda variables, key, komi, num_games: play(variables, key, num_games, None, None, komi),
                   static_argnums=3)


def selfplay(agent, num_games: int, key, fresh_komi=None, pass_rule: str = "free"):
    """Frames and records (numpy) of ``num_games`` self-play games of ``agent``'s network (an
    :class:`~sai_go.agents.SaiAgent`; its ``search.num_simulations`` and ``lam``) from the empty board
    (``fresh_komi``: None samples each game's komi as in training), under the self-play ``pass_rule``."""
    play = compiled_selfplay(agent.game, agent.network, agent.search.num_simulations, float(agent.lam), pass_rule)
    return jax.device_get(play(agent.variables, key, jnp.float32(np.nan if fresh_komi is None else fresh_komi),
                               num_games))


def empty_board_value(network, variables, game) -> tuple[float, float]:
    """``(α_∅, β_∅)``: the network's α and β at the empty board (Black to move); α_∅ is its fair komi estimate."""
    empty = game.batched_init(jax.random.key(0)[None])
    _, value = evaluate(network, variables, empty)
    return float(value.alpha[0]), float(value.beta[0])


def black_winrate(alpha: float, beta: float, komi) -> np.ndarray:
    """Black's predicted winrate ``σ(β(α − k))`` at komi ``k`` from the empty board's α, β (Black to move; α, β
    scalars or one per komi)."""
    komi = np.asarray(komi, np.float32)
    return np.asarray(winrate(np.asarray(alpha, np.float32), np.asarray(beta, np.float32),
                              signed_komi(komi, np.ones(komi.shape, bool))), np.float64)


@dataclasses.dataclass(frozen=True)
class HeldoutGames:
    """Games from the empty board and their positions (numpy).

    Attributes:
      komi: [G] each game's komi (to White).
      black_outcome: [G] 1 Black won, 0 Black lost (½ a tie).
      position_predicted: [P] at each position of those games, the mover's predicted winrate σ(β_s(α_s + k̄_s)).
      position_outcome: [P] the mover's result there (1, ½, 0).
      position_game: [P] the index (into ``komi``) of the position's game.
    """

    komi: np.ndarray
    black_outcome: np.ndarray
    position_predicted: np.ndarray
    position_outcome: np.ndarray
    position_game: np.ndarray


def first_games(game_over, value_target, value_mask, alpha, beta, frame_signed_komi, frame_komi) -> HeldoutGames:
    """Each lane's first game (plies 0 .. its first ``game_over``) of a self-play call from the empty board, as
    :class:`HeldoutGames`; a lane whose first game did not end inside the call is left out.

    All arguments are ``[T, B]``: ``value_target`` the mover's final result (±1, 0 a tie) where ``value_mask``,
    ``alpha`` / ``beta`` the network's at each searched root (mover's view), ``frame_signed_komi`` k̄ and
    ``frame_komi`` the game's komi.  Ply 0 is Black's move, so Black's result is the mover's at ply 0.
    """
    game_over, value_mask = np.asarray(game_over, bool), np.asarray(value_mask, bool)
    outcome = (np.asarray(value_target, np.float64) + 1.0) / 2.0
    predicted = np.asarray(winrate(jnp.asarray(alpha), jnp.asarray(beta), jnp.asarray(frame_signed_komi)), np.float64)
    komi, black, positions, position_outcome, position_game = [], [], [], [], []
    for lane in range(game_over.shape[1]):
        ends = np.flatnonzero(game_over[:, lane])
        if len(ends) == 0 or not value_mask[0, lane]:
            continue
        length = int(ends[0]) + 1
        index = len(komi)
        komi.append(float(frame_komi[0, lane]))
        black.append(float(outcome[0, lane]))
        positions.append(predicted[:length, lane])
        position_outcome.append(outcome[:length, lane])
        position_game.append(np.full(length, index))
    concatenate = lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)  # noqa
    return HeldoutGames(np.asarray(komi, np.float64), np.asarray(black, np.float64), concatenate(positions, np.float64),
                        concatenate(position_outcome, np.float64), concatenate(position_game, np.int64))


# ---------------------------------------------------------------------------------------------------- statistics


def cluster_mean_se(values, clusters=None) -> tuple[float, float]:
    """Mean of ``values`` and its standard error, values of one cluster (game) counted as correlated: the
    cluster-robust se ``sqrt(G/(G−1) · Σ_g (Σ_{i∈g} (x_i − x̄))²) / N``; without clusters (or one value per cluster)
    it is ``sd(ddof=1)/√N``.  NaN se with fewer than two clusters."""
    values = np.asarray(values, np.float64)
    if values.size == 0:
        return float("nan"), float("nan")
    clusters = np.arange(values.size) if clusters is None else np.asarray(clusters)
    mean = float(values.mean())
    _, inverse = np.unique(clusters, return_inverse=True)
    sums = np.bincount(inverse, weights=values - mean)
    count = sums.size
    if count < 2:
        return mean, float("nan")
    return mean, float(math.sqrt(count / (count - 1) * np.sum(sums ** 2)) / values.size)


def leave_one_cluster_out_mean(values, clusters) -> np.ndarray:
    """For each value, the mean of the values of every *other* cluster: a komi-blind, out-of-sample base rate."""
    values = np.asarray(values, np.float64)
    _, inverse = np.unique(np.asarray(clusters), return_inverse=True)
    sums, counts = np.bincount(inverse, weights=values), np.bincount(inverse)
    other_counts = values.size - counts[inverse]
    return np.where(other_counts > 0, (values.sum() - sums[inverse]) / np.maximum(other_counts, 1), np.nan)


def brier(predicted, outcome) -> np.ndarray:
    return (np.asarray(predicted, np.float64) - np.asarray(outcome, np.float64)) ** 2


def log_loss(predicted, outcome, floor: float = 1e-6) -> np.ndarray:
    """``−y log p − (1−y) log(1−p)`` (nats), p clipped to ``[floor, 1 − floor]``."""
    p = np.clip(np.asarray(predicted, np.float64), floor, 1.0 - floor)
    y = np.asarray(outcome, np.float64)
    return -(y * np.log(p) + (1.0 - y) * np.log1p(-p))


def compare_scores(predicted, outcome, baseline, clusters=None) -> dict:
    """The Brier score and log-loss of ``predicted`` and of ``baseline`` against ``outcome``, and the differences
    (prediction − baseline: negative means the prediction is better), each ``[mean, se]`` clustered by game; and
    the bias ``mean(predicted − outcome)`` (calibration in the large)."""
    result = {"count": int(np.size(outcome))}
    for name, score in (("brier", brier), ("log_loss", log_loss)):
        own, base = score(predicted, outcome), score(baseline, outcome)
        result[name] = list(cluster_mean_se(own, clusters))
        result[f"baseline_{name}"] = list(cluster_mean_se(base, clusters))
        result[f"{name}_difference"] = list(cluster_mean_se(own - base, clusters))
    result["bias"] = list(cluster_mean_se(np.asarray(predicted, np.float64) - np.asarray(outcome, np.float64),
                                          clusters))
    return result


def reliability_bins(predicted, outcome, clusters=None, bins: int = 5) -> list[dict]:
    """Equal-width bins of the predicted probability over [0, 1]; for each non-empty bin its range, count, number of
    games, mean prediction and observed frequency ``[mean, se]`` (se clustered by game: binomial for one value per
    game)."""
    predicted, outcome = np.asarray(predicted, np.float64), np.asarray(outcome, np.float64)
    clusters = np.arange(predicted.size) if clusters is None else np.asarray(clusters)
    edges = np.linspace(0.0, 1.0, bins + 1)
    index = np.clip(np.digitize(predicted, edges[1:-1]), 0, bins - 1)
    rows = []
    for b in range(bins):
        inside = index == b
        if not inside.any():
            continue
        rows.append({"low": float(edges[b]), "high": float(edges[b + 1]), "count": int(inside.sum()),
                     "games": int(np.unique(clusters[inside]).size),
                     "predicted": float(predicted[inside].mean()),
                     "observed": list(cluster_mean_se(outcome[inside], clusters[inside]))})
    return rows


def fit_fair_komi(komi, black_outcome, iterations: int = 100) -> dict:
    """Maximum-likelihood fit of Black's result to ``σ(b(a − k))`` over games at komi ``k``: ``fair_komi`` a (where
    Black's winrate is ½) and ``slope`` b, each ``[value, se]`` (se from the inverse Fisher information, a's by the
    delta method).  NaN where the fit does not exist (one-sided or separable results, fewer than two komi values)."""
    komi, y = np.asarray(komi, np.float64), np.asarray(black_outcome, np.float64)
    nan = {"fair_komi": [float("nan")] * 2, "slope": [float("nan")] * 2, "games": int(komi.size)}
    if komi.size < 3 or np.unique(komi).size < 2 or y.min() == y.max():
        return nan
    centre, scale = komi.mean(), komi.std()
    x = np.stack([np.ones_like(komi), (komi - centre) / scale], axis=1)  # σ(c0 + c1·z), z standardised
    coefficients = np.zeros(2)
    for _ in range(iterations):
        p = np.exp(-np.logaddexp(0.0, -(x @ coefficients)))  # σ, without overflow
        information = x.T @ (x * (p * (1 - p))[:, None])
        step = np.linalg.solve(information + 1e-12 * np.eye(2), x.T @ (y - p))
        coefficients += step
        if np.max(np.abs(step)) < 1e-10:
            break
    else:
        return nan
    if np.max(np.abs(coefficients)) > 50:  # separation: the likelihood has no maximum
        return nan
    p = np.exp(-np.logaddexp(0.0, -(x @ coefficients)))
    covariance = np.linalg.inv(x.T @ (x * (p * (1 - p))[:, None]))
    c0, c1 = coefficients
    fair = centre - scale * c0 / c1  # c0 + c1 (k − centre)/scale = 0
    gradient = np.array([-scale / c1, scale * c0 / c1 ** 2])
    fair_se = math.sqrt(float(gradient @ covariance @ gradient))
    return {"fair_komi": [float(fair), fair_se], "slope": [float(-c1 / scale), math.sqrt(covariance[1, 1]) / scale],
            "games": int(komi.size)}


def ols_slope(x, y) -> float:
    """Least-squares slope of ``y`` on ``x``."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    centred = x - x.mean()
    return float(np.sum(centred * (y - y.mean())) / np.sum(centred ** 2))


def calibration(games: HeldoutGames, alpha: float, beta: float, bins: int = 5) -> dict:
    """The komi calibration of one network (or of several, their games concatenated with distinct game indices)
    whose empty board gives ``alpha``, ``beta`` (arrays of one value per game when several networks are pooled):

    * ``games``: Black's predicted winrate σ(β_∅(α_∅ − k)) at each game's komi against Black's results
      (:func:`compare_scores` against the leave-one-game-out rate of Black wins, :func:`reliability_bins`);
    * ``positions``: the mover's predicted winrate at every position of those games against the mover's results
      (the same, clustered by game; baseline: the mover's win rate in the other games);
    * ``fair_komi``: :func:`fit_fair_komi` on the games.
    """
    game_index = np.arange(games.komi.size)
    predicted = black_winrate(alpha, beta, games.komi)
    position_baseline = leave_one_cluster_out_mean(games.position_outcome, games.position_game)
    return {
        "games": {**compare_scores(predicted, games.black_outcome,
                                   leave_one_cluster_out_mean(games.black_outcome, game_index)),
                  "bins": reliability_bins(predicted, games.black_outcome, bins=bins)},
        "positions": {**compare_scores(games.position_predicted, games.position_outcome, position_baseline,
                                       games.position_game),
                      "bins": reliability_bins(games.position_predicted, games.position_outcome, games.position_game,
                                               bins)},
        "fair_komi": fit_fair_komi(games.komi, games.black_outcome),
    }


def concatenate(parts: list[HeldoutGames]) -> HeldoutGames:
    """Several networks' games as one :class:`HeldoutGames` (game indices shifted so that they stay distinct)."""
    offsets = np.cumsum([0] + [part.komi.size for part in parts[:-1]])
    return HeldoutGames(np.concatenate([part.komi for part in parts]),
                        np.concatenate([part.black_outcome for part in parts]),
                        np.concatenate([part.position_predicted for part in parts]),
                        np.concatenate([part.position_outcome for part in parts]),
                        np.concatenate([part.position_game + offset for part, offset in zip(parts, offsets)]))
