"""A small protobuf wire-format decoder (no generated code, no protobuf runtime needed).

:func:`fields` splits a message into ``(field_number, wire_type, value)``; a :class:`Schema`
turns that into a dict by field names, decoding nested messages and packed repeated varints.
Every read is bounds-checked: a truncated or corrupt message raises :class:`WireError` with the
byte offset, which the callers turn into a UserError naming the file.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


class WireError(ValueError):
    """Malformed protobuf data at ``offset`` (relative to the message start)."""

    def __init__(self, message: str, offset: int):
        super().__init__(f"{message} at byte {offset}")
        self.offset = offset


def read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode one varint at ``pos``; returns (value, next position)."""
    result = shift = 0
    start = pos
    while True:
        if pos >= len(data):
            raise WireError("truncated varint", start)
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireError("varint longer than 10 bytes", start)


def fields(data: bytes | memoryview, base: int = 0) -> Iterator[tuple[int, int, object, int]]:
    """Yield ``(number, wire_type, value, offset)``; LENGTH values are memoryviews."""
    view = memoryview(data)
    pos = 0
    while pos < len(view):
        start = pos
        key, pos = read_varint(view, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0", base + start)
        if wire == VARINT:
            value, pos = read_varint(view, pos)
        elif wire == FIXED64:
            if pos + 8 > len(view):
                raise WireError("truncated fixed64", base + pos)
            value = struct.unpack_from("<Q", view, pos)[0]
            pos += 8
        elif wire == FIXED32:
            if pos + 4 > len(view):
                raise WireError("truncated fixed32", base + pos)
            value = struct.unpack_from("<I", view, pos)[0]
            pos += 4
        elif wire == LENGTH:
            size, pos = read_varint(view, pos)
            if pos + size > len(view):
                raise WireError(f"length-delimited field {number} of {size} bytes runs past the end", base + pos)
            value = view[pos:pos + size]
            pos += size
        else:
            raise WireError(f"unsupported wire type {wire} (field {number})", base + start)
        yield number, wire, value, base + start


@dataclass
class Schema:
    """Field number -> (name, kind, repeated); kind is 'int', 'string', 'bytes' or a Schema."""

    name: str
    table: dict[int, tuple[str, object, bool]] = field(default_factory=dict)

    def decode(self, data: bytes | memoryview, base: int = 0) -> dict:
        """Decode ``data`` into a dict; unknown fields are skipped (forward compatible)."""
        out: dict = {}
        for name, _kind, repeated in self.table.values():
            if repeated:
                out[name] = []
        for number, wire, value, offset in fields(data, base):
            spec = self.table.get(number)
            if spec is None:
                continue
            name, kind, repeated = spec
            if isinstance(kind, Schema):
                if wire != LENGTH:
                    raise WireError(f"{self.name}.{name} should be a message", offset)
                decoded = kind.decode(value, offset)
            elif kind == "string":
                decoded = bytes(value).decode("utf-8", "replace") if wire == LENGTH else str(value)
            elif kind == "bytes":
                decoded = bytes(value) if wire == LENGTH else b""
            elif wire == LENGTH:  # packed repeated varints
                items, pos = [], 0
                while pos < len(value):
                    item, pos = read_varint(value, pos)
                    items.append(item)
                if repeated:
                    out[name].extend(items)
                    continue
                decoded = items[-1] if items else 0
            else:
                decoded = value
            if repeated:
                out[name].append(decoded)
            else:
                out[name] = decoded
        return out


# ----------------------------------------------------------- encoder (for writers and tests)
def encode_varint(value: int) -> bytes:
    """Encode a non-negative int (negative int32/64 as 10-byte two's complement)."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_field(number: int, value: int | bytes | str) -> bytes:
    """One field: ints as varints, bytes / str / encoded messages as length-delimited."""
    if isinstance(value, int):
        return encode_varint(number << 3 | VARINT) + encode_varint(value)
    if isinstance(value, str):
        value = value.encode("utf-8")
    return encode_varint(number << 3 | LENGTH) + encode_varint(len(value)) + bytes(value)
