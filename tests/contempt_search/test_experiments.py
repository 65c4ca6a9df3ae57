"""The search-contempt experiments' configs build at both presets, and their launchers refuse what they cannot run."""

from __future__ import annotations

import numpy as np
import pytest

from zerolab.config import load_config


@pytest.mark.parametrize("preset", ["tiny", "paper"])
def test_contempt_selfplay_settings_and_schedules(preset):
    from experiments.contempt_selfplay import settings, temperature_settings

    config = load_config("contempt-selfplay", preset)
    names = [row["name"] for row in settings(config)]
    assert names == ["contempt1-tau1", "contempt2-tau1", "contempt5-tau1", "contempt10-tau1", "contempt32-tau1",
                     "puct-tau1", "puct-tau2", "puct-0.3", "puct-0.6", "puct-1.0"]
    assert temperature_settings(config, "tau2") == {"temperature": 0.9, "temperature_delay_moves": 20,
                                                    "temperature_decay_moves": 60, "temperature_end": 0.6,
                                                    "temperature_cutoff_moves": 40}
    from zerolab.selfplay import SelfPlayConfig, move_temperature
    import jax.numpy as jnp

    constant = SelfPlayConfig(temperature_schedule="moves", **temperature_settings(config, "0.6"))
    assert np.allclose(move_temperature(jnp.arange(0, 400, 7), constant), 0.6)


@pytest.mark.parametrize("preset", ["tiny", "paper"])
def test_contempt_odds_configs_build(preset):
    config = load_config("contempt-odds", preset)
    assert config.sc_limit >= 1 and len(config.simulations) == 3 and config.games_per_cell % 2 == 0
    assert config.kind == "muzero"


def test_the_paper_preset_asks_for_a_converted_maia_run(tmp_path):
    from contempt_search.experiment import base_network

    for name in ("contempt-odds", "contempt-selfplay"):
        with pytest.raises(ValueError, match="network=RUN.*python -m zerolab.lc0 convert"):
            base_network(load_config(name, "paper"))
        with pytest.raises(FileNotFoundError, match="no checkpoint there"):
            base_network(load_config(name, "paper", [f"network={tmp_path}"]))
