"""sai-go-panel (SAI Table I, Fig. 1): SAI checkpoints rated by a panel — a fixed-komi AlphaZero run (the stand-in
for the paper's 7×7 Leela Zero nets, trained here with the core trainer at komi 9.5 and the same budget as the SAI
run), GNU Go at several levels and a uniformly random player."""

from __future__ import annotations

import dataclasses

import ml_collections

from zerolab import SearchChanges, section_dataclass, section_dict


@dataclasses.dataclass(frozen=True, kw_only=True)
class SaiGoPanelConfig:
    """sai-go-panel's keys, their types and the tiny preset's values: :func:`get_config` is built from it and the
    launcher reads its config through it (:func:`read_config`), once, at each hook."""

    seed: int = 0
    sai_run: str = "runs/sai-go-tiny"
    landmark_run: str = ""  # empty: WORKDIR/landmark, trained here
    landmark_config: str = "sai-go"
    landmark_preset: str = "tiny"  # the preset of landmark_config the landmark run trains at (the SAI run's)
    # AlphaZero, same sizes and search as SAI's tiny run
    landmark_overrides: list[str] = dataclasses.field(default_factory=lambda: ["model.name=resnet", "method="])
    gnugo_levels: list[int] = dataclasses.field(default_factory=lambda: [1, 5, 10])
    random_player: bool = True
    games: int = 8  # per (SAI checkpoint, panel member): SAI plays White at `komi`, as in the paper
    komi: float = 9.5
    # every player's changes to its run's search: the SAI checkpoints' and the landmark checkpoints'
    search: SearchChanges = SearchChanges.of(num_simulations=16)
    temperature_plies: int = 4
    max_game_plies: int = 98
    progress: bool = True


def read_config(config: ml_collections.ConfigDict) -> SaiGoPanelConfig:
    """``config`` typed (:func:`zerolab.section_dataclass`: a ValueError names a key and what it must be)."""
    return section_dataclass(SaiGoPanelConfig, config, "sai-go-panel")


def get_config(preset: str = "tiny"):
    config = ml_collections.ConfigDict(section_dict(SaiGoPanelConfig()))
    if preset == "tiny":
        return config
    if preset == "paper":
        config.sai_run = "runs/sai-go-paper"
        config.landmark_preset = "paper"
        config.games = 100
        config.search.num_simulations = 250
        return config
    raise KeyError(preset)
