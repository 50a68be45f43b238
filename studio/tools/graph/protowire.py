"""A tiny protobuf wire-format decoder (no schema, no generated code).

Used for the OM MODEL_DEF partition (``ge.proto.ModelDef``): no Ascend package exists here and
the schema is small, so we decode fields by number. A message decodes to ``{field: [values]}``
where a value is an ``int`` (varint / fixed) or a ``memoryview`` (length-delimited: bytes, string,
sub-message or packed repeated scalars — the caller knows which).
"""

from __future__ import annotations

import struct


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Decode one varint at ``pos``; return (value, next position)."""
    result = shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise WireError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise WireError("varint too long")


def decode(buf) -> dict[int, list]:
    """Decode one message into ``{field_number: [value, ...]}`` in wire order."""
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    fields: dict[int, list] = {}
    pos, end = 0, len(view)
    while pos < end:
        tag, pos = read_varint(view, pos)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise WireError("field number 0")
        if wire == 0:
            value, pos = read_varint(view, pos)
        elif wire == 2:
            size, pos = read_varint(view, pos)
            if pos + size > end:
                raise WireError(f"field {number} runs past the end ({size} bytes at {pos} of {end})")
            value = view[pos:pos + size]
            pos += size
        elif wire == 5:
            if pos + 4 > end:
                raise WireError("truncated fixed32")
            value = int.from_bytes(view[pos:pos + 4], "little")
            pos += 4
        elif wire == 1:
            if pos + 8 > end:
                raise WireError("truncated fixed64")
            value = int.from_bytes(view[pos:pos + 8], "little")
            pos += 8
        else:
            raise WireError(f"unsupported wire type {wire} for field {number}")
        fields.setdefault(number, []).append(value)
    return fields


def text(fields: dict, number: int, default: str = "") -> str:
    """A string field (last value wins, as in protobuf)."""
    values = fields.get(number)
    return bytes(values[-1]).decode("utf-8", "replace") if values else default


def texts(fields: dict, number: int) -> list[str]:
    """A repeated string field."""
    return [bytes(v).decode("utf-8", "replace") for v in fields.get(number, ())]


def integer(fields: dict, number: int, default: int = 0) -> int:
    """A varint field, read as signed 64-bit."""
    values = fields.get(number)
    if not values:
        return default
    value = values[-1]
    if isinstance(value, memoryview):  # a packed single value, unusual but legal
        return packed_ints(value)[-1] if len(value) else default
    return signed(value)


def signed(value: int) -> int:
    """Two's complement of a 64-bit varint (int64 fields encode negatives as 10-byte varints)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def ints(fields: dict, number: int) -> list[int]:
    """A repeated int64 field, packed or not."""
    out: list[int] = []
    for value in fields.get(number, ()):
        if isinstance(value, memoryview):
            out.extend(packed_ints(value))
        else:
            out.append(signed(value))
    return out


def packed_ints(view) -> list[int]:
    """Decode packed varints."""
    out, pos, end = [], 0, len(view)
    while pos < end:
        value, pos = read_varint(view, pos)
        out.append(signed(value))
    return out


def floats(fields: dict, number: int) -> list[float]:
    """A repeated float field, packed or not."""
    out: list[float] = []
    for value in fields.get(number, ()):
        if isinstance(value, memoryview):
            out.extend(struct.unpack(f"<{len(value) // 4}f", value[:len(value) // 4 * 4]))
        else:
            out.append(struct.unpack("<f", value.to_bytes(4, "little"))[0])
    return out


def float32(fields: dict, number: int, default: float = 0.0) -> float:
    """A single float field."""
    values = floats(fields, number)
    return values[-1] if values else default
