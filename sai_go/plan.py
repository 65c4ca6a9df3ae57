"""Cost plans of the sai-go evaluation experiments (``python -m experiments plan sai-go-gnugo|sai-go-panel|
sai-go-positions``): the programs they compile, compiled ahead of time with abstract inputs, and how often they run.

The networks of these experiments come from a trained SAI run that may not exist at plan time: its architecture is
taken from the run config the launcher passes (the run's ``config.json``, or the config that would train it:
``experiments/common/sai_go.py``), its variables are abstract (:func:`zerolab.networks.abstract_variables`), and the
agents are the ones the run plays, built on those variables (:meth:`SaiModel.sai_agent`), each planning its own
jitted search (:meth:`sai_go.agents.SaiAgent.planned_program`).  A search's FLOPs are its network evaluations
(:meth:`zerolab.PlannedProgram.search`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from zerolab import (
    PlannedProgram,
    SearchChanges,
    abstract_states,
    abstract_variables,
    compile_cost,
    make_game,
    make_network,
)
from zerolab.training import RunConfig
from sai_go.agents import SaiAgent


@dataclasses.dataclass
class SaiModel:
    """A run's network with abstract variables, from the config that trains the run (any model: SAI's or a plain
    ResNet, e.g. a landmark run)."""

    run_config: Any
    network: Any
    variables: Any  # jax.ShapeDtypeStruct leaves

    def game(self, komi: float | None = None):
        config = self.run_config.game  # read as the core's Components reads it
        return make_game("go", go_size=config.go_size, komi=config.komi if komi is None else komi)

    def sai_agent(self, search: SearchChanges, name: str = "sai") -> SaiAgent:
        """The :class:`sai_go.agents.SaiAgent` a checkpoint of this (SAI) run gives with the changes ``search`` (a
        launcher's ``search`` section; :meth:`sai_go.agents.SaiAgent.from_checkpoint`), on the abstract variables."""
        return SaiAgent.from_run_config(self.run_config, self.variables, search=search, name=name)


def abstract_model(run_config: Any) -> SaiModel:
    """The network of a run config with abstract variables."""
    game = make_game(run_config.game.name, go_size=run_config.game.go_size, komi=run_config.game.komi)
    network = make_network(run_config.model, game)
    return SaiModel(run_config, network, abstract_variables(network, game))


def kept_steps(run_config: Any) -> list[int]:
    """The checkpoint steps a finished run of ``run_config`` keeps: every ``checkpoint.keep_period``-th (0 included)
    and the last ``checkpoint.keep`` ones (:class:`zerolab.Checkpointer`)."""
    settings = RunConfig.from_config(run_config)
    iterations, keep, period = settings.iterations, settings.checkpoint.keep, settings.checkpoint.keep_period
    return [step for step in range(iterations + 1)
            if (period > 0 and step % period == 0) or step > iterations - keep]


def pgx_step_program(name: str, game, batch: int | None, calls: int, what: str) -> PlannedProgram:
    """pgx's ``step`` of ``batch`` states (the arena's batched referee), or of one state (``batch=None``)."""
    if batch is None:
        state = jax.eval_shape(game.init, jax.random.key(0))
        lowered = game.jitted_step.lower(state, jax.ShapeDtypeStruct((), jnp.int32))
    else:
        lowered = game.batched_step.lower(abstract_states(game, batch), jax.ShapeDtypeStruct((batch,), jnp.int32))
    return PlannedProgram(compile_cost(name, lowered), calls, what)


__all__ = ["SaiModel", "abstract_model", "kept_steps", "pgx_step_program"]
