"""Set-up shared by experiment launchers: the run directory, a training config from an experiment's sections, and
JAX's persistent compilation cache."""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import Any

import ml_collections

from zerolab.devices import use_compilation_cache
from zerolab.training.run_directory import record_run_config
from zerolab.training.runs import default_config


def prepare_experiment(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> pathlib.Path:
    """The experiment's run directory, created, with its ``config.json`` recorded (:func:`~zerolab.training.
    run_directory.record_run_config`: a rerun with other settings is refused) and JAX's compilation cache set from
    ``config.compilation_cache`` (:func:`use_compilation_cache`)."""
    workdir = record_run_config(workdir, config).workdir
    use_compilation_cache(config.compilation_cache)
    return workdir


def training_config(sections: Mapping[str, Any], model: Mapping[str, Any], **values: Any) -> ml_collections.ConfigDict:
    """A zerolab training config: ``default_config()`` with the keys of ``sections`` that it has, the given
    ``model`` section and ``values`` (top-level keys such as ``init_from``; an unknown one is an error)."""
    config = default_config()
    config.model = ml_collections.ConfigDict(dict(model))
    for key in config.keys():
        if key != "model" and key in sections:
            config[key] = _copy(sections[key])
    for key, value in values.items():
        if key not in config:
            raise KeyError(f"{key!r} is not a training config key; keys: {', '.join(sorted(config.keys()))}")
        config[key] = _copy(value)
    config.lock()
    return config


def _copy(value: Any) -> Any:
    if isinstance(value, ml_collections.ConfigDict):
        return ml_collections.ConfigDict(value.to_dict())
    return value
