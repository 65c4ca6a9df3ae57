"""Experiment configs, looked up by name: ``experiments/configs/NAME.py`` (``-`` in NAME becomes ``_``) defines
``get_config(preset) -> ml_collections.ConfigDict``; presets are at least ``tiny`` (a 2-core CPU) and ``paper`` (the
paper's scale), and some configs have ``evidence`` (their README's ± se runs).

:func:`load_config` is the one lookup by name, used by the launchers' entries (``python -m experiments``, ``python -m
zerolab train --config NAME``) and the tests; the core and the method packages take configs as values.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

import ml_collections

from zerolab import ConfigError, apply_overrides

PRESETS = ("tiny", "paper")  # every config has these
#: Presets some configs have: ``evidence``, the runs whose effects a README reports ± se.
OPTIONAL_PRESETS = ("evidence",)


def config_module_name(name: str) -> str:
    """The module of config ``name``: ``experiments.configs.NAME`` with ``-`` as ``_``."""
    return f"{__name__}." + name.replace("-", "_")


def load_config(name: str, preset: str = "tiny", overrides: Iterable[str] = ()) -> ml_collections.ConfigDict:
    """The locked config ``name`` at ``preset`` with ``key=value`` overrides applied; a
    :class:`~zerolab.config.ConfigError` names an unknown config or preset."""
    module_name = config_module_name(name)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        raise ConfigError(f"unknown config {name!r}: no module {module_name} (experiments/configs/)") from None
    try:
        config = module.get_config(preset)
    except KeyError:
        raise ConfigError(f"config {name!r} has no preset {preset!r}; every config has {', '.join(PRESETS)}, some "
                          f"{', '.join(OPTIONAL_PRESETS)}") from None
    config = ml_collections.ConfigDict(config)
    config.lock()
    apply_overrides(config, overrides, may_add=names_a_search_key)
    return config


def names_a_search_key(dotted_key: str) -> bool:
    """Whether ``dotted_key``, which the config does not hold, names a search's key in a ``search`` section
    (:meth:`zerolab.SearchChanges.names_a_key`): any search key may be given there.  Imported here, for the keys a
    config does not hold, so that loading a config imports no JAX."""
    from zerolab import SearchChanges

    return SearchChanges.names_a_key(dotted_key)


__all__ = ["OPTIONAL_PRESETS", "PRESETS", "config_module_name", "load_config"]
