"""The search-contempt launchers read their configs once into typed dataclasses (issue 47): every preset reads, the
τ schedules have a field each, a value of the wrong type names its key, and the shared checks and schedule reading
give the same answers on the typed config as on the ConfigDict."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from contempt_search import TEMPERATURE_SCHEDULES
from experiments.configs import load_config

LAUNCHERS = {"contempt-match": ("tiny", "evidence", "paper"), "contempt-odds": ("tiny", "evidence", "paper"),
             "contempt-selfplay": ("tiny", "evidence", "paper"), "contempt-train": ("tiny", "paper")}


def config_module(name: str):
    return importlib.import_module("experiments.configs." + name.replace("-", "_"))


@pytest.mark.parametrize("name", sorted(LAUNCHERS))
def test_every_preset_reads_into_the_typed_config_with_the_configdicts_values(name):
    module = config_module(name)
    for preset in LAUNCHERS[name]:
        config = load_config(name, preset)
        typed = module.read_config(config)
        for field in dataclasses.fields(typed):
            assert getattr(typed, field.name) == config[field.name], (preset, field.name)


@pytest.mark.parametrize("name", ["contempt-match", "contempt-selfplay", "contempt-train"])
def test_each_temperature_schedule_has_a_field(name):
    fields = {field.name for field in dataclasses.fields(config_module(name).read_config(load_config(name)))}
    assert set(TEMPERATURE_SCHEDULES) <= fields


@pytest.mark.parametrize("name, key, value, expected", [
    ("contempt-match", "games", "many", "contempt-match.games must be int"),
    ("contempt-match", "tau1", [0.7, "x", 5, 0.1, 0], "contempt-match.tau1 must be list\\[float\\].*item 1"),
    ("contempt-odds", "num_simulations", [8, "x"], "contempt-odds.num_simulations must be list\\[int\\]"),
    ("contempt-selfplay", "sc_limits", ["one"], "contempt-selfplay.sc_limits must be list\\[int\\]"),
    ("contempt-train", "sc_limit", "five", "contempt-train.sc_limit must be int"),
])
def test_a_value_of_the_wrong_type_names_its_key(name, key, value, expected):
    values = {**load_config(name).to_dict(), key: value}
    with pytest.raises(ValueError, match=expected):
        config_module(name).read_config(values)


def test_contempt_train_reads_only_its_own_keys():
    from experiments.configs.contempt_train import read_config

    config = load_config("contempt-train", "tiny", ["sc_limit=3", "evaluation.games=8", "seed=4"])
    typed = read_config(config)
    assert (typed.sc_limit, typed.puct_temperature, typed.final_games) == (3, "tau2", 64)
    assert not hasattr(typed, "evaluation") and not hasattr(typed, "seed")


@pytest.mark.parametrize("name", ["contempt-match", "contempt-selfplay"])
def test_schedules_and_shared_checks_agree_on_typed_and_configdict_configs(name):
    from contempt_search.experiment import temperature_settings
    from experiments.common.contempt import base_run_config, check_contempt_config

    config = load_config(name)
    typed = config_module(name).read_config(config)
    for temperature in ("tau1", "tau2", "0.6"):
        assert temperature_settings(typed, temperature) == temperature_settings(config, temperature)
    assert base_run_config(typed).to_dict() == base_run_config(config).to_dict()
    bad = load_config(name, "tiny", ["num_simulations=0"])
    for candidate in (bad, config_module(name).read_config(bad)):
        with pytest.raises(ValueError, match="num_simulations must be at least 1, got 0"):
            check_contempt_config(candidate)
