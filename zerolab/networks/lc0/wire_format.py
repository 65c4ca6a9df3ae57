"""The protobuf wire format, read by hand: an lc0 file's messages as numbered fields (no protoc, no lc0 code).

:func:`parse_message` splits one message into its fields (varints, fixed 32/64-bit values, length-delimited bytes) and
:func:`fields_by_number` names them; a truncated, corrupt or foreign file is an :class:`Lc0FormatError` naming the
message and what to do.
"""

from __future__ import annotations

import dataclasses
from typing import Any


class Lc0FormatError(ValueError):
    """An lc0 file that cannot be read: the message names the file, the field and what to do."""


@dataclasses.dataclass(frozen=True)
class WireField:
    """One field of a protobuf message: its number, wire type and value (int for varints, bytes otherwise)."""

    number: int
    wire_type: int
    value: int | bytes


def _read_varint(data: bytes, position: int, where: str) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data):
            raise Lc0FormatError(f"{where}: truncated varint (the file is cut short; download it again)")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, position
        if shift > 63:
            raise Lc0FormatError(f"{where}: malformed varint (the file is corrupt; download it again)")


def parse_message(data: bytes, where: str) -> list[WireField]:
    """The fields of one protobuf message, in file order; ``where`` names the message in errors."""
    fields, position = [], 0
    while position < len(data):
        key, position = _read_varint(data, position, where)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, position = _read_varint(data, position, where)
        elif wire_type in (1, 5):
            size = 8 if wire_type == 1 else 4
            value, position = data[position:position + size], position + size
        elif wire_type == 2:
            size, position = _read_varint(data, position, where)
            value, position = data[position:position + size], position + size
        else:
            raise Lc0FormatError(f"{where}: field {number} has unsupported wire type {wire_type} (not an lc0 file?)")
        if position > len(data):
            raise Lc0FormatError(f"{where}: field {number} runs past the end of the data (the file is truncated; "
                                 f"download it again)")
        fields.append(WireField(number, wire_type, value))
    return fields


def fields_by_number(fields: list[WireField], where: str, known: dict[int, str], repeated: tuple[int, ...] = ()) -> dict:
    """``{name: value or [values]}`` of ``fields``; an unknown field is an error naming it."""
    out: dict[str, Any] = {}
    for field in fields:
        if field.number not in known:
            raise Lc0FormatError(f"{where}: unsupported field {field.number} (this reader supports lc0 classical "
                                 f"SE networks such as maia; convert the network or use another file)")
        name = known[field.number]
        if field.number in repeated:
            out.setdefault(name, []).append(field.value)
        else:
            out[name] = field.value
    return out


__all__ = ["Lc0FormatError", "WireField", "fields_by_number", "parse_message"]
