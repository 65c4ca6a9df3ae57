"""SAI agents: an SAI network with its λ search, playing each game at its own komi; GNU Go comes from the core.

:class:`SaiAgent` is a core ``Agent`` (``select_actions(states, key, active)``), so the core's arena and GTP server
play it.  Its moves are never a positional-superko repetition (pgx allows such a move and ends the game
with it lost): each candidate is tried on pgx first, and the most visited safe move is played.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pgx

from zerolab import (
    Agent,
    GoGame,
    PlannedProgram,
    SearchChanges,
    SearchConfig,
    abstract_states,
    abstract_variables,
    compile_cost,
    make_game,
    make_network,
)
from zerolab.training import evaluation_flops, load_trained_variables
from sai_go.search import SaiSearchOutput, check_lambda, sai_search

SAI_NETWORK = "sai_go.network:make_sai_network"


def safe_actions(game: GoGame, states: pgx.State, visit_counts: jax.Array, prior: jax.Array,
                 key: jax.Array | None = None, sample: jax.Array | None = None) -> jax.Array:
    """[B] the most visited legal move that does not end the game by superko (ties and unvisited: the prior); where
    ``sample`` [B] is true, a safe move drawn in proportion to its visits instead (with ``key``)."""
    actions = jnp.arange(game.num_actions)

    def repeats(state):
        following = jax.vmap(game.step, in_axes=(None, 0))(state, actions)
        return game.ended_by_rule_violation(following)

    allowed = states.legal_action_mask & ~jax.vmap(repeats)(states)
    allowed = allowed.at[:, game.pass_action].set(True)  # passing never repeats a position
    score = jnp.where(allowed, visit_counts + 1e-3 * jax.nn.softmax(prior, axis=-1), -1.0)
    best = jnp.argmax(score, axis=-1).astype(jnp.int32)
    if sample is None:
        return best
    logits = jnp.where(allowed & (visit_counts > 0), jnp.log(jnp.maximum(visit_counts, 1e-30)), -jnp.inf)
    drawn = jax.random.categorical(key, logits).astype(jnp.int32)
    return jnp.where(sample & jnp.isfinite(logits).any(-1), drawn, best)


@functools.lru_cache(maxsize=16)
def compiled_agent_search(game: GoGame, network: nn.Module, search: SearchConfig, temperature_plies: int):
    """The agents' jitted ``(variables, key, states, komi [B], lam) -> SaiSearchOutput`` (safe action), shared by
    every agent with the same game, network, search and temperature (checkpoints and λ are arguments)."""

    @jax.jit
    def run(variables, key, states, komi, lam):
        search_key, sample_key = jax.random.split(key)
        output = sai_search(search, game, network, variables, search_key, states, komi, lam)
        prior = output.root_prior_logits
        sample = game.plies_played(states) < temperature_plies
        action = safe_actions(game, states, output.visit_counts, prior, sample_key, sample)
        return output.replace(action=action)

    return run


@dataclasses.dataclass
class SaiAgent(Agent):
    """An SAI network with PUCT (no root noise) and the λ backup, at ``komi`` (default: the game's).

    Attributes:
      name: the agent's name in matches.
      game: a Go game (its komi is the default komi).
      network, variables: an SAI network (α and β heads) and its variables.
      search: the search configuration (``num_simulations``, PUCT constants): :meth:`from_run_config`'s.
      lam: λ of the agent, in [0, 1].
      komi: the komi it plays at (to White); None: ``game.komi``.
      temperature_plies: the first plies of a game draw the move in proportion to the visits (0: always the most
        visited), so that matches between deterministic players are not one game repeated.
    """

    name: str
    game: GoGame
    network: nn.Module
    variables: Any
    search: SearchConfig
    lam: float = 0.0
    komi: float | None = None
    temperature_plies: int = 0

    def __post_init__(self):
        self.lam = check_lambda(self.lam, "lambda")

    @classmethod
    def from_checkpoint(cls, path: str | pathlib.Path, step: int | None = None, lam: float = 0.0,
                        search: SearchChanges | None = None, name: str | None = None) -> SaiAgent:
        """The SAI network of a run (or step) directory (:meth:`from_run_config`); a ValueError naming ``path`` if
        it is not an SAI run."""
        trained = load_trained_variables(path, step)
        return cls.from_run_config(trained.config, trained.variables, lam, search,
                                   name or f"sai-{pathlib.Path(path).name}-{trained.step}", source=str(path))

    @classmethod
    def from_run_config(cls, config: Any, variables: Any = None, lam: float = 0.0, search: SearchChanges | None = None,
                        name: str = "sai", source: str = "the run config") -> SaiAgent:
        """The agent of an SAI run's config (``config.json``): its network and game, and PUCT with the run's
        simulations and constants, no root noise, changed by ``search`` (a launcher's ``search`` section,
        :class:`zerolab.SearchChanges`: ``search.num_simulations`` …).  ``variables`` None gives abstract ones: an
        agent for a cost plan (:meth:`planned_program`).  A ValueError naming ``source`` if the config is not an SAI
        run's."""
        if config.model.name != SAI_NETWORK or config.game.name != "go":
            raise ValueError(f"{source} is not an SAI run: its model.name is {config.model.name!r} and game "
                             f"{config.game.name!r}, expected {SAI_NETWORK!r} on go")
        game = make_game("go", go_size=config.game.go_size, komi=config.game.komi)  # as the core's Components
        run_search = SearchConfig.from_config(config.search)
        agent_search = SearchConfig(kind="muzero", num_simulations=run_search.num_simulations, dirichlet_fraction=0.0,
                                    pb_c_init=run_search.pb_c_init, pb_c_base=run_search.pb_c_base)
        network = make_network(config.model, game)
        if variables is None:
            variables = abstract_variables(network, game)
        return cls(name, game, network, variables, agent_search if search is None else search.apply(agent_search), lam)

    def with_options(self, **changes) -> SaiAgent:
        return dataclasses.replace(self, **changes)

    @property
    def _search(self):
        return compiled_agent_search(self.game, self.network, self.search, self.temperature_plies)

    def analyse(self, states: pgx.State, key: jax.Array, komi: float | np.ndarray | None = None,
                lam: float | None = None) -> SaiSearchOutput:
        """One search from each of the batched ``states`` at ``komi`` (default: the agent's): numpy outputs."""
        komi = self.game.komi if komi is None and self.komi is None else (self.komi if komi is None else komi)
        batch = states.legal_action_mask.shape[0]
        komi = jnp.broadcast_to(jnp.asarray(komi, jnp.float32), (batch,))
        lam = self.lam if lam is None else check_lambda(lam, "lambda")
        return jax.device_get(self._search(self.variables, key, states, komi, jnp.float32(lam)))

    def select_actions(self, states: pgx.State, key: jax.Array, active: np.ndarray | None = None) -> np.ndarray:
        return np.asarray(self.analyse(states, key).action)  # one batched search over every lane

    def planned_program(self, batch: int, calls: int, what: str = "", name: str = "") -> PlannedProgram:
        """This agent's own jitted search (λ backup, safe move: :func:`compiled_agent_search`) of ``batch`` positions,
        compiled over abstract states, komi and λ, called ``calls`` times and named ``name`` (default
        ``<agent> search``); its FLOPs are its network evaluations (:meth:`zerolab.PlannedProgram.search`).  The
        variables may be abstract (:meth:`from_run_config`)."""
        states = abstract_states(self.game, batch)
        komi, lam = jax.ShapeDtypeStruct((batch,), jnp.float32), jax.ShapeDtypeStruct((), jnp.float32)
        lowered = self._search.lower(self.variables, jax.random.key(0), states, komi, lam)
        return PlannedProgram.search(compile_cost(name or f"{self.name} search", lowered), calls,
                                     what or f"one move of {batch} games: {self.search.num_simulations} simulations, "
                                     f"λ backup, safe move",
                                     evaluation_flops(self.game, self.network, self.variables, batch),
                                     self.search.num_simulations)
