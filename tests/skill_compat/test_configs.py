"""The skill-compat configs are declared once, typed (issue 47): every preset's ConfigDict is its dataclass's values
with the preset's changes, read back into the class its launcher names, each search a ``search`` section of the
core's keys (``tree.search``, ``training.search``), and a value of the wrong type names its key."""

from __future__ import annotations

import pytest

from experiments.configs import load_config
from skill_compat.configs import AttunedConfig, AttunedEvaluationConfig, HbConfig, SttConfig, read_config
from skill_compat.experiment import check_config, match_search
from zerolab import SearchChanges, section_dict


@pytest.mark.parametrize("name, preset, cls", [
    ("skill-compat-stt", "tiny", SttConfig), ("skill-compat-stt", "evidence", SttConfig),
    ("skill-compat-stt", "paper", SttConfig), ("skill-compat-hb", "tiny", HbConfig),
    ("skill-compat-hb", "evidence", HbConfig), ("skill-compat-hb", "paper", HbConfig),
    ("skill-compat-attuned", "tiny", AttunedConfig), ("skill-compat-attuned", "paper", AttunedConfig)])
def test_each_preset_reads_back_as_its_typed_config(name, preset, cls):
    config = load_config(name, preset)
    typed = read_config(config, cls)
    assert type(typed) is cls and section_dict(typed) == config.to_dict()
    assert isinstance(typed.tree.search, SearchChanges)
    if preset == "tiny":
        assert section_dict(cls()) == config.to_dict()  # the dataclass holds the tiny values


@pytest.mark.parametrize("name, cls", [("skill-compat-stt", SttConfig), ("skill-compat-hb", HbConfig),
                                       ("skill-compat-attuned", AttunedConfig)])
def test_the_tree_senior_searches_with_tree_search(name, cls):
    """The tree's search keys are ``tree.search.*`` (the core's names) at every preset: tiny Gumbel at 32 simulations,
    paper PUCT at 1,500; the old ``tree.num_simulations`` is refused, naming the new key."""
    tiny, paper = (match_search(read_config(load_config(name, preset), cls)) for preset in ("tiny", "paper"))
    assert (tiny.kind, tiny.num_simulations, tiny.max_num_considered_actions) == ("gumbel", 32, 16)
    assert (paper.kind, paper.num_simulations) == ("muzero", 1500)
    with pytest.raises(ValueError, match=r"did you mean 'tree.search.num_simulations'"):
        load_config(name, "tiny", ["tree.num_simulations=64"])


def test_a_bad_tree_search_value_names_its_key():
    config = load_config("skill-compat-stt", "tiny", ["tree.search.num_simulations=0"])
    with pytest.raises(ValueError, match=r"skill-compat-stt.tree.search.num_simulations must be at least 1, got 0"):
        read_config(config, SttConfig)
    config = load_config("skill-compat-hb", "tiny").to_dict()
    config["tree"]["search"]["selection"] = "lc0"  # PUCT's rule under Gumbel: refused where the keys meet
    with pytest.raises(ValueError, match=r"^tree.search selection='lc0' is a PUCT rule"):
        check_config(read_config(config, HbConfig))


def test_an_attuned_evaluation_in_hb_keeps_stts_expector_keys_and_the_tree_is_the_cores_search():
    """The attuned run's evaluation config (skill_compat_attuned.run: its config less training, the seed kept) reads
    as its own class."""
    config = load_config("skill-compat-attuned", "tiny", ["framework.name=hb", "tree.search.kind=muzero"])
    evaluation = config.to_dict()
    del evaluation["training"]
    typed = read_config(evaluation, AttunedEvaluationConfig)
    assert type(typed) is AttunedEvaluationConfig and typed.framework.name == "hb" and typed.seed == 0
    assert not hasattr(typed.expector, "moves") and section_dict(typed) == evaluation
    search = match_search(read_config(config, AttunedConfig))
    assert (search.kind, search.num_simulations, search.gumbel_scale, search.dirichlet_fraction) == (
        "muzero", 32, 0.0, 0.0)


def test_a_value_of_the_wrong_type_names_its_key():
    config = load_config("skill-compat-hb", "tiny").to_dict()
    config["framework"]["batch_games"] = "many"
    with pytest.raises(ValueError, match=r"skill-compat-hb.framework.batch_games must be int, got 'many'"):
        read_config(config, HbConfig)
    config = load_config("skill-compat-stt", "tiny").to_dict()
    config["plain_chess"]["seniors"] = ["tree", 3]
    with pytest.raises(ValueError, match=r"skill-compat-stt.plain_chess.seniors must be list\[str\]"):
        read_config(config, SttConfig)


@pytest.mark.parametrize("preset", ["tiny", "paper"])
def test_attuned_training_games_end_inside_their_call(preset):
    """Each training game is capped at one call's plies, so a game ends inside the call that began it and its frames
    (a capped game's value target a draw) enter the window that iteration."""
    training = read_config(load_config("skill-compat-attuned", preset), AttunedConfig).training
    assert training.max_game_plies == training.plies_per_iteration


def test_attuned_training_searches_with_training_search():
    """The attuned run's self-play simulations are ``training.search.num_simulations``; the old key is refused."""
    for preset, simulations in (("tiny", 16), ("paper", 1500)):
        training = read_config(load_config("skill-compat-attuned", preset), AttunedConfig).training
        assert training.search == SearchChanges.of(num_simulations=simulations)
    with pytest.raises(ValueError, match=r"did you mean 'training.search.num_simulations'"):
        load_config("skill-compat-attuned", "tiny", ["training.num_simulations=64"])
