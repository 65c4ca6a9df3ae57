"""contempt-odds end to end at toy sizes through ``python -m experiments run``'s entry point (in this process): an
untrained Gardner network gives knight odds to Fairy-Stockfish with PUCT and with search-contempt, at 4 simulations
(N_scl 1), 2 games per cell; the summary's cells, the games' PGN and the figure are checked, and a rerun plays nothing
again; and one cell's score, from scripted games that end in mate with the network on either side."""

from __future__ import annotations

import json
import math
import types

import jax
import ml_collections
import pytest

from zerolab.search import SearchChanges, SearchConfig

from experiments.__main__ import main
from zerolab.training import train
from experiments.configs import load_config


@pytest.mark.slow  # 42 s with a cold compilation cache on a shared 2-core machine, 10 s warm
def test_contempt_odds_plays_both_arms_with_odds_and_a_rerun_plays_nothing(tmp_path, fairy_stockfish_path, capsys):
    del fairy_stockfish_path  # the default opponent, fairy-stockfish:skill=-20 (found by name; missing: a failure)
    network = tmp_path / "base"
    train.run(load_config("quickstart", "tiny", ["model.name=resnet", "model.channels=4", "model.num_blocks=1",
                                                  "iterations=0", "progress=False"]), network)
    command = ["run", "contempt-odds", "--workdir", str(tmp_path / "odds"), f"network={network}",
               "simulation_counts=[4]", "sc_limit=1", "games_per_cell=2", "max_game_plies=6", "progress=False"]
    capsys.readouterr()
    assert main(command) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["network"] == str(network) and summary["settings"]["odds_piece"] == "knight"
    cells = {cell["arm"]: cell for cell in summary["cells"]}
    assert set(cells) == {"puct", "contempt1"}
    for arm, cell in cells.items():
        assert cell["simulations"] == 4 and cell["games"] == 2, arm
        assert cell["wins"] + cell["draws"] + cell["losses"] == 2 and cell["capped_games"] <= cell["draws"]
        assert cell["win_interval"][0] <= cell["win_percent"] <= cell["win_interval"][1]
        assert cell["engine_fallback_moves"] == 0  # the engine chose every one of its moves
    assert cells["contempt1"]["sampled_visit_fraction"] > 0 and "sampled_visit_fraction" not in cells["puct"]
    for arm in ("puct-4", "contempt1-4"):  # half the games from each side's odds opening (no knight on b1 or b5)
        pgn = (tmp_path / "odds" / "games" / f"{arm}.pgn").read_text()
        assert pgn.count("[Result ") == 2 and pgn.count("[FEN ") == 2
    assert (tmp_path / "odds" / "figures" / "contempt-odds.png").stat().st_size > 0
    quantities = json.loads((tmp_path / "odds" / "results.json").read_text())["quantities"]
    assert set(quantities) == {"puct_win_4", "contempt_win_4", "difference_win_points_4", "difference_score_4"}
    difference = quantities["difference_win_points_4"]
    assert difference["value"] == cells["contempt1"]["win_percent"] - cells["puct"]["win_percent"]
    assert (difference["n"], difference["paired"], difference["error_kind"]) == (4, False, "se")
    records_file = tmp_path / "odds" / "matches.json"
    assert list(json.loads(records_file.read_text())["matches"]) == ["puct-4", "contempt1-4"]
    before = records_file.stat().st_mtime_ns
    assert main(command) == 0  # every cell on file: nothing played again
    assert records_file.stat().st_mtime_ns == before
    assert json.loads(capsys.readouterr().out)["cells"] == summary["cells"]


# The network's side mates from both odds openings (helpmates found with pyffish): as White without its knight on b1
# in 7 plies, as Black without its knight on b5 in 6 plies (a promotion each time).
NETWORK_MOVES = {"white": ["a2a3", "c2c3", "a3b4", "b4c5q"], "black": ["a4a3", "a3b2", "b2c1q"]}
ENGINE_MOVES = {"white": ["b2b3", "c1b2", "d1c1"], "black": ["b4b3", "c5b4", "d5c5"]}


def test_a_cell_scores_its_games_from_the_networks_side_with_either_colour(gardner_game, monkeypatch):
    """The network mates the engine as White and as Black: two wins (a game as Black is scored from the network's
    side, 1 minus the first mover's score), in the real arena from the real odds openings, pgx refereeing."""
    from experiments import contempt_odds
    from tests.zerolab.test_arena import ScriptedAgent

    class Network(ScriptedAgent):
        search_config = types.SimpleNamespace(num_simulations=4)

        def search_statistics(self):
            return {}

    class Engine(ScriptedAgent):
        fallback_moves = 0

        def close(self):
            pass

    config = types.SimpleNamespace(games_per_cell=2, seed=0, progress=False, max_game_plies=12, odds_piece="knight")
    network = Network("puct-4", gardner_game, NETWORK_MOVES["white"], NETWORK_MOVES["black"])
    engine = Engine("engine", gardner_game, ENGINE_MOVES["white"], ENGINE_MOVES["black"])
    match = contempt_odds.play_cell(gardner_game, network, engine, config, jax.random.key(0))
    as_white, as_black = match.games
    assert (as_white.first_player, as_white.first_player_score, len(as_white.moves)) == ("puct-4", 1.0, 7)
    assert (as_black.first_player, as_black.first_player_score, len(as_black.moves)) == ("engine", 0.0, 6)
    result = match.result
    assert (result.players, result.wins, result.draws, result.losses) == (("puct-4", "engine"), 2, 0, 0)


