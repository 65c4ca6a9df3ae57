"""The search-contempt experiments' configs build at both presets, and their launchers refuse what they cannot run."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.configs import load_config


@pytest.mark.parametrize("preset", ["tiny", "paper"])
def test_contempt_selfplay_settings_and_schedules(preset):
    from contempt_search.experiment import temperature_settings
    from experiments.contempt_selfplay import settings

    config = load_config("contempt-selfplay", preset)
    names = [row["name"] for row in settings(config)]
    largest = {"tiny": 16, "paper": 32}[preset]  # every N_scl below the simulations, so each can freeze a node
    assert names == ["contempt1-tau1", "contempt2-tau1", "contempt5-tau1", "contempt10-tau1", f"contempt{largest}-tau1",
                     "puct-tau1", "puct-tau2", "puct-0.3", "puct-0.6", "puct-1.0"]
    assert max(config.sc_limits) < config.search.num_simulations
    assert temperature_settings(config, "tau2") == {"temperature": 0.9, "temperature_delay_moves": 20,
                                                    "temperature_decay_moves": 60, "temperature_end": 0.6,
                                                    "temperature_cutoff_moves": 40}
    from zerolab.selfplay.hooks import move_temperature
    from zerolab.selfplay.types import SelfPlayConfig
    import jax.numpy as jnp

    constant = SelfPlayConfig(temperature_schedule="moves", **temperature_settings(config, "0.6"))
    assert np.allclose(move_temperature(jnp.arange(0, 400, 7), constant), 0.6)


@pytest.mark.parametrize("preset", ["tiny", "paper"])
def test_contempt_odds_configs_build(preset):
    config = load_config("contempt-odds", preset)
    assert config.sc_limit >= 1 and len(config.simulation_counts) == 3 and config.games_per_cell % 2 == 0
    assert config.search.kind == "muzero"


def test_the_contempt_odds_evidence_preset_plays_the_calibrated_opponent_and_tiny_stays_small():
    from experiments.contempt_odds import self_opponent_settings

    evidence = load_config("contempt-odds", "evidence")
    assert (evidence.odds_piece, evidence.opponent, list(evidence.simulation_counts), evidence.games_per_cell) == (
        "knight", "fairy-stockfish:skill=-4", [64, 128], 256)
    tiny = load_config("contempt-odds", "tiny")
    assert (tiny.opponent, list(tiny.simulation_counts), tiny.games_per_cell) == (
        "fairy-stockfish:skill=-20", [8, 32, 128], 32)
    sharper = load_config("contempt-odds", "evidence", ["opponent=self:num_simulations=5,temperature=1"])
    assert self_opponent_settings(sharper.opponent) == (sharper.sc_limit, "1.0")  # the opponent N_scl 5 models


def test_contempt_odds_arms_name_the_cells_and_reject_unknown_arms():
    from experiments.contempt_odds import arm_names

    assert arm_names(load_config("contempt-odds", "tiny")) == ["puct", "contempt5"]
    assert arm_names(load_config("contempt-odds", "tiny", ['arms=["contempt"]', "sc_limit=3"])) == ["contempt3"]
    for arms in ('["contempt", "gumbel"]', "[]", '["puct", "puct"]'):
        with pytest.raises(ValueError, match="arms=.*expected one or both of"):
            arm_names(load_config("contempt-odds", "tiny", [f"arms={arms}"]))


@pytest.mark.parametrize("name", ["contempt-odds", "contempt-selfplay", "contempt-match"])
def test_the_evidence_and_paper_presets_search_with_lc0s_puct_in_both_arms(name):
    """Tiny presets keep mctx's PUCT; evidence and paper presets give lc0's to the PUCT arm and to contempt's (whose
    nodes not frozen select with it), as the search settings the experiment builds from a Gumbel base run."""
    import importlib

    from zerolab.search import SearchConfig

    read_config = importlib.import_module("experiments.configs." + name.replace("-", "_")).read_config
    base = SearchConfig()  # the base network's run searches with Gumbel (the quickstart)
    for preset, selection in (("tiny", "mctx"), ("evidence", "lc0"), ("paper", "lc0")):
        config = load_config(name, preset)
        assert config.search.selection == selection
        if name == "contempt-odds":
            from experiments.contempt_odds import arm_search_config

            searches = [arm_search_config(arm, 32, read_config(config), base) for arm in ("puct", "contempt5")]
        elif name == "contempt-match":
            from experiments.contempt_match import setting_search

            searches = [setting_search({"sc_limit": limit}, read_config(config), base) for limit in (None, 5)]
        else:
            from experiments.contempt_selfplay import setting_selfplay, settings

            searches = [setting_selfplay(read_config(config), base, setting)[0] for setting in settings(config)]
        assert {(search.kind, search.selection) for search in searches} == {("muzero", selection)}
        assert {search.rules for search in searches} == {"", "contempt_search.rules:contempt_rules"}


def test_the_paper_preset_asks_for_a_converted_maia_run(tmp_path):
    from contempt_search.experiment import base_network

    for name in ("contempt-odds", "contempt-selfplay"):
        with pytest.raises(ValueError, match="network=RUN.*python -m zerolab lc0 convert"):
            base_network(load_config(name, "paper"))
        with pytest.raises(FileNotFoundError, match="no checkpoint there"):
            base_network(load_config(name, "paper", [f"network={tmp_path}"]))


def test_the_evidence_match_pairs_contempt5_with_the_equally_decisive_puct_setting():
    evidence = load_config("contempt-match", "evidence")
    assert (evidence.sc_limit, evidence.equal_decisiveness, evidence.games, evidence.search.selection) == (
        5, True, 400, "lc0")
    assert evidence.selfplay_run == "runs/contempt-selfplay-tau-lc0" and not evidence.puct_temperature
    assert not load_config("contempt-match", "tiny").equal_decisiveness


def test_the_paper_presets_of_match_and_train_have_the_paper_settings():
    match = load_config("contempt-match", "paper")
    assert (match.search.num_simulations, match.games, match.target_ratio, match.search.kind) == (
        1000, 400, 1.38, "muzero")
    assert list(match.tau1) == [0.7, 0, 5, 0.1, 0] and list(match.tau2) == [0.9, 20, 60, 0.6, 40]
    assert load_config("contempt-match", "tiny").target_ratio == 1.0
    train = load_config("contempt-train", "paper")
    assert (train.game.name, train.search.kind, train.search.num_simulations) == ("chess", "muzero", 1000)
    assert train.iterations * train.selfplay.num_games == 30_000
    assert (train.puct_temperature, train.contempt_temperature, train.sc_limit) == ("tau2", "tau1", 5)
    assert not train.from_scratch and load_config("contempt-train", "tiny").from_scratch
    assert (train.search.selection, load_config("contempt-train", "tiny").search.selection) == ("lc0", "mctx")


@pytest.mark.parametrize("preset", ["tiny", "paper"])
def test_the_two_training_arms_differ_only_in_selfplay(preset, tmp_path):
    from experiments.contempt_train import arm_config

    overrides = [] if preset == "tiny" else [f"init_from={tmp_path}"]
    if preset == "paper":
        (tmp_path / "config.json").write_text('{"game": {"name": "chess:lc0", "go_size": 7, "komi": 7.5}, '
                                              '"model": {"name": "zerolab.networks.lc0.network:make_lc0"}}')
    config = load_config("contempt-train", preset, overrides)
    puct, contempt = (arm_config(config, arm).to_dict() for arm in ("puct", "contempt"))
    assert contempt["search"].pop("rules") == "contempt_search.rules:contempt_rules"
    assert contempt["search"].pop("rule_options") == {"sc_limit": 5}
    assert (puct["search"].pop("rules"), puct["search"].pop("rule_options")) == ("", {})
    assert (puct["selfplay"]["temperature"], contempt["selfplay"]["temperature"]) == (0.9, 0.7)
    assert (puct["selfplay"]["temperature_end"], contempt["selfplay"]["temperature_end"]) == (0.6, 0.1)
    for arm in (puct, contempt):
        assert arm["selfplay"]["temperature_schedule"] == "moves"
        for key in [key for key in arm["selfplay"] if key.startswith("temperature")]:
            del arm["selfplay"][key]
    assert puct == contempt
    assert puct["search"]["selection"] == {"tiny": "mctx", "paper": "lc0"}[preset]  # both arms: they are equal
    if preset == "paper":
        assert puct["game"]["name"] == "chess:lc0" and puct["init_from"] == str(tmp_path)
        with pytest.raises(ValueError, match="needs init_from=RUN"):
            arm_config(load_config("contempt-train", "paper"), "puct")


def test_match_settings_are_the_selfplay_rows_nearest_the_target_ratio(tmp_path):
    from contempt_search.experiment import append_row, nearest_setting
    from experiments.contempt_match import choose_settings

    rows = [{"name": "contempt1-tau1", "sc_limit": 1, "temperature": "tau1", "ratio": float("inf")},
            {"name": "contempt5-tau1", "sc_limit": 5, "temperature": "tau1", "ratio": 2.5},
            {"name": "contempt10-tau1", "sc_limit": 10, "temperature": "tau1", "ratio": 0.3},
            {"name": "puct-tau1", "sc_limit": None, "temperature": "tau1", "ratio": 0.0},
            {"name": "puct-tau2", "sc_limit": None, "temperature": "tau2", "ratio": 0.8},
            {"name": "puct-1.0", "sc_limit": None, "temperature": "1.0", "ratio": 1.2},
            {"name": "puct-3.0", "sc_limit": None, "temperature": "3.0", "ratio": 2.2}]
    assert nearest_setting(rows[:3], 1.0)["name"] == "contempt5-tau1"  # |log 2.5| < |log 0.3|; ∞ is farthest
    assert nearest_setting(rows[3:], 1.0)["name"] == "puct-1.0"
    assert nearest_setting(rows[3:], 0.7)["name"] == "puct-tau2"
    with pytest.raises(ValueError, match="no setting"):
        nearest_setting(rows[:1] + rows[3:4], 1.0)
    for row in rows:
        append_row(tmp_path / "settings.jsonl", {**row, "ratio_interval": [0, 1]})
    chosen = choose_settings(load_config("contempt-match", "tiny", [f"selfplay_run={tmp_path}"]))
    assert (chosen["puct"]["name"], chosen["contempt"]["name"]) == ("puct-1.0", "contempt5-tau1")
    chosen = choose_settings(load_config("contempt-match", "tiny", [f"selfplay_run={tmp_path}", "sc_limit=2",
                                                                     "puct_temperature=tau2"]))
    assert (chosen["puct"]["temperature"], chosen["contempt"]["sc_limit"]) == ("tau2", 2)
    with pytest.raises(FileNotFoundError, match="run contempt-selfplay"):
        choose_settings(load_config("contempt-match", "tiny", [f"selfplay_run={tmp_path / 'none'}"]))
    # equal decisiveness: PUCT's target is the contempt setting's own (w+l)/d, not target_ratio
    for overrides, expected in ((["sc_limit=5"], ("contempt5-tau1", "puct-3.0")),  # 2.2 nearest 2.5
                                (["sc_limit=10"], ("contempt10-tau1", "puct-tau2")),  # 0.8 nearest 0.3
                                ([], ("contempt5-tau1", "puct-3.0"))):  # contempt chosen by target_ratio 1 first
        chosen = choose_settings(load_config("contempt-match", "tiny", [f"selfplay_run={tmp_path}",
                                                                         "equal_decisiveness=True", *overrides]))
        assert (chosen["contempt"]["name"], chosen["puct"]["name"]) == expected
        assert chosen["contempt"]["selfplay_ratio"] == {"contempt5-tau1": 2.5, "contempt10-tau1": 0.3}[expected[0]]
        assert chosen["puct"]["chosen_by"].startswith(f"(w+l)/d nearest {expected[0]}'s")
    with pytest.raises(FileNotFoundError, match="no row 'contempt2-tau1'"):
        choose_settings(load_config("contempt-match", "tiny", [f"selfplay_run={tmp_path}", "equal_decisiveness=True",
                                                                "sc_limit=2"]))
