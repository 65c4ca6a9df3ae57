"""contempt-selfplay (search-contempt, Figures 2–4): how decisive and how varied self-play is under search-contempt
(N_scl 1, 2, 5, 10, 32 with the τ1 schedule) and under PUCT (τ1, τ2, constant τ 0.3, 0.6, 1).

``tiny``: Gardner chess with the contempt-odds base network, 32 simulations, 64 games per setting (the first game of
each of 64 self-play lanes, capped at 64 plies: a capped game is a draw, and counted), N_scl 1, 2, 5, 10, 16 (at 32
simulations N_scl 32 cannot freeze a node: it would be PUCT-τ1 again).  The issue's 64 simulations and 100 plies take
about 40 minutes on a 2-core CPU, over the 20-minute bound.  ``paper``: 8×8 from a converted maia-1900 run
(``network=RUN``), 1000 simulations, 100 games, N_scl 1, 2, 5, 10, 32.
``evidence``: games capped at 256 plies instead of 64 (pgx's own Gardner limit; at 64, 13–33 of each setting's 64
games were capped and counted as draws, which hid how decisive the settings are), 128 games per setting, for the
settings the tiny run left open: search-contempt at N_scl 1, 5 and 10 against PUCT with τ1 and with τ2 (a setting
takes about 13 minutes on a loaded 2-core CPU).
``search``: every setting's search, SearchConfig's keys (``search.num_simulations``, ``search.kind``).
``search.selection``: PUCT's rule in every setting (contempt's nodes not frozen use it too), mctx's in the tiny preset,
lc0's (the search the paper ran) in the evidence and paper presets; the evidence rows reported in
contempt_search/README.md were played with mctx's rule (``search.selection=mctx`` replays them).
"""

from __future__ import annotations

import dataclasses

import ml_collections

from contempt_search import TEMPERATURE_SCHEDULES, BaseNetworkConfig
from zerolab import SearchChanges, section_dataclass, section_dict


@dataclasses.dataclass(frozen=True, kw_only=True)
class ContemptSelfplayConfig(BaseNetworkConfig):
    """contempt-selfplay's keys, their types and the tiny preset's values: :func:`get_config` is built from it and the
    launcher reads its config through it (:func:`read_config`), once, at each hook."""

    # every setting's search (zerolab.SearchChanges, SearchConfig's keys): its selection is PUCT's rule in every
    # setting, mctx's or lc0's ("lc0": the evidence and paper presets)
    search: SearchChanges = SearchChanges.of(num_simulations=32, kind="muzero", selection="mctx")
    sc_limits: list[int] = dataclasses.field(default_factory=lambda: [1, 2, 5, 10, 16])
    # a schedule's name or a constant τ
    puct_temperatures: list[str] = dataclasses.field(default_factory=lambda: ["tau1", "tau2", "0.3", "0.6", "1.0"])
    # τ schedules over full moves: (start, delay, decay, end, cutoff), zerolab.selfplay.types.SelfPlayConfig's fields
    # (contempt_search.TEMPERATURE_SCHEDULES, one field a schedule)
    tau1: list[float] = dataclasses.field(default_factory=lambda: list(TEMPERATURE_SCHEDULES["tau1"]))
    tau2: list[float] = dataclasses.field(default_factory=lambda: list(TEMPERATURE_SCHEDULES["tau2"]))
    games: int = 64
    max_game_plies: int = 64
    repeat_moves: int = 40
    bootstrap_resamples: int = 2000
    progress: bool = True


def read_config(config: ml_collections.ConfigDict) -> ContemptSelfplayConfig:
    """``config`` typed (:func:`zerolab.section_dataclass`: a ValueError names a key and what it must be)."""
    return section_dataclass(ContemptSelfplayConfig, config, "contempt-selfplay")


def get_config(preset: str = "tiny"):
    config = ml_collections.ConfigDict(section_dict(ContemptSelfplayConfig()))
    if preset == "tiny":
        return config
    if preset == "evidence":
        config.search.selection = "lc0"
        config.network = "runs/contempt-base"
        config.games = 128
        config.max_game_plies = 256
        config.sc_limits = [1, 5, 10]
        config.puct_temperatures = ["tau1", "tau2"]
        return config
    if preset == "paper":
        config.network = ""
        config.base_config = ""
        config.base_overrides = []
        config.search.num_simulations = 1000
        config.search.selection = "lc0"
        config.sc_limits = [1, 2, 5, 10, 32]
        config.games = 100
        config.max_game_plies = 512
        return config
    raise KeyError(preset)
