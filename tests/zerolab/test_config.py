"""Config loading, overrides and their errors."""

import dataclasses

import pytest

from zerolab.frontends.cli import main, search_overrides
from zerolab.config import (
    ConfigError, apply_overrides, differing_keys, field_value, load_factory, section_dataclass, section_dict, split_spec,
)
from zerolab.search.config import SearchChanges, SearchConfig
from experiments.configs import load_config


def test_overrides_apply_with_types():
    config = load_config("quickstart", "tiny", ["iterations=3", "train.learning_rate=0.01", "search.kind=muzero"])
    assert config.iterations == 3 and config.train.learning_rate == 0.01 and config.search.kind == "muzero"
    config = load_config("quickstart", "tiny", ["train.learning_rate=1"])  # an int where a float is expected
    assert isinstance(config.train.learning_rate, float)


def test_unknown_key_names_the_closest_key_and_lists_its_section_or_every_key():
    with pytest.raises(ConfigError) as error:
        load_config("quickstart", "tiny", ["train.learnig_rate=0.1"])
    message = str(error.value)
    assert "'train.learnig_rate' (did you mean 'train.learning_rate'?); keys in 'train': train.batch_size" in message
    assert "search.num_simulations" not in message  # another section's keys are not listed
    with pytest.raises(ConfigError) as error:
        load_config("quickstart", "tiny", ["trian.batch_size=8"])  # an unknown section: every key, the closest first
    assert "'trian.batch_size' (did you mean 'train.batch_size'?); valid keys: " in str(error.value)
    assert "search.num_simulations" in str(error.value)
    # A top-level key (no section): the closest key as it is, and every key.
    with pytest.raises(ConfigError) as error:
        load_config("quickstart", "tiny", ["iteration=3"])
    message = str(error.value)
    assert message.startswith("unknown config key 'iteration' (did you mean 'iterations'?); valid keys: "), message
    assert "search.num_simulations" in message and "keys in" not in message
    # A key that moved into a deeper section: the key it is now.
    with pytest.raises(ConfigError, match=r"^unknown config key 'evaluation.num_simulations'; did you mean "
                                          r"'evaluation.search.num_simulations'\?$"):
        load_config("quickstart", "tiny", ["evaluation.num_simulations=8"])


def test_wrong_type_names_key_and_value():
    config = load_config("quickstart", "tiny")
    with pytest.raises(ConfigError, match="iterations.*expects int.*'many'"):
        apply_overrides(config, ["iterations=many"])
    with pytest.raises(ConfigError, match="not of the form key=value"):
        apply_overrides(config, ["iterations"])


def test_unknown_config_and_preset():
    with pytest.raises(ConfigError, match="unknown config 'no-such-config'"):
        load_config("no-such-config")
    with pytest.raises(ConfigError, match="no preset 'huge'"):
        load_config("quickstart", "huge")


def test_differing_keys():
    a = load_config("quickstart", "tiny")
    b = load_config("quickstart", "tiny", ["model.channels=7", "iterations=99"])
    assert differing_keys(a, b, ["game.", "model."]) == ["model.channels"]


def test_cli_train_with_unknown_key_exits_with_the_valid_keys(tmp_path, capsys):
    code = main(["train", "--config", "quickstart", "--workdir", str(tmp_path / "run"), "selfplay.num_gamez=4"])
    assert code == 2
    error = capsys.readouterr().err
    assert "unknown config key 'selfplay.num_gamez'" in error and "selfplay.num_games" in error
    assert not (tmp_path / "run").exists()  # nothing was started


@dataclasses.dataclass(frozen=True)
class Section:
    count: int = 1
    scale: float = 1.0
    name: str = "a"
    flag: bool = False
    depth: int | None = None
    options: tuple = ()


