"""sai-go-gnugo: an SAI network at λ ∈ {0, 0.5, 1} against GNU Go, both colours at komi 9.5, with the margins; as
extensions, games at other komi (``komi_values``) and handicap games (``handicaps``: 1 = Black first at
``handicap_komi``, 2 = two fixed stones), both colours.

``network`` is an SAI run directory (default: the sai-go tiny run).  Margins against weaker opponents, other komi and
handicaps are extensions (the paper could not assess them on 7×7).
"""

from __future__ import annotations

import dataclasses

import ml_collections

from zerolab import SearchChanges, section_dataclass, section_dict


@dataclasses.dataclass(frozen=True, kw_only=True)
class SaiGoGnugoConfig:
    """sai-go-gnugo's keys, their types and the tiny preset's values: :func:`get_config` is built from it and the
    launcher reads its config through it (:func:`read_config`), once, at each hook."""

    seed: int = 0
    network: str = "runs/sai-go-tiny"
    step: int = -1  # -1: the newest checkpoint
    lambdas: list[float] = dataclasses.field(default_factory=lambda: [0.0, 0.5, 1.0])
    gnugo_levels: list[int] = dataclasses.field(default_factory=lambda: [1, 5, 10])
    games: int = 8  # per (λ, level): half with each colour
    komi: float = 9.5
    komi_values: list[float] = dataclasses.field(default_factory=lambda: [5.5, 13.5])  # extension: the same match at these komi
    # extension: 1 = Black first at handicap_komi, n >= 2 = n fixed stones (sai_go.handicap)
    handicaps: list[int] = dataclasses.field(default_factory=lambda: [1, 2])
    handicap_komi: float = 0.5
    search: SearchChanges = SearchChanges.of(num_simulations=16)  # the SAI agents' changes to the run's search
    temperature_plies: int = 4  # the first plies are drawn from the visits: games differ
    max_game_plies: int = 98
    progress: bool = True


def read_config(config: ml_collections.ConfigDict) -> SaiGoGnugoConfig:
    """``config`` typed (:func:`zerolab.section_dataclass`: a ValueError names a key and what it must be)."""
    return section_dataclass(SaiGoGnugoConfig, config, "sai-go-gnugo")


def get_config(preset: str = "tiny"):
    config = ml_collections.ConfigDict(section_dict(SaiGoGnugoConfig()))
    if preset == "tiny":
        return config
    if preset == "paper":
        config.network = "runs/sai-go-paper"
        config.gnugo_levels = [1, 5, 10]
        config.games = 100
        config.search.num_simulations = 250
        return config
    raise KeyError(preset)
