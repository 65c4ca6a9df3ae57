"""Cost plans of the sai-go evaluation experiments (``python -m experiments plan sai-go-gnugo|sai-go-panel|
sai-go-positions``): the programs they compile, compiled ahead of time with abstract inputs, and how often they run.

The networks of these experiments come from a trained SAI run that may not exist at plan time: its architecture is
taken from the run config the launcher passes (the run's ``config.json``, or the config that would train it:
``experiments/common/sai_go.py``), its variables are abstract
(``jax.eval_shape``), and the searches are the agents' own jitted functions (:func:`sai_go.agents.compiled_agent_search`,
:func:`sai_go.selfplay.make_sai_play_fn`).  A search's FLOPs are its network evaluations: one evaluation of the batch
compiled alone, times ``simulations + 1`` (XLA counts the simulation loop's body once).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from zerolab import (
    PlannedProgram,
    SearchConfig,
    abstract_states,
    compile_cost,
    init_variables,
    make_game,
    make_network,
)
from sai_go.agents import compiled_agent_search


@dataclasses.dataclass
class SaiModel:
    """An SAI run's network with abstract variables, from the config that trains the run."""

    run_config: Any
    network: Any
    variables: Any  # jax.ShapeDtypeStruct leaves

    def game(self, komi: float | None = None):
        config = self.run_config.game
        return make_game("go", go_size=int(config.go_size), komi=float(config.komi if komi is None else komi))

    def agent_search(self, simulations: int) -> SearchConfig:
        """The search of :meth:`sai_go.agents.SaiAgent.from_checkpoint`: PUCT, no root noise."""
        search = self.run_config.search
        return SearchConfig(kind="muzero", num_simulations=int(simulations), dirichlet_fraction=0.0,
                            pb_c_init=float(search.pb_c_init), pb_c_base=float(search.pb_c_base))


def abstract_model(run_config: Any) -> SaiModel:
    """The network of a run config (any model: SAI's or a plain ResNet) with abstract variables."""
    game = make_game(run_config.game.name, go_size=int(run_config.game.go_size), komi=float(run_config.game.komi))
    network = make_network(run_config.model, game)
    variables = jax.eval_shape(lambda key: init_variables(network, game, key), jax.random.key(0))
    return SaiModel(run_config, network, variables)


def kept_steps(run_config: Any) -> list[int]:
    """The checkpoint steps a finished run of ``run_config`` keeps: every ``checkpoint.keep_period``-th (0 included)
    and the last ``checkpoint.keep`` ones (:class:`zerolab.Checkpointer`)."""
    iterations = int(run_config.iterations)
    keep, period = int(run_config.checkpoint.keep), int(run_config.checkpoint.keep_period)
    return [step for step in range(iterations + 1)
            if (period > 0 and step % period == 0) or step > iterations - keep]


def evaluation_flops(game, network, variables, batch: int) -> float:
    """FLOPs of one network evaluation of ``batch`` positions, from its compiled program."""
    return PlannedProgram.evaluation("evaluation", game, network, variables, batch).flops


def evaluation_program(name: str, game, network, variables, batch: int, calls: int, what: str) -> PlannedProgram:
    return PlannedProgram.evaluation(name, game, network, variables, batch, calls, what)


def agent_search_program(name: str, model: SaiModel, game, simulations: int, temperature_plies: int, batch: int,
                         calls: int, what: str) -> PlannedProgram:
    """:class:`sai_go.agents.SaiAgent`'s jitted search (λ search, safe move) over ``batch`` positions."""
    search = model.agent_search(simulations)
    function = compiled_agent_search(game, model.network, search, int(temperature_plies))
    komi = jax.ShapeDtypeStruct((batch,), jnp.float32)
    lam = jax.ShapeDtypeStruct((), jnp.float32)
    cost = compile_cost(name, function.lower(model.variables, jax.random.key(0), abstract_states(game, batch), komi,
                                             lam))
    return PlannedProgram.search(cost, calls, what, evaluation_flops(game, model.network, model.variables, batch),
                                 simulations)


def pgx_step_program(name: str, game, batch: int | None, calls: int, what: str) -> PlannedProgram:
    """pgx's ``step`` of ``batch`` states (the arena's batched referee), or of one state (``batch=None``)."""
    if batch is None:
        state = jax.eval_shape(game.init, jax.random.key(0))
        lowered = game.jitted_step.lower(state, jax.ShapeDtypeStruct((), jnp.int32))
    else:
        lowered = game.batched_step.lower(abstract_states(game, batch), jax.ShapeDtypeStruct((batch,), jnp.int32))
    return PlannedProgram(compile_cost(name, lowered), calls, what)


__all__ = ["SaiModel", "abstract_model", "agent_search_program", "evaluation_flops", "evaluation_program",
           "kept_steps", "pgx_step_program"]
