"""An lc0 file as a zerolab run directory: the step-0 checkpoint and the config of a run that would train it.

``RUN`` is then an ordinary agent spec (``RUN:num_simulations=64`` = the network with Gumbel search), ``init_from=RUN``
starts a training run from it, and ``zerolab train`` on ``RUN`` would fine-tune it with self-play.
"""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from zerolab.networks.lc0.network import architecture_config, lc0_variables
from zerolab.networks.lc0.maia import resolve_weights_path
from zerolab.networks.lc0.weights import read_lc0_weights

LC0_GAME_NAME = "chess:lc0"
LC0_NETWORK_NAME = "zerolab.networks.lc0.network:make_lc0"


def lc0_run_config(weights_path: pathlib.Path, architecture: dict[str, int]) -> ml_collections.ConfigDict:
    """The training defaults with the lc0 game and network (``game.name='chess:lc0'``)."""
    from zerolab.training.runs import default_config

    config = default_config()
    config.game.name = LC0_GAME_NAME
    config.model = ml_collections.ConfigDict({"name": LC0_NETWORK_NAME, "weights": str(weights_path), **architecture})
    return config


def converted_run_config(weights: str | pathlib.Path | None) -> ml_collections.ConfigDict:
    """The ``config.json`` :func:`convert_to_run` writes for the lc0 file ``weights`` (None: maia-1900), read from the
    file's architecture without converting it (plans of runs that start from it)."""
    path = resolve_weights_path(weights).absolute()
    return lc0_run_config(path, architecture_config(read_lc0_weights(path)))


def convert_to_run(weights: str | pathlib.Path | None, workdir: str | pathlib.Path) -> pathlib.Path:
    """Writes ``workdir`` (a new run directory) holding the lc0 file's network as checkpoint step 0."""
    from zerolab import config as config_lib
    from zerolab.training.replay import FrameWindow
    from zerolab.training.run_checkpoints import RunCheckpoints, RunState
    from zerolab.training.train_state import TrainState, make_optimizer

    workdir = pathlib.Path(workdir)
    if (workdir / "checkpoints").exists() and any((workdir / "checkpoints").iterdir()):
        raise FileExistsError(f"{workdir} already holds a run (checkpoints/); convert into a new --workdir")
    config = converted_run_config(weights)
    lc0 = read_lc0_weights(config.model.weights)
    variables = jax.tree.map(jnp.asarray, lc0_variables(lc0))
    optimizer = make_optimizer(config.train)
    state = TrainState(step=jnp.zeros((), jnp.int32), params=variables["params"],
                       batch_stats=variables["batch_stats"], opt_state=optimizer.init(variables["params"]))
    workdir.mkdir(parents=True, exist_ok=True)
    checkpoints = RunCheckpoints(workdir, keep=config.checkpoint.keep, keep_period=config.checkpoint.keep_period)
    checkpoints.save(RunState(0, 0, state, FrameWindow.empty(), np.random.default_rng(config.seed)), config)
    (workdir / "config.json").write_text(config_lib.to_json(config))
    return workdir


__all__ = ["convert_to_run", "converted_run_config", "lc0_run_config", "LC0_GAME_NAME", "LC0_NETWORK_NAME"]