def test_one_field_reader_types_config_values_and_text():
    section = section_dataclass(Section, {"count": 3.0, "scale": 2, "depth": None, "options": {"x": 1}}, "part")
    assert section == Section(count=3, scale=2.0, options={"x": 1})
    assert isinstance(section.count, int) and isinstance(section.scale, float)
    text = {"count": "4", "scale": "1e-3", "name": "b", "flag": "True", "depth": "none", "options": "[1, 2]"}
    assert section_dataclass(Section, text, "part") == Section(4, 1e-3, "b", True, None, [1, 2])
    assert field_value("int | None", "7") == 7
    with pytest.raises(ValueError, match=r"unknown part keys \['cuont'\] \(did you mean 'count'\?\); valid keys: \['count', 'depth'"):
        section_dataclass(Section, {"cuont": 1}, "part")
    for key, value in (("count", "many"), ("count", 2.5), ("flag", "yes"), ("name", 3), ("count", True)):
        expected = {"count": "int", "flag": "bool", "name": "str"}[key]
        with pytest.raises(ValueError, match=f"part.{key} must be {expected}, got"):
            section_dataclass(Section, {key: value}, "part")


@dataclasses.dataclass(frozen=True)
class Calibration:
    bins: int = 10
    komi: list[float] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Launcher:
    seed: int = 0
    levels: tuple[int, ...] = ()
    names: list[str | None] = dataclasses.field(default_factory=list)
    calibration: Calibration = Calibration()


def test_sequences_read_each_item_and_sub_sections_read_as_their_own_dataclass():
    config = {"seed": 2, "levels": [1, 5.0], "names": ["a", None], "calibration": {"bins": 4.0, "komi": [5, 7.5]},
              "model": {"channels": 8}}
    launcher = section_dataclass(Launcher, config, "launcher", read_elsewhere=("model",))
    assert launcher == Launcher(2, (1, 5), ["a", None], Calibration(4, [5.0, 7.5]))
    assert type(launcher.levels) is tuple and all(type(level) is int for level in launcher.levels)
    assert all(type(komi) is float for komi in launcher.calibration.komi)
    assert section_dataclass(Launcher, {"levels": "[3, 4]", "calibration": {"komi": "[1]"}}, "launcher") == \
        Launcher(levels=(3, 4), calibration=Calibration(komi=[1.0]))
    with pytest.raises(ValueError, match=r"unknown launcher keys \['model'\]"):
        section_dataclass(Launcher, config, "launcher")
    # a section several readers share: the keys this dataclass has no field for are theirs
    assert section_dataclass(Calibration, {"bins": "3", "komi": [1], "name": "resnet"}, "model", shared=True) == \
        Calibration(3, [1.0])
    with pytest.raises(ValueError, match=r"launcher.levels must be tuple\[int, ...\], got \[1, 2.5\] \(item 1: 2.5\)"):
        section_dataclass(Launcher, {"levels": [1, 2.5]}, "launcher")
    with pytest.raises(ValueError, match=r"launcher.levels must be tuple\[int, ...\], got 3"):
        section_dataclass(Launcher, {"levels": 3}, "launcher")
    with pytest.raises(ValueError, match=r"launcher.calibration.bins must be int, got 'many'"):
        section_dataclass(Launcher, {"calibration": {"bins": "many"}}, "launcher")
    with pytest.raises(ValueError, match=r"unknown launcher.calibration keys \['bin'\] \(did you mean 'bins'\?\)"):
        section_dataclass(Launcher, {"calibration": {"bin": 3}}, "launcher")


@dataclasses.dataclass(frozen=True)
class Agents:
    games: int = 2
    search: SearchChanges = SearchChanges.of(num_simulations=16)


