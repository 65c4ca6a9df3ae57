"""SearchAgent's temperature option: moves sampled from the root visits with a self-play schedule, counted from each
game's start; without it (or where the schedule's τ is 0) the agent plays the search's choice."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zerolab.play.search_agents import SearchAgent
from zerolab.games import make_game
from zerolab.networks.network import AlphaZeroResNet, init_variables
from zerolab.search.config import SearchConfig
from zerolab.search.mcts import run_search
from zerolab.selfplay.types import SelfPlayConfig

LANES = 128  # the search visits 2 moves 7:1; 128 samples put the frequencies within 0.016 of the visits


@pytest.fixture(scope="module")
def position():
    """LANES copies of Gardner's start position, a tiny network and a deterministic PUCT search."""
    game = make_game("gardner_chess")
    network = AlphaZeroResNet(num_actions=game.num_actions, channels=4, num_blocks=1)
    variables = init_variables(network, game, jax.random.key(0))
    states = game.batched_init(jnp.broadcast_to(jax.random.key(0), (LANES,)))
    search = SearchConfig(kind="muzero", num_simulations=8, dirichlet_fraction=0.0)
    return game, network, variables, states, search


def test_a_temperature_agent_samples_the_visits_and_plays_the_search_choice_past_its_schedule(position):
    game, network, variables, states, search = position
    # τ 1 for the first full move, then 0 (the search's choice).
    schedule = SelfPlayConfig(temperature_schedule="moves", temperature=1.0, temperature_delay_moves=2,
                              temperature_end=0.0)
    sampling = SearchAgent("sampling", game, network, variables, search, temperature=schedule)
    key = jax.random.key(7)
    search_key, _ = jax.random.split(key)  # the sampling agent searches with the first half of its key
    plain = jax.jit(lambda states: run_search(search, game, network, variables, search_key, states))
    searched = plain(states)
    visits, choice = np.asarray(searched.visit_counts), np.asarray(searched.action)
    expected = visits.mean(axis=0) / visits.sum(axis=1).mean()  # the lanes' visits agree up to PUCT's tie-breaks

    sampled = sampling.select_actions(states, key)  # ply 0: move 1 < delay 2, τ = 1
    frequencies = np.bincount(sampled, minlength=game.num_actions) / LANES
    assert np.abs(frequencies - expected).max() < 0.1
    assert (visits[np.arange(LANES), sampled] > 0).all()
    assert len(np.unique(sampled)) > 1 and (sampled != choice).any()

    later = states.replace(_step_count=jnp.full(LANES, 4, jnp.int32))  # move 2: τ = 0, the search's choice
    np.testing.assert_array_equal(sampling.select_actions(later, key), np.asarray(plain(later).action))


def test_temperature_must_be_a_selfplay_config(position):
    game, network, variables, _, search = position
    with pytest.raises(TypeError, match="temperature must be a zerolab.selfplay.types.SelfPlayConfig"):
        SearchAgent("bad", game, network, variables, search, temperature=0.5)
