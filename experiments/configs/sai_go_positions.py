"""sai-go-positions (SAI Figs. 2–3): what an SAI network's α and β know.

``network`` is an SAI run directory; ``steps`` its checkpoints to use (empty: every kept step but 0, the untrained
network: the tiny run keeps 2, 4, 6, 7 and 8, five trained networks); ``sections`` the parts to run (margin,
komi_curve, endgames).
"""

from __future__ import annotations

import dataclasses

import ml_collections

from zerolab import SearchChanges, section_dataclass, section_dict


@dataclasses.dataclass(frozen=True, kw_only=True)
class SaiGoPositionsConfig:
    """sai-go-positions' keys, their types and the tiny preset's values: :func:`get_config` is built from it and the
    launcher reads its config through it (:func:`read_config`), once, at each hook."""

    seed: int = 0
    network: str = "runs/sai-go-tiny"
    steps: list[int] = dataclasses.field(default_factory=list)
    search: SearchChanges = SearchChanges.of(num_simulations=16)  # SAI's PUCT with root noise: its simulations only
    heldout_games: int = 64  # self-play games from the empty board (sampled komi, no branches): α vs final margin
    # around the fair komi ⌊α_∅⌋ + ½
    komi_offsets: list[float] = dataclasses.field(default_factory=lambda: [-6.0, -4.0, -2.0, 0.0, 2.0, 4.0, 6.0])
    games_per_komi: int = 64
    endgame_seeds: int = 128  # searches (root noise on) per (endgame, network, λ); five endgames
    sections: list[str] = dataclasses.field(default_factory=lambda: ["margin", "komi_curve", "endgames"])
    lambdas: list[float] = dataclasses.field(default_factory=lambda: [0.0, 0.5, 1.0])
    progress: bool = True


def read_config(config: ml_collections.ConfigDict) -> SaiGoPositionsConfig:
    """``config`` typed (:func:`zerolab.section_dataclass`: a ValueError names a key and what it must be)."""
    return section_dataclass(SaiGoPositionsConfig, config, "sai-go-positions")


def get_config(preset: str = "tiny"):
    config = ml_collections.ConfigDict(section_dict(SaiGoPositionsConfig()))
    if preset == "tiny":
        return config
    if preset == "paper":
        config.network = "runs/sai-go-paper"
        config.search.num_simulations = 250
        config.heldout_games = 1024
        config.games_per_komi = 512
        config.endgame_seeds = 1000
        return config
    raise KeyError(preset)
