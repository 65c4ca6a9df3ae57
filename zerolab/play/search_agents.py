"""Search agents: a network with a search, e.g. a training checkpoint (:class:`SearchAgent`), its shared compiled
search (:func:`compiled_search`), its building from a run's config (:func:`make_search_agent`: with the run's
variables, or abstract ones for a cost plan) and its loading from a run or checkpoint directory
(:func:`load_search_agent`, with the agent spec's options: :mod:`zerolab.play.agent_specs`).

An experiment declares its agents once: ``run`` builds them on loaded variables and ``programs`` (its plan) on
abstract ones, and the plan compiles each agent's own jitted search (:meth:`SearchAgent.planned_program`).
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
import pgx

from zerolab.config import field_value
from zerolab.games import Game
from zerolab.games.base import plies_played
from zerolab.networks.network import abstract_variables, make_network
from zerolab.training.program_cost import PlannedProgram, abstract_states, compile_cost, evaluation_flops
from zerolab.training.runs import Components
from zerolab.training.trained_variables import load_trained_variables
from zerolab.search.config import SearchChanges, SearchConfig
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

    def with_search(self, search: SearchConfig, name: str | None = None,
                    temperature: SelfPlayConfig | None = None) -> SearchAgent:
        """The same network and variables searching with ``search`` (a :class:`~zerolab.search.SearchConfig`, e.g.
        ``dataclasses.replace(agent.search_config, ...)``; text from a spec goes through
        :meth:`~zerolab.search.SearchConfig.with_overrides` first), named ``name`` (default: this agent's), with
        ``temperature`` (default None: the search's choice).  Fresh search statistics."""
        if not isinstance(search, SearchConfig):
            raise TypeError(f"with_search takes a SearchConfig, got {type(search).__name__} (text options: "
                            "agent.search_config.with_overrides(options) first)")
        search.make_rules()  # a wrong rules name or option fails here, not inside a jitted search
        return SearchAgent(name or self.name, self.game, self.network, self.variables, search, temperature)

    def planned_program(self, batch: int, calls: int, what: str = "", name: str = "") -> PlannedProgram:
        """This agent's own jitted search of ``batch`` positions (:func:`compiled_search`), compiled over abstract
        states, called ``calls`` times and named ``name`` (default ``<agent> search``): its device memory and compile
        time from XLA, its FLOPs those of its network evaluations (:meth:`zerolab.training.PlannedProgram.search`).
        The variables may be abstract (:func:`make_search_agent` without variables)."""
        search = self.search_config
        lowered = self._search.lower(self.variables, jax.random.key(0), abstract_states(self.game, batch))
        sampled = "" if self.temperature is None else ", moves sampled from the visits"
        return PlannedProgram.search(compile_cost(name or f"{self.name} search", lowered), calls,
                                     what or f"one move of {batch} games: {search.kind} ({search.selection}) "
                                     f"{search.num_simulations} simulations{sampled}",
                                     evaluation_flops(self.game, self.network, self.variables, batch),
                                     search.num_simulations)


AGENT_OPTION_KEYS = ("step", "name")
"""A checkpoint agent spec's own keys; its other keys are the search's (:meth:`SearchConfig.with_overrides`)."""


def make_search_agent(run_config: Any, variables: Any = None, options: Mapping[str, Any] | None = None,
                      game: Game | None = None, temperature: SelfPlayConfig | None = None,
                      name: str = "agent", search: SearchChanges | None = None) -> SearchAgent:
    """A :class:`SearchAgent` of a run's config (``config.json``): its network and search, changed by ``search`` (an
    agent's search section, :class:`~zerolab.search.config.SearchChanges`), then by ``options``
    (an agent spec's text, or typed values: :meth:`SearchConfig.with_overrides`; ``name`` names it; ``step`` is the
    loader's), playing ``game`` (default: the run's own; the
    network module is built for it from the run's model config, e.g. an AlphaGateau trained on 5×5 Gardner chess
    playing 8×8 chess: its graph, not its parameters, carries the board size).

    ``variables`` None gives abstract ones (:func:`zerolab.networks.abstract_variables`): an agent for a cost plan,
    whose :meth:`SearchAgent.planned_program` compiles the search a run of the same config plays with.
    """
    options = dict(options or {})
    components = Components.from_config(run_config)
    if game is not None and game != components.game:
        components = dataclasses.replace(components, game=game, network=make_network(run_config.model, game))
    if variables is None:
        variables = abstract_variables(components.network, components.game)
    agent_search = (components.search if search is None else search.apply(components.search)).with_overrides(
        {key: value for key, value in options.items() if key not in AGENT_OPTION_KEYS},
        what="agent option", other_keys=AGENT_OPTION_KEYS)
    agent_search.make_rules()  # a wrong rules name or option fails here, with the spec's words, not in a jitted search
    return SearchAgent(options.get("name", name), components.game, components.network, variables, agent_search,
                       temperature)


def load_search_agent(path: str | pathlib.Path, options: Mapping[str, Any] | None = None,
                      game: Game | None = None, temperature: SelfPlayConfig | None = None,
                      search: SearchChanges | None = None) -> SearchAgent:
    """A :class:`SearchAgent` from a run directory (newest checkpoint, or ``step``) or a checkpoint step directory:
    :func:`make_search_agent` of its config and variables, named ``<directory>@<step>`` unless ``options`` name it.
    Agents of one architecture and game share one compiled search.  ``temperature``: see :class:`SearchAgent`.
    """
    options = dict(options or {})
    trained = load_trained_variables(path, field_value("int", options["step"]) if "step" in options else None)
    return make_search_agent(trained.config, trained.variables, options, game, temperature,
                             name=f"{pathlib.Path(path).name}@{trained.step}", search=search)
