"""Search agents: a network with a search, e.g. a training checkpoint (:class:`SearchAgent`), its shared compiled
search (:func:`compiled_search`) and its loading from a run or checkpoint directory (:func:`load_search_agent`, with
the agent spec's options: :mod:`zerolab.play.agent_specs`).
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from typing import Any

import jax
import numpy as np
import pgx

from zerolab.games import Game
from zerolab.games.base import plies_played
from zerolab.networks.network import make_network
from zerolab.training.runs import Components, load_trained_variables
from zerolab.search.mcts import run_search
from zerolab.selfplay.hooks import choose_actions
from zerolab.selfplay.types import SelfPlayConfig
from zerolab.play.agents import Agent, lanes_to_answer


@functools.lru_cache(maxsize=32)
def compiled_search(search_config: Any, game: Game, network: Any, temperature: SelfPlayConfig | None = None):
    """One jitted ``(variables, key, states) -> (actions [B], summary {name: [B]})`` per (search, game, network,
    temperature), shared by agents; the summary is the search rules' (empty for the standard search).

    With ``temperature`` (a :class:`zerolab.selfplay.types.SelfPlayConfig` whose temperature schedule is used), the move is
    sampled from the root visits as in self-play (:func:`zerolab.selfplay.hooks.choose_actions`), at each game's ply
    :func:`zerolab.games.base.plies_played` (plies since its start position); the key is split into a search key and a sampling key.
    Without it the move is the search's choice, from the whole key.
    """

    def search(variables, key, states):
        if temperature is None:
            output = run_search(search_config, game, network, variables, key, states)
            return output.action, output.summary
        search_key, sample_key = jax.random.split(key)
        output = run_search(search_config, game, network, variables, search_key, states)
        action = choose_actions(sample_key, output.visit_counts, output.action, plies_played(states), temperature)
        return action, output.summary

    return jax.jit(search)


class SearchAgent(Agent):
    """A network with a search, e.g. a training checkpoint; ``select_actions`` is one jitted batched search.

    The search rules' per-search statistics (``SearchRules.summary_fn``) are averaged over the positions the agent
    was asked about (``active``, by default those of games still running): :meth:`search_statistics`.

    ``temperature`` (default None: play the search's choice) samples each move from the root visits with a
    self-play temperature schedule (a :class:`zerolab.selfplay.types.SelfPlayConfig`; only its ``temperature*`` fields
    are read), counted from each game's start position: e.g. lc0's schedule over full moves
    (``temperature_schedule="moves"``) for matches between self-play settings.
    """

    def __init__(self, name: str, game: Game, network: Any, variables: Any, search_config: Any,
                 temperature: SelfPlayConfig | None = None):
        if temperature is not None and not isinstance(temperature, SelfPlayConfig):
            raise TypeError(f"temperature must be a zerolab.selfplay.types.SelfPlayConfig or None, "
                            f"got {type(temperature).__name__}")
        self.name = name
        self.game = game
        self.network = network
        self.variables = variables
        self.search_config = search_config
        self.temperature = temperature
        self._search = compiled_search(search_config, game, network, temperature)
        self._statistic_totals: dict[str, float] = {}
        self._searched_positions = 0

    def select_actions(self, states: pgx.State, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        actions, summary = self._search(self.variables, key, states)  # one batched search over every lane
        if summary:
            running = lanes_to_answer(states, active)
            self._searched_positions += int(running.sum())
            for name, values in summary.items():
                total = float(np.asarray(values)[running].sum())
                self._statistic_totals[name] = self._statistic_totals.get(name, 0.0) + total
        return np.asarray(actions)

    def search_statistics(self) -> dict[str, float]:
        """``{name: mean}`` of the search summary over every position searched so far (empty without a summary)."""
        return {name: total / max(self._searched_positions, 1) for name, total in self._statistic_totals.items()}


AGENT_OPTION_KEYS = ("step", "name")
"""A checkpoint agent spec's own keys; its other keys are the search's (:meth:`SearchConfig.with_overrides`)."""


def load_search_agent(path: str | pathlib.Path, options: dict[str, str] | None = None,
                      game: Game | None = None, temperature: SelfPlayConfig | None = None) -> SearchAgent:
    """A :class:`SearchAgent` from a run directory (newest checkpoint, or ``step``) or a checkpoint step directory.

    ``game`` (default: the run's own) is the game the agent plays: the network module is built for it from the run's
    model config, e.g. an AlphaGateau trained on 5×5 Gardner chess playing 8×8 chess (its graph, not its parameters,
    carries the board size).  Agents of one architecture and game share one compiled search.  ``temperature``: see
    :class:`SearchAgent`.
    """
    options = dict(options or {})
    trained = load_trained_variables(path, int(options["step"]) if "step" in options else None)
    components = Components.from_config(trained.config)
    if game is not None and game != components.game:
        components = dataclasses.replace(components, game=game, network=make_network(trained.config.model, game))
    search = components.search.with_overrides(
        {key: value for key, value in options.items() if key not in AGENT_OPTION_KEYS},
        what="agent option", other_keys=AGENT_OPTION_KEYS)
    search.make_rules()  # a wrong rules name or option fails here, with the spec's words, not inside a jitted search
    name = options.get("name", f"{pathlib.Path(path).name}@{trained.step}")
    return SearchAgent(name, components.game, components.network, trained.variables, search, temperature)
