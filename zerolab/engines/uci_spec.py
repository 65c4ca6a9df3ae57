"""UCI engine specs: an engine, its strength and its search limit as one string.

``stockfish:elo=1350``, ``stockfish:skill=0,nodes=1000``, ``fairy-stockfish:skill=-20``, ``stockfish:movetime=0.05``
or ``/path/to/engine:depth=3,option.Move Overhead=0`` (the fields: :data:`SPEC_FIELDS`).  :func:`check_options`
checks a spec's options against those the running engine advertises.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

import chess.engine

from zerolab.config import split_spec

DEFAULT_NODES = 2000  # a small default search: a Stockfish move in a few milliseconds
DEFAULT_TIMEOUT = 30.0  # seconds allowed beyond the search limit before an engine counts as hung


class EngineSpecError(ValueError):
    """A bad engine spec: unknown field, bad value, or a value the engine does not accept."""


SPEC_FIELDS = {
    "skill": "Skill Level, an integer (Stockfish 0..20, Fairy-Stockfish -20..20)",
    "elo": "target Elo via UCI_LimitStrength + UCI_Elo, an integer (Stockfish 1350..2850)",
    "nodes": "node limit per move, a positive integer",
    "movetime": "time per move in seconds, a positive number",
    "depth": "depth limit per move, a positive integer",
    "threads": "Threads, a positive integer",
    "hash": "Hash table size in MB, a positive integer",
    "timeout": "seconds allowed beyond the search limit before the engine counts as hung, a positive number",
    "option.NAME": "any UCI option NAME, e.g. option.Move Overhead=0",
}


def _describe_fields() -> str:
    return "; ".join(f"{field} ({meaning})" for field, meaning in SPEC_FIELDS.items())


@dataclasses.dataclass(frozen=True)
class EngineSpec:
    """An engine, its strength and its search limit.

    Attributes:
      engine: name (``stockfish``) or path of the executable.
      skill_level: UCI ``Skill Level``, or None to leave the engine's default.
      elo: target Elo (sets ``UCI_LimitStrength`` and ``UCI_Elo``), or None.
      nodes, move_time, depth: the search limit per move (move_time in seconds); when none is given the limit is
        :data:`DEFAULT_NODES` nodes, so games are fast. Several may be combined: the search stops at the first.
      threads: UCI ``Threads``, or None.
      hash_megabytes: UCI ``Hash`` in MB, or None.
      timeout: seconds allowed beyond the search limit before the engine counts as hung.
      options: further UCI options as ``(name, value)`` pairs, values as written in the spec.
    """

    engine: str
    skill_level: int | None = None
    elo: int | None = None
    nodes: int | None = None
    move_time: float | None = None
    depth: int | None = None
    threads: int | None = None
    hash_megabytes: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    options: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        if not self.engine:
            raise EngineSpecError("an engine spec needs an engine name or path")
        if self.skill_level is not None and self.elo is not None:
            raise EngineSpecError(f"engine spec for {self.engine!r} gives both skill and elo; give one of them")

    @classmethod
    def parse(cls, text: str | EngineSpec) -> EngineSpec:
        """Parse ``engine[:field=value,field=value,...]`` (fields in :data:`SPEC_FIELDS`); an EngineSpec passes.

        The engine part ends at the first ``:`` (so an engine path cannot contain one); values cannot contain ``,``
        (:func:`zerolab.config.split_spec`, the one reading of agent and engine specs).
        """
        if isinstance(text, EngineSpec):
            return text
        if not isinstance(text, str) or not text.strip():
            raise EngineSpecError(f"engine spec must be a non-empty string such as 'stockfish:elo=1350', got {text!r}")
        try:
            engine, items = split_spec(text.strip(), "engine spec")
        except ValueError as error:
            raise EngineSpecError(f"{error}; fields: {_describe_fields()}") from None
        if not engine:
            raise EngineSpecError(f"engine spec {text!r} has no engine name before ':'")
        values: dict[str, Any] = {}
        options: list[tuple[str, str]] = []
        for key, value in items.items():
            if not value:
                raise EngineSpecError(f"engine spec {text!r}: {key!r} has no value; fields: {_describe_fields()}")
            if key.startswith("option."):
                option_name = key[len("option.") :].strip()
                if not option_name:
                    raise EngineSpecError(f"engine spec {text!r}: 'option.' needs a UCI option name")
                options.append((option_name, value))
                continue
            if key not in SPEC_FIELDS:
                raise EngineSpecError(
                    f"engine spec {text!r}: unknown field {key!r}; valid fields: {_describe_fields()}"
                )
            values[key] = _parse_field(text, key, value)
        try:
            return cls(
                engine=engine,
                skill_level=values.get("skill"),
                elo=values.get("elo"),
                nodes=values.get("nodes"),
                move_time=values.get("movetime"),
                depth=values.get("depth"),
                threads=values.get("threads"),
                hash_megabytes=values.get("hash"),
                timeout=values.get("timeout", DEFAULT_TIMEOUT),
                options=tuple(options),
            )
        except EngineSpecError as error:
            raise EngineSpecError(f"engine spec {text!r}: {error}") from None

    @property
    def name(self) -> str:
        """Short name of the engine (the file name of a path)."""
        return os.path.basename(self.engine)

    def limit(self) -> chess.engine.Limit:
        """The per-move search limit (``DEFAULT_NODES`` nodes when the spec sets none)."""
        if self.nodes is None and self.move_time is None and self.depth is None:
            return chess.engine.Limit(nodes=DEFAULT_NODES)
        return chess.engine.Limit(nodes=self.nodes, time=self.move_time, depth=self.depth)

    def requested_options(self) -> dict[str, Any]:
        """UCI options this spec sets, before checking them against an engine (later entries win)."""
        requested: dict[str, Any] = {}
        if self.threads is not None:
            requested["Threads"] = self.threads
        if self.hash_megabytes is not None:
            requested["Hash"] = self.hash_megabytes
        if self.skill_level is not None:
            requested["Skill Level"] = self.skill_level
        if self.elo is not None:
            requested["UCI_LimitStrength"] = True
            requested["UCI_Elo"] = self.elo
        requested.update(self.options)
        return requested

    def __str__(self) -> str:
        fields = []
        for key, value in (
            ("skill", self.skill_level),
            ("elo", self.elo),
            ("nodes", self.nodes),
            ("movetime", self.move_time),
            ("depth", self.depth),
            ("threads", self.threads),
            ("hash", self.hash_megabytes),
        ):
            if value is not None:
                fields.append(f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}")
        if self.timeout != DEFAULT_TIMEOUT:
            fields.append(f"timeout={self.timeout:g}")
        fields += [f"option.{name}={value}" for name, value in self.options]
        return self.engine + (":" + ",".join(fields) if fields else "")


def _parse_field(text: str, key: str, value: str) -> int | float:
    """The typed value of one spec field; raises :class:`EngineSpecError` naming the field and what it expects."""
    try:
        parsed: int | float = float(value) if key in ("movetime", "timeout") else int(value)
    except ValueError:
        parsed = None  # type: ignore[assignment]
    positive = key not in ("skill", "elo")
    if parsed is None or (positive and parsed <= 0):
        raise EngineSpecError(f"engine spec {text!r}: {key} must be {SPEC_FIELDS[key]}, got {value!r}")
    return parsed


def check_options(
    spec: EngineSpec, available: Mapping[str, chess.engine.Option], engine_name: str
) -> dict[str, Any]:
    """The spec's UCI options, checked against the options the engine advertised; raises :class:`EngineSpecError`."""
    checked: dict[str, Any] = {}
    for name, value in spec.requested_options().items():
        if name not in available:
            field = {"Skill Level": "skill", "UCI_Elo": "elo", "UCI_LimitStrength": "elo"}.get(name, f"option.{name}")
            raise EngineSpecError(
                f"{engine_name} has no UCI option {name!r} (spec field {field}); its options: {', '.join(available)}"
            )
        option = available[name]
        if option.is_managed():
            raise EngineSpecError(
                f"UCI option {name!r} is managed by python-chess per call (MultiPV via analyse(multipv=...), "
                "UCI_Variant via the game, Ponder and UCI_Chess960 are fixed) and cannot be set in a spec"
            )
        if option.type == "spin" and name in ("UCI_Elo", "Skill Level"):
            field = "elo" if name == "UCI_Elo" else "skill"
            too_low = option.min is not None and int(value) < option.min
            too_high = option.max is not None and int(value) > option.max
            if too_low or too_high:
                raise EngineSpecError(
                    f"{engine_name} accepts {field} ({name}) from {option.min} to {option.max}; "
                    f"the spec '{spec}' asks for {field}={value}"
                )
        try:
            checked[option.name] = option.parse(value)
        except chess.engine.EngineError as error:
            raise EngineSpecError(f"{engine_name}, spec '{spec}': {error}") from None
    return checked


__all__ = ["DEFAULT_NODES", "DEFAULT_TIMEOUT", "EngineSpec", "EngineSpecError", "SPEC_FIELDS", "check_options"]
