"""Config loading, overrides and their errors."""

import pytest

from zerolab.frontends.cli import main
from zerolab.config import ConfigError, apply_overrides, differing_keys, load_config


def test_overrides_apply_with_types():
    config = load_config("quickstart", "tiny", ["iterations=3", "train.learning_rate=0.01", "search.kind=muzero"])
    assert config.iterations == 3 and config.train.learning_rate == 0.01 and config.search.kind == "muzero"
    config = load_config("quickstart", "tiny", ["train.learning_rate=1"])  # an int where a float is expected
    assert isinstance(config.train.learning_rate, float)


def test_unknown_key_lists_the_valid_keys():
    with pytest.raises(ConfigError) as error:
        load_config("quickstart", "tiny", ["train.learnig_rate=0.1"])
    message = str(error.value)
    assert "train.learnig_rate" in message and "train.learning_rate" in message and "search.num_simulations" in message


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
