"""Plots of run results: Elo curves with ±2σ bands and training curves, all read from files the runs wrote."""

from __future__ import annotations

import pathlib
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

EloPoint = tuple[float, float, float]  # (x, rating, sigma)


def plot_elo_curves(
    axes,
    series: Mapping[str, Sequence[EloPoint]],
    xlabel: str,
    reference_lines: Mapping[str, tuple[float, float]] | None = None,
) -> None:
    """Draws each series as rating against x with a ±2σ band, and reference players as horizontal lines."""
    for name, points in series.items():
        points = sorted(points)
        xs = [p[0] for p in points]
        ratings = [p[1] for p in points]
        low = [p[1] - 2 * p[2] for p in points]
        high = [p[1] + 2 * p[2] for p in points]
        (line,) = axes.plot(xs, ratings, marker="o", label=name)
        axes.fill_between(xs, low, high, alpha=0.2, color=line.get_color())
    for name, (rating, sigma) in (reference_lines or {}).items():
        axes.axhline(rating, linestyle="--", color="gray")
        axes.axhspan(rating - 2 * sigma, rating + 2 * sigma, color="gray", alpha=0.1)
        axes.annotate(name, (0.01, rating), xycoords=("axes fraction", "data"), fontsize=8, va="bottom")
    axes.set_xlabel(xlabel)
    axes.set_ylabel("Elo (±2σ)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)


def plot_ratings(axes, ratings: Mapping[str, tuple[float, float]], title: str = "") -> None:
    """Every player's rating with its ±2σ interval, strongest at the top (an Elo book's ladder)."""
    ordered = sorted(ratings.items(), key=lambda item: item[1][0])
    positions = range(len(ordered))
    axes.errorbar([rating for _, (rating, _) in ordered], positions,
                  xerr=[2 * sigma for _, (_, sigma) in ordered], fmt="o", capsize=3)
    axes.set_yticks(list(positions), [name for name, _ in ordered], fontsize=8)
    axes.set_xlabel("Elo (±2σ)")
    axes.grid(alpha=0.3, axis="x")
    if title:
        axes.set_title(title, fontsize=9)


def plot_training_curves(axes, records: Sequence[Mapping], keys: Sequence[str] = ("loss", "policy_loss", "value_loss"),
                         ylabel: str = "loss") -> None:
    """The ``keys`` of a run's ``metrics.jsonl`` records against iteration (a key no record has is left out)."""
    iterations = [r["iteration"] for r in records]
    for key in keys:
        values = [r.get(key) for r in records]
        if any(v is not None for v in values):
            axes.plot(iterations, values, label=key)
    axes.set_xlabel("iteration")
    axes.set_ylabel(ylabel)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)


def save_figure(figure, path: str | pathlib.Path) -> pathlib.Path:
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def new_figure(columns: int = 1, width: float = 6.0, height: float = 4.0):
    return plt.subplots(1, columns, figsize=(width * columns, height), squeeze=False)
