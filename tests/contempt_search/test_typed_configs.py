"""The search-contempt launchers read their configs once into typed dataclasses (issue 47): every preset reads (the
agents' search keys as a ``search`` section, :class:`zerolab.SearchChanges`), the τ schedules have a field each, a
value of the wrong type names its key, the schedule reading gives the same answers on the typed config as on the
ConfigDict, and the shared checks refuse a bad search section naming its key."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from contempt_search import TEMPERATURE_SCHEDULES
from experiments.configs import load_config
from zerolab import SearchChanges

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
            value = getattr(typed, field.name)
            if isinstance(value, SearchChanges):  # a search section: the same keys and values
                assert value.to_section() == config[field.name].to_dict(), (preset, field.name)
            else:
                assert value == config[field.name], (preset, field.name)


@pytest.mark.parametrize("name", ["contempt-match", "contempt-selfplay", "contempt-train"])
def test_each_temperature_schedule_has_a_field(name):
    fields = {field.name for field in dataclasses.fields(config_module(name).read_config(load_config(name)))}
    assert set(TEMPERATURE_SCHEDULES) <= fields


@pytest.mark.parametrize("name, key, value, expected", [
    ("contempt-match", "games", "many", "contempt-match.games must be int"),
    ("contempt-match", "tau1", [0.7, "x", 5, 0.1, 0], "contempt-match.tau1 must be list\\[float\\].*item 1"),
    ("contempt-odds", "simulation_counts", [8, "x"], "contempt-odds.simulation_counts must be list\\[int\\]"),
    ("contempt-odds", "search", {"kind": "muzero", "selection": "lc1"}, "contempt-odds.search.selection"),
    ("contempt-match", "search", {"num_simulations": "many"}, "contempt-match.search.num_simulations"),
    ("contempt-selfplay", "search", {"simulations": 8}, "contempt-selfplay.search key 'simulations'.*num_simulations"),
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
def test_schedules_agree_on_typed_and_configdict_configs_and_a_bad_search_names_its_key(name):
    from contempt_search.experiment import temperature_settings
    from experiments.common.contempt import base_run_config, check_contempt_config

    config = load_config(name)
    typed = config_module(name).read_config(config)
    for temperature in ("tau1", "tau2", "0.6"):
        assert temperature_settings(typed, temperature) == temperature_settings(config, temperature)
    assert base_run_config(typed).to_dict() == base_run_config(config).to_dict()
    with pytest.raises(ValueError, match=f"{name}.search.num_simulations must be at least 1, got 0"):
        config_module(name).read_config(load_config(name, "tiny", ["search.num_simulations=0"]))
    with pytest.raises(ValueError, match="did you mean 'search.num_simulations'"):
        load_config(name, "tiny", ["num_simulations=16"])
    with pytest.raises(ValueError, match="selection='lc0' is a PUCT rule: it needs kind='muzero'"):
        check_contempt_config(config_module(name).read_config(
            load_config(name, "tiny", ["search.kind=gumbel", "search.selection=lc0"])))
    section = {**config.search.to_dict(), "dirichlet_fraction": 0.25}  # the arms set root noise themselves
    with pytest.raises(ValueError, match="search.dirichlet_fraction: the experiment sets it for every arm"):
        check_contempt_config(config_module(name).read_config({**config.to_dict(), "search": section}))


def test_contempt_odds_sweeps_simulation_counts_not_a_search_key():
    """Each cell's search.num_simulations is one of ``simulation_counts``; the search section may not name its own."""
    from experiments.configs.contempt_odds import read_config
    from experiments.contempt_odds import arm_search_config, check_config
    from zerolab import SearchConfig

    config = load_config("contempt-odds", "evidence")
    typed = read_config(config)
    searches = [arm_search_config("puct", size, typed, SearchConfig()) for size in typed.simulation_counts]
    assert [(search.num_simulations, search.kind, search.selection) for search in searches] == [
        (64, "muzero", "lc0"), (128, "muzero", "lc0")]
    with pytest.raises(ValueError, match="'num_simulations' .did you mean 'simulation_counts'"):
        load_config("contempt-odds", "tiny", ["num_simulations=[16]"])
    with pytest.raises(ValueError, match="search.num_simulations: contempt-odds searches each cell at one of "
                                         "simulation_counts"):
        check_config({**config.to_dict(), "search": {**config.search.to_dict(), "num_simulations": 16}})
    with pytest.raises(ValueError, match="simulation_counts must be at least 1, got 0"):
        check_config(load_config("contempt-odds", "tiny", ["simulation_counts=[8,0]"]))
