"""The SAI experiments' configs, their agents' search sections and the panel score (first covariance-PCA component of
the win-rate matrix)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from experiments.common.sai_go import checked_simulations
from experiments.configs import load_config
from experiments.configs import PRESETS
from experiments.sai_go_panel import panel_scores
from sai_go.agents import SaiAgent
from zerolab import ConfigError, SearchChanges

#: Each launcher's agent search section: its path in the config.
SEARCH_SECTIONS = {"sai-go": "evaluation.search", "sai-go-gnugo": "search", "sai-go-panel": "search",
                   "sai-go-positions": "search", "sai-go-komi": "calibration.search"}


@pytest.mark.parametrize("name", ["sai-go", "sai-go-gnugo", "sai-go-positions", "sai-go-panel"])
def test_every_preset_loads(name):
    for preset in PRESETS:
        config = load_config(name, preset)
        assert config.get("seed") == 0


@pytest.mark.parametrize("name", sorted(SEARCH_SECTIONS))
def test_each_launchers_simulations_are_its_search_sections_and_the_old_key_names_them(name):
    path = SEARCH_SECTIONS[name]
    for preset, simulations in (("tiny", 16), ("paper", 250)):
        section = load_config(name, preset)
        for key in path.split("."):
            section = section[key]
        assert section.to_dict() == {"num_simulations": simulations}, preset
    old = path.removesuffix("search") + "num_simulations"
    with pytest.raises(ConfigError, match=re.escape(f"did you mean '{path}.num_simulations'?")):
        load_config(name, "tiny", [f"{old}=64"])


def test_an_sai_agent_changes_the_runs_puct_by_its_search_section():
    config = load_config("sai-go", "tiny")
    search = SaiAgent.from_run_config(config).search  # the run's simulations and constants, no root noise
    assert (search.kind, search.num_simulations, search.dirichlet_fraction) == ("muzero", 16, 0.0)
    changed = SaiAgent.from_run_config(config, search=SearchChanges.of(num_simulations=3, pb_c_init=2.0)).search
    assert changed == dataclasses.replace(search, num_simulations=3, pb_c_init=2.0)


def test_sais_own_noisy_searches_take_their_simulations_and_refuse_other_keys():
    assert checked_simulations(SearchChanges.of(num_simulations=5), "search") == 5
    with pytest.raises(ValueError, match=r"^calibration\.search\.kind: these searches are SAI's PUCT"):
        checked_simulations(SearchChanges.of(num_simulations=5, kind="gumbel"), "calibration.search")
    with pytest.raises(ValueError, match=r"^search\.num_simulations: missing"):
        checked_simulations(SearchChanges(), "search")


def test_the_panel_score_is_the_first_principal_component():
    rng = np.random.default_rng(0)
    strength = np.linspace(0.0, 1.0, 12)
    # Members: one that everybody beats, two that separate the checkpoints by strength, one pure noise.
    win_rates = np.stack([np.ones(12), strength, 0.5 * strength + 0.1, 0.05 * rng.standard_normal(12)], axis=1)
    weights, scores = panel_scores(win_rates)
    covariance = np.cov(win_rates, rowvar=False)
    values, vectors = np.linalg.eigh(covariance)
    np.testing.assert_allclose(np.abs(weights), np.abs(vectors[:, -1]), atol=1e-8)
    assert weights.sum() > 0 and abs(weights[0]) < 1e-8  # a member nobody differs on gets no weight
    assert np.all(np.diff(scores) > 0)  # stronger checkpoints score higher
    np.testing.assert_allclose(scores, (win_rates - win_rates.mean(0)) @ weights)


def test_sai_go_results_give_each_rating_match_its_score_and_se():
    from experiments import sai_go
    from zerolab.evaluation import score_standard_error

    summary = {"training_wall_s": 120.0, "scores": {
        "iteration-4 vs gnugo:level=1": {"wins": 3, "draws": 0, "losses": 1, "games": 4, "score": 0.75},
        "iteration-4 vs iteration-0": {"wins": 2, "draws": 1, "losses": 1, "games": 4, "score": 0.625},
        "iteration-2 vs gnugo:level=1": {"score": 0.5}}}  # a summary written before W/D/L were kept: left out
    quantities = sai_go.results(summary, None)
    assert sorted(quantities) == ["score_iteration-4_vs_gnugo:level=1", "score_iteration-4_vs_iteration-0",
                                  "training_wall_s"]
    final = quantities["score_iteration-4_vs_iteration-0"]
    assert (final.value, final.error, final.n, final.over) == (0.625, score_standard_error(2, 1, 1), 4, "games")
    assert quantities["training_wall_s"].error is None
