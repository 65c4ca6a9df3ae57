"""contempt-match (search-contempt, Table 2): the PUCT setting and the search-contempt setting (τ1) whose self-play
(w+l)/d is nearest ``target_ratio``, chosen from a contempt-selfplay run, play each other at equal simulations, each
keeping its temperature schedule.

``tiny``: Gardner chess with the contempt-odds base network, 32 simulations (as contempt-selfplay tiny), 64 games
capped at 100 plies (the issue's 128 games at 64 simulations take about an hour on a 2-core CPU); settings from
``runs/contempt-selfplay``.  ``paper``: 8×8 from a converted maia-1900 run (``network=RUN``), 1000
simulations, 400 games, ``target_ratio`` 1.38 (the ratio the paper matched its two settings at; the default is 1).
``evidence``: search-contempt N_scl 5 (τ1) against the PUCT temperature whose self-play (w+l)/d is nearest
contempt N_scl 5's own (``equal_decisiveness``: the paper's pairing), both from the short self-play measurements in
``runs/contempt-selfplay-tau-lc0`` (``python -m experiments run contempt-selfplay --preset evidence --workdir
runs/contempt-selfplay-tau-lc0 "sc_limits=[5]" 'puct_temperatures=["2.0","4.0","tau2"]' games=64``, constant
τ above 1 included: the τ2 schedule reached only 0.20 against contempt's 1.25 in the first evidence run); 400 games in 8
resumable blocks, capped at 256 plies (pgx's own Gardner limit; the tiny preset's 100-ply cap ended 11 of 64 games as
draws).  The first evidence match (contempt N_scl 1 against PUCT τ2, mctx's PUCT) is in contempt_search/README.md.
``search``: both arms' search, SearchConfig's keys (``search.num_simulations``, ``search.kind``);
``search.selection``: PUCT's rule in both arms, mctx's in the tiny preset, lc0's in the evidence and paper presets.
``puct_temperature`` (``tau1``, ``tau2`` or a constant) and ``sc_limit`` (> 0) choose the settings by hand.
"""

from __future__ import annotations

import dataclasses

import ml_collections

from contempt_search import TEMPERATURE_SCHEDULES, BaseNetworkConfig
from zerolab import SearchChanges, section_dataclass, section_dict


@dataclasses.dataclass(frozen=True, kw_only=True)
class ContemptMatchConfig(BaseNetworkConfig):
    """contempt-match's keys, their types and the tiny preset's values: :func:`get_config` is built from it and the
    launcher reads its config through it (:func:`read_config`), once, at each hook."""

    selfplay_run: str = "runs/contempt-selfplay"  # a contempt-selfplay run directory (its settings.jsonl)
    target_ratio: float = 1.0
    equal_decisiveness: bool = False  # True: PUCT's setting is the one nearest the chosen contempt setting's (w+l)/d
    puct_temperature: str = ""  # "" = chosen from selfplay_run
    sc_limit: int = 0  # 0 = chosen from selfplay_run
    # both arms' search (zerolab.SearchChanges, SearchConfig's keys): its selection is PUCT's rule in both arms,
    # mctx's or lc0's ("lc0": the evidence and paper presets)
    search: SearchChanges = SearchChanges.of(num_simulations=32, kind="muzero", selection="mctx")
    # τ schedules over full moves: (start, delay, decay, end, cutoff), as in contempt-selfplay
    # (contempt_search.TEMPERATURE_SCHEDULES, one field a schedule)
    tau1: list[float] = dataclasses.field(default_factory=lambda: list(TEMPERATURE_SCHEDULES["tau1"]))
    tau2: list[float] = dataclasses.field(default_factory=lambda: list(TEMPERATURE_SCHEDULES["tau2"]))
    games: int = 64
    blocks: int = 1  # the games in this many resumable blocks (pairings in matches.json)
    max_game_plies: int = 100
    progress: bool = True


def read_config(config: ml_collections.ConfigDict) -> ContemptMatchConfig:
    """``config`` typed (:func:`zerolab.section_dataclass`: a ValueError names a key and what it must be)."""
    return section_dataclass(ContemptMatchConfig, config, "contempt-match")


def get_config(preset: str = "tiny"):
    config = ml_collections.ConfigDict(section_dict(ContemptMatchConfig()))
    if preset == "tiny":
        return config
    if preset == "evidence":
        config.search.selection = "lc0"
        config.selfplay_run = "runs/contempt-selfplay-tau-lc0"
        config.sc_limit = 5
        config.equal_decisiveness = True
        config.games = 400
        config.blocks = 8
        config.max_game_plies = 256
        return config
    if preset == "paper":
        config.network = ""
        config.base_config = ""
        config.base_overrides = []
        config.target_ratio = 1.38
        config.search.selection = "lc0"
        config.search.num_simulations = 1000
        config.games = 400
        config.max_game_plies = 512
        return config
    raise KeyError(preset)
