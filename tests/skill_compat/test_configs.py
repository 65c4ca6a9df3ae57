"""The skill-compat configs are declared once, typed (issue 47): every preset's ConfigDict is its dataclass's values
with the preset's changes, read back into the class whose keys it holds, and a value of the wrong type names its
key."""

from __future__ import annotations

import dataclasses

import pytest

from experiments.configs import load_config
from skill_compat.configs import AttunedConfig, AttunedEvaluationConfig, HbConfig, SttConfig, read_config
from skill_compat.experiment import match_search


@pytest.mark.parametrize("name, preset, cls", [
    ("skill-compat-stt", "tiny", SttConfig), ("skill-compat-stt", "evidence", SttConfig),
    ("skill-compat-stt", "paper", SttConfig), ("skill-compat-hb", "tiny", HbConfig),
    ("skill-compat-hb", "evidence", HbConfig), ("skill-compat-hb", "paper", HbConfig),
    ("skill-compat-attuned", "tiny", AttunedConfig), ("skill-compat-attuned", "paper", AttunedConfig)])
def test_each_preset_reads_back_as_its_typed_config(name, preset, cls):
    config = load_config(name, preset)
    typed = read_config(config)
    assert type(typed) is cls and dataclasses.asdict(typed) == config.to_dict()
    assert read_config(typed) is typed  # shared functions take either
    if preset == "tiny":
        assert dataclasses.asdict(cls()) == config.to_dict()  # the dataclass holds the tiny values


def test_an_attuned_evaluation_in_hb_keeps_stts_expector_keys_and_the_tree_is_the_cores_search():
    """The attuned run's evaluation config (skill_compat_attuned.run: its config less training, the seed kept) reads
    as its own class."""
    config = load_config("skill-compat-attuned", "tiny", ["framework.name=hb", "tree.kind=muzero"])
    evaluation = config.to_dict()
    del evaluation["training"]
    typed = read_config(evaluation)
    assert type(typed) is AttunedEvaluationConfig and typed.framework.name == "hb" and typed.seed == 0
    assert not hasattr(typed.expector, "moves") and dataclasses.asdict(typed) == evaluation
    search = match_search(read_config(config))
    assert (search.kind, search.num_simulations, search.gumbel_scale, search.dirichlet_fraction) == (
        "muzero", 32, 0.0, 0.0)


def test_a_value_of_the_wrong_type_names_its_key():
    config = load_config("skill-compat-hb", "tiny").to_dict()
    config["framework"]["batch_games"] = "many"
    with pytest.raises(ValueError, match=r"skill-compat-hb.framework.batch_games must be int, got 'many'"):
        read_config(config)
    config = load_config("skill-compat-stt", "tiny").to_dict()
    config["plain_chess"]["seniors"] = ["tree", 3]
    with pytest.raises(ValueError, match=r"skill-compat-stt.plain_chess.seniors must be list\[str\]"):
        read_config(config)


@pytest.mark.parametrize("preset", ["tiny", "paper"])
def test_attuned_training_games_end_inside_their_call(preset):
    """Each training game is capped at one call's plies, so a game ends inside the call that began it and its frames
    (a capped game's value target a draw) enter the window that iteration."""
    training = read_config(load_config("skill-compat-attuned", preset)).training
    assert training.max_game_plies == training.plies_per_iteration
