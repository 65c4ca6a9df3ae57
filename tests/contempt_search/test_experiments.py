"""The search-contempt experiments' configs build at both presets, and their launchers refuse what they cannot run."""

from __future__ import annotations

import pytest

from zerolab.config import load_config


@pytest.mark.parametrize("preset", ["tiny", "paper"])
def test_contempt_odds_configs_build(preset):
    config = load_config("contempt-odds", preset)
    assert config.sc_limit >= 1 and len(config.simulations) == 3 and config.games_per_cell % 2 == 0
    assert config.kind == "muzero"


def test_the_paper_preset_asks_for_a_converted_maia_run(tmp_path):
    from experiments.contempt_odds import base_network

    with pytest.raises(ValueError, match="network=RUN.*python -m zerolab.lc0 convert"):
        base_network(load_config("contempt-odds", "paper"), tmp_path)
    with pytest.raises(FileNotFoundError, match="no checkpoint there"):
        base_network(load_config("contempt-odds", "paper", [f"network={tmp_path}"]), tmp_path)
