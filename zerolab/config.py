"""Configs as data: ``ml_collections.ConfigDict`` files under ``experiments/configs/`` with presets and overrides.

A config file ``experiments/configs/NAME.py`` (``-`` in NAME becomes ``_``) defines ``get_config(preset)`` that
returns a ``ConfigDict``; presets are at least ``tiny`` (a 2-core CPU) and ``paper`` (the paper's scale), and some
configs have ``evidence`` (their README's ± se runs).  The
returned config is locked: an override of a key that does not exist stops with an error that lists the valid keys,
and a value that does not fit the field's type stops with an error naming the key, the value and the type.
"""

from __future__ import annotations

import ast
import importlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

import ml_collections

ConfigDict = ml_collections.ConfigDict
PRESETS = ("tiny", "paper")  # every config has these
#: Presets some configs have: ``evidence``, the runs whose effects a README reports ± se.
OPTIONAL_PRESETS = ("evidence",)


class ConfigError(ValueError):
    """A config name, key or value that cannot be used; the message says what was expected."""


def config_module_name(name: str) -> str:
    return "experiments.configs." + name.replace("-", "_")


def load_config(name: str, preset: str = "tiny", overrides: Iterable[str] = ()) -> ConfigDict:
    """The locked config ``name`` at ``preset`` with ``key=value`` overrides applied."""
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
    config = ConfigDict(config)
    config.lock()
    apply_overrides(config, overrides)
    return config


def flatten(config: ConfigDict | Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{'a.b': value}`` for every leaf of a nested config."""
    flat: dict[str, Any] = {}
    items = config.items() if hasattr(config, "items") else []
    for key, value in items:
        path = f"{prefix}{key}"
        if isinstance(value, (ConfigDict, dict)):
            flat.update(flatten(value, path + "."))
        else:
            flat[path] = value
    return flat


def parse_value(text: str) -> Any:
    """A Python literal if ``text`` is one (``3``, ``1e-3``, ``True``, ``None``, ``[1, 2]``), else the string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        lowered = text.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        return text


def apply_overrides(config: ConfigDict, overrides: Iterable[str]) -> ConfigDict:
    """Apply ``key=value`` strings (dotted keys) to a locked config in place."""
    valid = flatten(config)
    for override in overrides:
        if "=" not in override:
            raise ConfigError(f"override {override!r} is not of the form key=value")
        key, text = override.split("=", 1)
        key = key.strip()
        if key not in valid:
            raise ConfigError(f"unknown config key {key!r}; valid keys: {', '.join(sorted(valid))}")
        set_value(config, key, parse_value(text))
    return config


def set_value(config: ConfigDict, dotted_key: str, value: Any) -> None:
    *parents, leaf = dotted_key.split(".")
    node = config
    for parent in parents:
        node = node[parent]
    current = node[leaf]
    if isinstance(current, ConfigDict) and isinstance(value, dict):  # a whole options dict, e.g. search.rule_options
        value = ConfigDict(value)
    if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if current is not None and value is not None and not isinstance(value, type(current)):
        if isinstance(current, (list, tuple)) and isinstance(value, (list, tuple)):
            value = type(current)(value)
        else:
            raise ConfigError(
                f"config key {dotted_key!r} expects {type(current).__name__}, got {value!r} ({type(value).__name__})"
            )
    try:
        node[leaf] = value
    except TypeError as error:
        raise ConfigError(f"config key {dotted_key!r}: {error}") from None


def to_json(config: ConfigDict) -> str:
    return json.dumps(config.to_dict(), indent=2, sort_keys=True, default=str)


def from_json(text: str) -> ConfigDict:
    config = ConfigDict(json.loads(text))
    config.lock()
    return config


def differing_keys(a: ConfigDict, b: ConfigDict, prefixes: Iterable[str]) -> list[str]:
    """Dotted keys under any of ``prefixes`` whose values differ between ``a`` and ``b`` (or exist in one only)."""
    flat_a, flat_b = flatten(a), flatten(b)
    prefixes = tuple(prefixes)
    keys = {k for k in flat_a.keys() | flat_b.keys() if k.startswith(prefixes)}
    return sorted(k for k in keys if _normalise(flat_a.get(k, "<missing>")) != _normalise(flat_b.get(k, "<missing>")))


def _normalise(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
