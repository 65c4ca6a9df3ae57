"""Engine options, as UCI announces them on ``uci`` and sets them with ``setoption``: :class:`UCIOption` (spin, check,
string, combo, button), each checking and typing its own values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

OPTION_TYPES = ("spin", "check", "string", "combo", "button")


@dataclasses.dataclass
class UCIOption:
    """An engine option announced on ``uci`` and set by ``setoption``.

    Attributes:
      name: the option's name (matched case-insensitively, as UCI asks).
      type: ``spin`` (integer in [minimum, maximum]), ``check`` (bool), ``string``, ``combo`` (one of ``choices``)
        or ``button`` (no value; ``on_change`` is called with None).
      default: the starting value.
      minimum, maximum: bounds of a spin.
      choices: values of a combo.
      on_change: called with the new typed value after a successful ``setoption``.
    """

    name: str
    type: str
    default: Any = None
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    on_change: Callable[[Any], None] | None = None

    def __post_init__(self):
        if not self.name or self.name != self.name.strip() or " value " in f" {self.name.lower()} ":
            raise ValueError(
                f"UCI option name {self.name!r} must be non-empty, trimmed and not contain the word 'value'"
            )
        if self.type not in OPTION_TYPES:
            raise ValueError(
                f"UCI option {self.name!r}: type must be one of {', '.join(OPTION_TYPES)}, got {self.type!r}"
            )
        if self.type == "spin" and (self.minimum is None or self.maximum is None or self.minimum > self.maximum):
            raise ValueError(f"spin option {self.name!r} needs minimum <= maximum, got {self.minimum}, {self.maximum}")
        if self.type == "combo" and not self.choices:
            raise ValueError(f"combo option {self.name!r} needs choices")
        self.choices = tuple(self.choices)
        if self.type == "string" and self.default is None:
            self.default = ""
        if self.type != "button":
            text = str(self.default).lower() if isinstance(self.default, bool) else str(self.default)
            self.default = self.parse(text)

    def parse(self, value: str | None) -> Any:
        """The typed value of ``value``; raises ValueError saying what the option expects."""
        if self.type == "button":
            if value:
                raise ValueError(f"option {self.name!r} is a button and takes no value, got {value!r}")
            return None
        if value is None:
            raise ValueError(f"option {self.name!r} needs a value ('setoption name {self.name} value ...')")
        if self.type == "spin":
            try:
                number = int(value)
            except ValueError:
                raise ValueError(f"option {self.name!r} expects an integer, got {value!r}") from None
            if not self.minimum <= number <= self.maximum:
                raise ValueError(
                    f"option {self.name!r} expects an integer from {self.minimum} to {self.maximum}, got {number}"
                )
            return number
        if self.type == "check":
            if value.lower() not in ("true", "false"):
                raise ValueError(f"option {self.name!r} expects true or false, got {value!r}")
            return value.lower() == "true"
        if self.type == "combo":
            for choice in self.choices:
                if choice.lower() == value.lower():
                    return choice
            raise ValueError(f"option {self.name!r} expects one of {', '.join(self.choices)}, got {value!r}")
        return value

    def declaration(self) -> str:
        """The ``option name ... type ...`` line for ``uci``."""
        line = f"option name {self.name} type {self.type}"
        if self.type == "button":
            return line
        if self.type == "check":
            default = str(self.default).lower()
        else:
            default = "<empty>" if self.default == "" else self.default
        line += f" default {default}"
        if self.type == "spin":
            line += f" min {self.minimum} max {self.maximum}"
        if self.type == "combo":
            line += "".join(f" var {choice}" for choice in self.choices)
        return line


__all__ = ["OPTION_TYPES", "UCIOption"]