def test_self_opponent_specs_parse_and_bad_ones_are_refused():
    from experiments.contempt_odds import self_opponent_settings

    assert self_opponent_settings("fairy-stockfish:skill=-20") is None  # an engine spec: not the network
    assert self_opponent_settings("self:num_simulations=5") == (5, "1.0")
    assert self_opponent_settings("self:num_simulations=4,temperature=0.5") == (4, "0.5")
    for spec in ("self", "self:num_simulations=0", "self:num_simulations=5,temperature=0", "self:num_simulations=five",
                 "self:num_simulations=5,tau=1"):
        with pytest.raises(ValueError, match="opponent="):
            self_opponent_settings(spec)
    with pytest.raises(ValueError, match="the key is num_simulations .as the search's., not simulations"):
        self_opponent_settings("self:simulations=5")  # one name for the count, the search's


def test_the_self_opponent_is_the_network_with_plain_puct_sampling_its_visits(gardner_game, monkeypatch):
    """``self:num_simulations=5,temperature=1`` is the cell's own network searching 5 simulations with the plain rules
    and the experiment's PUCT rule, root noise off, every move drawn ∝ visits (τ 1 at every ply): the opponent that
    search-contempt's frozen nodes model at N_scl 5.  An engine spec still gives the engine."""
    import jax.numpy as jnp
    import numpy as np

    from contempt_search.experiment import PLAIN_RULES
    from experiments import contempt_odds
    from zerolab.play.search_agents import SearchAgent
    from zerolab.selfplay.hooks import move_temperature

    base = SearchAgent("base", gardner_game, "network", "variables",
                       SearchConfig(dirichlet_fraction=0.25))  # the run's own search, noise on
    monkeypatch.setattr(contempt_odds, "EngineAgent", lambda spec, game, seed: ("engine", spec, seed))
    config = types.SimpleNamespace(search=SearchChanges.of(kind="muzero", selection="lc0"), seed=3, sc_limit=5)
    spec = "self:num_simulations=5,temperature=1"
    opponent = contempt_odds.opponent_agent(spec, base, config)
    search = opponent.search_config
    assert opponent.name == spec and (opponent.network, opponent.variables) == ("network", "variables")
    assert (search.num_simulations, search.kind, search.selection, search.rules) == (5, "muzero", "lc0", PLAIN_RULES)
    assert search.dirichlet_fraction == 0.0 and search.gumbel_scale == 0.0
    assert np.allclose(move_temperature(jnp.arange(0, 300, 7), opponent.temperature), 1.0)
    assert contempt_odds.opponent_agent("fairy-stockfish:skill=0", base, config) == (
        "engine", "fairy-stockfish:skill=0", 3)
    arm = contempt_odds.arm_agent(base, "contempt5", 64, config)
    assert arm.temperature is None and arm.search_config.rules != PLAIN_RULES  # the arms still play their choice


def test_the_headline_differences_carry_both_cells_errors():
    """The skill −4 evidence cells (contempt_search/README): win % se √(p(1 − p)/n) per cell, and contempt − PUCT with
    √(se₁² + se₂²) over both cells' 512 games: −0.4 ± 4.3 win points, −0.004 ± 0.041 in score."""
    from experiments.contempt_odds import results

    cells = [{"arm": "puct", "simulations": 64, "games": 256, "wins": 96, "draws": 34, "losses": 126},
             {"arm": "contempt5", "simulations": 64, "games": 256, "wins": 95, "draws": 34, "losses": 127}]
    for cell in cells:
        cell.update(win_percent=100 * cell["wins"] / 256, score=(cell["wins"] + cell["draws"] / 2) / 256)
    config = ml_collections.ConfigDict({"odds_piece": "knight", "opponent": "fairy-stockfish:skill=-4",
                                        "sc_limit": 5})
    quantities = results({"cells": cells}, config)
    puct_se, contempt_se = (100 * math.sqrt(p * (1 - p) / 256) for p in (96 / 256, 95 / 256))
    assert quantities["puct_win_64"].error == pytest.approx(puct_se)
    points = quantities["difference_win_points_64"]
    assert points.value == pytest.approx(-100 / 256) and points.error == pytest.approx(math.hypot(puct_se, contempt_se))
    assert round(points.error, 1) == 4.3 and points.n == 512 and points.format().startswith("-0.4 ± 4.3 win points")
    assert round(quantities["difference_score_64"].error, 3) == 0.041