def test_a_search_section_is_read_as_search_changes_and_written_back_as_its_section():
    agents = section_dataclass(Agents, {"search": {"num_simulations": "8", "kind": "muzero",
                                                   "rule_options": {"sc_limit": 5}}}, "match")
    assert agents.search.items == (("kind", "muzero"), ("num_simulations", 8), ("rule_options.sc_limit", 5))
    changed = agents.search.apply(SearchConfig(rules="contempt_search.rules:contempt_rules"))
    assert (changed.kind, changed.num_simulations, dict(changed.rule_options)) == ("muzero", 8, {"sc_limit": 5})
    assert section_dict(agents) == {"games": 2, "search": {"kind": "muzero", "num_simulations": 8,
                                                           "rule_options": {"sc_limit": 5}}}
    assert section_dict(Agents()) == {"games": 2, "search": {"num_simulations": 16}}
    assert section_dict(Launcher()) == dataclasses.asdict(Launcher())  # otherwise as dataclasses.asdict
    assert section_dataclass(Agents, section_dict(agents), "match") == agents
    with pytest.raises(ValueError, match=r"^match.search.num_simulations: expected int, got 'many'$"):
        section_dataclass(Agents, {"search": {"num_simulations": "many"}}, "match")
    with pytest.raises(ValueError, match=r"^match.search.selection must be one of 'mctx', 'lc0', got 'puct'$"):
        section_dataclass(Agents, {"search": {"selection": "puct"}}, "match")
    with pytest.raises(ValueError, match=r"^unknown match.search key 'num_simulation'; did you mean 'num_simulations'"):
        section_dataclass(Agents, {"search": {"num_simulation": 3}}, "match")


def test_any_search_key_may_be_given_in_a_search_section_its_preset_does_not_list():
    config = load_config("quickstart", "tiny", ["evaluation.search.kind=muzero", "evaluation.search.max_depth=4",
                                                "evaluation.search.rule_options.sc_limit=3"])
    assert config.evaluation.search.to_dict() == {"num_simulations": 16, "kind": "muzero", "max_depth": 4,
                                                  "rule_options": {"sc_limit": 3}}
    for wrong in ("evaluation.search.kindd=gumbel", "evaluation.serch.kind=muzero", "evaluation.games.kind=muzero"):
        with pytest.raises(ConfigError, match=f"unknown config key '{wrong.partition('=')[0]}'"):
            load_config("quickstart", "tiny", [wrong])


def test_one_plugin_loader_names_the_key_and_what_is_wrong():
    assert load_factory("zerolab.config:split_spec", "method") is split_spec
    with pytest.raises(ValueError, match="model.name='nowhere.net:f': cannot import nowhere.net"):
        load_factory("nowhere.net:f", "model.name")
    with pytest.raises(ValueError, match="method='zerolab.config' must name a callable as 'package.module:name'"):
        load_factory("zerolab.config", "method")
    with pytest.raises(ValueError, match="module zerolab.config has no callable PRESETS"):
        load_factory("zerolab.config:PRESETS", "search.rules")


def test_one_spec_reader_for_agents_and_engines():
    assert split_spec(" runs/a : step=3 , name = x ,") == ("runs/a", {"step": "3", "name": "x"})
    assert split_spec("stockfish") == ("stockfish", {})
    assert split_spec("/e:option.Move Overhead=0,rules=") == ("/e", {"option.Move Overhead": "0", "rules": ""})
    with pytest.raises(ValueError, match="engine spec 'gnugo:level': 'level' is not key=value"):
        split_spec("gnugo:level", "engine spec")
    with pytest.raises(ValueError, match="agent spec 'a:step=1,step=2': 'step' is given twice"):
        split_spec("a:step=1,step=2")


def test_search_overrides_are_read_once_from_a_command_line():
    assert search_overrides(["search.kind=muzero", "search.rule_options.lam=0.5"], "uci") == {
        "kind": "muzero", "rule_options.lam": "0.5"}
    assert search_overrides(["num_simulations=8"], "--search", prefix="") == {"num_simulations": "8"}
    for item in ("kind=muzero", "search.=3", "search.kind="):
        with pytest.raises(ValueError, match=f"uci: override '{item}' must be search.KEY=VALUE"):
            search_overrides([item], "uci")
