"""contempt-odds (search-contempt, Table 1): an odds-giving network with PUCT and with search-contempt against a fixed
opponent, at several search sizes.

``tiny``: Gardner chess, knight odds, the quickstart's ResNet trained once into ``network`` (when that directory holds
no checkpoint yet), 8 / 32 / 128 simulations, N_scl 5, against Fairy-Stockfish at skill −20, 32 games per cell (the
issue's 16 / 64 / 256 × 64 games take about an hour on a 2-core CPU, over the 20-minute bound: those settings are
``simulation_counts=[16,64,256] games_per_cell=64``).
``simulation_counts``: the search sizes swept, one cell per size and arm: each cell's ``search.num_simulations`` is one
of them (``search`` itself names no ``num_simulations``).
``arms`` picks the arms that play (``puct``, ``contempt``; both by default): a cell keeps its name and key
whichever arms play beside it, so one arm can be added to a run later.
``evidence``: knight odds against Fairy-Stockfish at skill −4, the opponent calibrated so that plain PUCT (lc0's rule,
64 simulations) scores 30–50 % (32 games: 11 W 7 D 14 L, score 0.45; skill −20, the tiny preset's opponent, left no
room: 29/3/0; the calibration runs are in contempt_search/README.md), 64 and 128 simulations, 256 games per cell (the
network giving odds as White in 128, as Black in 128): each cell's score to about ± 0.03 (1 se).  The first evidence
run (knight odds, skill −20, 32 / 64 / 128 simulations, mctx's PUCT) is replayed by ``opponent=fairy-stockfish:skill=-20
"simulation_counts=[32,64,128]" search.selection=mctx``.
The sharper check, the evidence preset against the opponent search-contempt models (``--preset evidence
opponent=self:num_simulations=5,temperature=1``, its own work directory): the same network searching N_scl = 5
simulations with plain PUCT, its move drawn ∝ its root visits, which is what a frozen opponent node of contempt at N_scl
5 plays (its first 5 selections, then draws from them).
``search``: both arms' search (and a ``self:`` opponent's), SearchConfig's keys (``search.kind``);
``search.selection``: PUCT's rule in both arms (contempt's nodes not frozen use it too): mctx's in the tiny preset,
lc0's (the search the paper ran) in the evidence and paper presets.
``paper``: 8×8 chess, queen odds, 100 / 800 / 20,000 nodes, N_scl 28 (unstated in the paper), against Stockfish at
Elo 1350, 200 games per cell; it needs maia-1900 as a zerolab run (``python -m zerolab lc0 convert``), given as
``network=RUN``.
"""

from __future__ import annotations

import dataclasses

import ml_collections

from contempt_search import BaseNetworkConfig
from zerolab import SearchChanges, section_dataclass, section_dict


@dataclasses.dataclass(frozen=True, kw_only=True)
class ContemptOddsConfig(BaseNetworkConfig):
    """contempt-odds' keys, their types and the tiny preset's values: :func:`get_config` is built from it and the
    launcher reads its config through it (:func:`read_config`), once, at each hook."""

    game: str = "gardner_chess"
    odds_piece: str = "knight"
    # the search sizes swept: one cell per size and arm, whose search.num_simulations is that size
    simulation_counts: list[int] = dataclasses.field(default_factory=lambda: [8, 32, 128])
    # which arms play (one arm: 'arms=["contempt"]')
    arms: list[str] = dataclasses.field(default_factory=lambda: ["puct", "contempt"])
    sc_limit: int = 5
    # both arms' search (zerolab.SearchChanges, SearchConfig's keys): PUCT, as lc0 (root noise is off in both arms),
    # with its selection PUCT's rule in both arms, mctx's or lc0's ("lc0": the evidence and paper presets)
    search: SearchChanges = SearchChanges.of(kind="muzero", selection="mctx")
    opponent: str = "fairy-stockfish:skill=-20"  # a UCI engine spec, or self:num_simulations=N,temperature=T
    games_per_cell: int = 32
    max_game_plies: int = 256
    progress: bool = True


def read_config(config: ml_collections.ConfigDict) -> ContemptOddsConfig:
    """``config`` typed (:func:`zerolab.section_dataclass`: a ValueError names a key and what it must be)."""
    return section_dataclass(ContemptOddsConfig, config, "contempt-odds")


def get_config(preset: str = "tiny"):
    config = ml_collections.ConfigDict(section_dict(ContemptOddsConfig()))
    if preset == "tiny":
        return config
    if preset == "evidence":
        config.search.selection = "lc0"
        config.simulation_counts = [64, 128]
        config.games_per_cell = 256
        config.opponent = "fairy-stockfish:skill=-4"
        return config
    if preset == "paper":
        config.network = ""  # a converted maia-1900 run: network=RUN
        config.base_config = ""
        config.base_overrides = []
        config.game = "chess:lc0"  # 8×8 chess with lc0's input planes: maia-1900 cannot play pgx's observation
        config.odds_piece = "queen"
        config.search.selection = "lc0"
        config.simulation_counts = [100, 800, 20_000]
        config.sc_limit = 28
        config.opponent = "stockfish:elo=1350"
        config.games_per_cell = 200
        config.max_game_plies = 512
        return config
    raise KeyError(preset)
