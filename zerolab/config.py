"""Configs as data: ``ml_collections.ConfigDict`` with ``key=value`` overrides, and the readers that type them.

A config is locked before overrides apply (:func:`apply_overrides`): an override of a key that does not exist stops
with an error that lists the valid keys, and a value that does not fit the field's type stops with an error naming the
key, the value and the type.  Named configs with presets (``experiments/configs/NAME.py``) are looked up by the
launchers' entry, :func:`experiments.configs.load_config`, not here: the foundation knows no experiment.

A config is read once, at the entry, into typed values by three readers here, which every layer uses:

* :func:`section_dataclass` — a config section (or ``{key: text}`` given on a command line) as a frozen dataclass
  (``SearchConfig``, ``SelfPlayConfig``, ``EvaluationConfig``): unknown keys and values of the wrong type are errors
  naming the section, the key and what was expected (:func:`field_value`);
* :func:`load_factory` — the plugin a ``"package.module:factory"`` names (networks, methods, search rules);
* :func:`split_spec` — an agent or engine spec ``head:key=value,key=value`` (checkpoint agents, UCI and GTP engines).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import difflib
import importlib
import json
import re
import typing
from collections.abc import Callable
from collections.abc import Iterable, Mapping
from typing import Any

import ml_collections

ConfigDict = ml_collections.ConfigDict


class ConfigError(ValueError):
    """A config name, key or value that cannot be used; the message says what was expected."""


def did_you_mean(value: Any, choices: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` where one of ``choices`` is close to ``value`` (difflib's ratio ≥ 0.6), else ``""``."""
    close = difflib.get_close_matches(str(value), [str(choice) for choice in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_choice(key: str, value: Any, choices: Iterable[str]) -> None:
    """Raises :class:`ConfigError` naming ``key``, ``value`` and the ``choices`` unless ``value`` is one of them."""
    choices = tuple(choices)
    if value not in choices:
        raise ConfigError(f"{key} must be one of {', '.join(map(repr, choices))}, got {value!r}"
                          f"{did_you_mean(value, choices)}")


def check_at_least(key: str, value: Any, minimum: float) -> None:
    """Raises :class:`ConfigError` naming ``key`` and ``value`` unless ``value >= minimum``."""
    if not value >= minimum:
        raise ConfigError(f"{key} must be at least {minimum}, got {value!r}")


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


FIELD_TYPES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}
"""Field annotations :func:`field_value` converts to; any other annotation takes the value as it is (text: a Python
literal, :func:`parse_value`)."""


def annotation_name(annotation: Any) -> str:
    """A field's annotation as text (``int``, ``float | None``), whether or not its module postpones annotations."""
    if isinstance(annotation, str):
        return annotation
    return annotation.__name__ if isinstance(annotation, type) and not typing.get_args(annotation) else str(annotation)


def field_value(annotation: Any, value: Any) -> Any:
    """``value`` as a dataclass field annotated ``annotation`` (``int``, ``float``, ``str``, ``bool``, ``X | None``,
    ``list[X]``, ``tuple[X, ...]``).

    Text (a command line's, an agent spec's) is read: ``int("3")``, ``float("1e-3")``, ``true``/``false`` for
    ``bool``, ``none`` for ``X | None``, a Python literal for a list or tuple; other annotations take a Python
    literal, else the string.  Values that are not text keep their type, an integer for a ``float`` field becoming a
    float and an integral float for an ``int`` field an int; the items of a ``list[X]`` or ``tuple[X, ...]`` are read
    as ``X`` each.  Raises ValueError saying what was expected.
    """
    annotation = annotation_name(annotation)
    optional = annotation.endswith(" | None")
    base = annotation[: -len(" | None")] if optional else annotation
    if optional and (value is None or (isinstance(value, str) and value.strip().lower() == "none")):
        return None
    sequence = SEQUENCE_ANNOTATION.fullmatch(base)
    if sequence:
        return sequence_value(sequence["kind"], sequence["item"], value, annotation)
    expected = FIELD_TYPES.get(base)
    if expected is None:
        return parse_value(value) if isinstance(value, str) else value
    if isinstance(value, str) and expected is not str:
        text = value.strip()
        if expected is bool:
            if text.lower() not in ("true", "false"):
                raise ValueError(f"expected true or false, got {value!r}")
            return text.lower() == "true"
        try:
            return expected(text)
        except ValueError:
            raise ValueError(f"expected {annotation}, got {value!r}") from None
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ValueError(f"expected {annotation}, got {value!r}")
    return value


#: ``list[X]`` and ``tuple[X, ...]`` annotations, ``X`` one of :data:`FIELD_TYPES` (optionally ``X | None``).
SEQUENCE_ANNOTATION = re.compile(r"(?P<kind>list|tuple)\[(?P<item>[a-z]+(?: \| None)?)(?:, \.\.\.)?\]")


def sequence_value(kind: str, item: str, value: Any, annotation: str) -> list | tuple:
    """``value`` (a list, a tuple or its text) as ``list[item]`` or ``tuple[item, ...]``, each item read by
    :func:`field_value`; a ValueError names the annotation and, for an item, its index."""
    values = parse_value(value) if isinstance(value, str) else value
    if not isinstance(values, (list, tuple)):
        raise ValueError(f"expected {annotation}, got {value!r}")
    items = []
    for index, entry in enumerate(values):
        try:
            items.append(field_value(item, entry))
        except ValueError:
            raise ValueError(f"expected {annotation}, got {value!r} (item {index}: {entry!r})") from None
    return list(items) if kind == "list" else tuple(items)


def section_dataclass(cls: type, section: Any, name: str, read_elsewhere: Iterable[str] = (),
                      shared: bool = False) -> Any:
    """``cls(**section)`` for a frozen dataclass ``cls`` from a config section ``name`` (a ConfigDict, a mapping or
    ``{key: text}``), each value read by :func:`field_value`; a field whose type is itself a dataclass reads its
    sub-section the same way (``name.key``), or with its type's ``from_section(section, name)`` where it has one
    (an agent's ``search`` section: :class:`zerolab.search.config.SearchChanges`).  Keys absent keep their defaults
    (configs of older runs); the keys in ``read_elsewhere`` are left out (sections another reader types: a
    launcher's ``model``, ``search`` …), and with ``shared`` every key ``cls`` has no field for (a section several
    readers share: a run's top level, a ``model`` section read by the core and by the network's factory).  Raises
    ValueError naming an unknown key and the valid ones, or a value and the type expected."""
    values = section.to_dict() if hasattr(section, "to_dict") else dict(section)
    for key in read_elsewhere:
        values.pop(key, None)
    if shared:
        values = {key: value for key, value in values.items() if key in {field.name for field in dataclasses.fields(cls)}}
    fields = {field.name: field for field in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        hint = did_you_mean(unknown[0], fields) if len(unknown) == 1 else ""
        raise ValueError(f"unknown {name} keys {unknown}{hint}; valid keys: {sorted(fields)}")
    converted = {}
    types = field_types(cls)
    for key, value in values.items():
        reader = types.get(key)
        if hasattr(reader, "from_section"):  # a section type with its own reader (SearchChanges), or one given typed
            converted[key] = value if isinstance(value, reader) else reader.from_section(value, f"{name}.{key}")
            continue
        if dataclasses.is_dataclass(types.get(key)):
            converted[key] = section_dataclass(types[key], value, f"{name}.{key}")
            continue
        try:
            converted[key] = field_value(fields[key].type, value)
        except ValueError as error:
            raise ValueError(f"{name}.{key} must be {annotation_name(fields[key].type)}, got {value!r}"
                             f"{item_detail(error)}") from None
    return cls(**converted)


def section_dict(typed: Any) -> Any:
    """A typed config (a dataclass instance, as :func:`section_dataclass` makes) as the plain nested dicts of its
    keys, for a ConfigDict (``get_config``): as :func:`dataclasses.asdict`, except that a value with a
    ``to_section()`` method (:class:`zerolab.search.config.SearchChanges`) is written as the section it reads."""
    if hasattr(typed, "to_section"):
        return typed.to_section()
    if dataclasses.is_dataclass(typed) and not isinstance(typed, type):
        return {field.name: section_dict(getattr(typed, field.name)) for field in dataclasses.fields(typed)}
    if isinstance(typed, (list, tuple)):
        return type(typed)(section_dict(item) for item in typed)
    if isinstance(typed, dict):
        return {key: section_dict(value) for key, value in typed.items()}
    return copy.deepcopy(typed)


def field_types(cls: type) -> dict[str, Any]:
    """``cls``'s field annotations resolved to types where they can be (a name only imported for type checking
    cannot: then none are, and no field reads a sub-section)."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):
        return {}


def item_detail(error: ValueError) -> str:
    """`` (item 2: 'x')`` where ``error`` (from :func:`field_value`) names a sequence's item, else ``""``."""
    text = str(error)
    return text[text.rindex(" (item "):] if " (item " in text else ""


def load_factory(path: str, key: str) -> Callable:
    """The callable ``"package.module:name"`` names (config key ``key``: ``model.name``, ``method``,
    ``search.rules``), or a ValueError saying what is wrong: the one plugin loader."""
    module_name, separator, attribute = path.partition(":")
    if not separator or not module_name or not attribute:
        raise ValueError(f"{key}={path!r} must name a callable as 'package.module:name'")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise ValueError(f"{key}={path!r}: cannot import {module_name} ({error})") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ValueError(f"{key}={path!r}: module {module_name} has no callable {attribute}")
    return factory


def split_spec(spec: str, what: str = "agent spec") -> tuple[str, dict[str, str]]:
    """``'head:a=1,b=2'`` → ``('head', {'a': '1', 'b': '2'})``: the one reading of agent and engine specs.

    The head ends at the first ``:`` (a path cannot hold one); keys and values are stripped, values are text (the
    caller types them) and cannot hold ``,``.  Raises ValueError (``what`` names the spec in it) for an item that is
    not ``key=value`` or a key given twice.
    """
    head, _, text = spec.partition(":")
    options: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        key = key.strip()
        if not equals or not key:
            raise ValueError(f"{what} {spec!r}: {item!r} is not key=value")
        if key in options:
            raise ValueError(f"{what} {spec!r}: {key!r} is given twice")
        options[key] = value.strip()
    return head.strip(), options


def apply_overrides(config: ConfigDict, overrides: Iterable[str],
                    may_add: Callable[[str], bool] | None = None) -> ConfigDict:
    """Apply ``key=value`` strings (dotted keys) to a locked config in place.  A key the config does not hold is an
    error naming the valid keys, unless ``may_add(key)`` says it may be added to a section the config holds (a
    search's key in an agent's ``search`` section: :meth:`zerolab.search.config.SearchChanges.names_a_key`); an added
    value is kept as its text reads (:func:`parse_value`) and typed by the section's reader."""
    valid = flatten(config)
    for override in overrides:
        if "=" not in override:
            raise ConfigError(f"override {override!r} is not of the form key=value")
        key, text = override.split("=", 1)
        key = key.strip()
        if key in valid:
            set_value(config, key, parse_value(text))
        elif may_add is not None and may_add(key) and add_value(config, key, parse_value(text)):
            valid = flatten(config)
        else:
            raise ConfigError(unknown_key_message(key, valid))
    return config


def add_value(config: ConfigDict, dotted_key: str, value: Any) -> bool:
    """Adds ``dotted_key`` to a locked config where every section above its last one exists (the last, e.g. a
    search's ``rule_options``, is made); whether it was added."""
    *parents, leaf = dotted_key.split(".")
    node = config
    for depth, parent in enumerate(parents):
        if parent not in node:
            if depth < len(parents) - 1:
                return False
            with node.unlocked():
                node[parent] = ConfigDict()
        node = node[parent]
        if not isinstance(node, ConfigDict):
            return False
    with node.unlocked():
        node[leaf] = value
    return True


def unknown_key_message(key: str, valid: Iterable[str]) -> str:
    """The error for an unknown dotted ``key``: the closest valid key where one is close, and the valid keys of its
    section (all keys where the section is unknown too)."""
    valid = sorted(valid)
    section, _, leaf = key.rpartition(".")
    moved = [name for name in valid if name.endswith(f".{key}") or name == f"{section}.search.{leaf}".lstrip(".")]
    if moved:  # a key the config now holds deeper: a search's keys live in a ``search`` section
        return f"unknown config key {key!r}; did you mean {' or '.join(map(repr, moved[:3]))}?"
    siblings = [name for name in valid if name.rpartition(".")[0] == section]
    if section and siblings:  # the closest key of the same section, by its last part
        hint = did_you_mean(leaf, [name.rpartition(".")[2] for name in siblings])
        hint = hint.replace(" (did you mean '", f" (did you mean '{section}.")
        return f"unknown config key {key!r}{hint}; keys in {section!r}: {', '.join(siblings)}"
    return f"unknown config key {key!r}{did_you_mean(key, valid)}; valid keys: {', '.join(valid)}"


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
