"""Indented JSON text, byte for byte what ``json.dumps(to_json(obj), indent=N)`` writes, but fast.

The standard library writes indented JSON with its pure-Python encoder (its C encoder only writes
compact text), one generator step per value: 140,000 idle gaps of 11 keys took two seconds, and
converting them with ``to_json`` first another second. Here the big lists that results are made of
(rows: dicts of one shape) are written column by column: each column's values are turned into
text by one C-level ``map`` when they share a type, and each row is one ``%`` of a template that
holds its keys and indentation. Everything else is written by a small recursive function.

Objects that are not JSON data (dataclasses, paths, enums, numpy values, sets, dicts with keys that
are not text) are handed to the caller's ``convert`` (:mod:`studio.core.serial` gives its own), which
turns one object into a dict, a list or a scalar; their insides are then written here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from json.encoder import encode_basestring_ascii as _text
from operator import itemgetter
from typing import Any

from studio.core.gc_pause import paused_gc

# A list shorter than this is written item by item: the column path only pays off on many rows.
COLUMN_ROWS = 32


def _float(value: float) -> str:
    # to_json writes a float that is not finite as its text ("nan", "inf", "-inf")
    return float.__repr__(value) if math.isfinite(value) else _text(str(value))


def _bool(value: bool) -> str:
    return "true" if value else "false"


# Exact types whose values are written without looking inside them.
_SCALAR: dict[type, Callable[[Any], str]] = {str: _text, int: int.__repr__, float: _float, bool: _bool,
                                             type(None): lambda _value: "null"}
_NUMERIC = {int, float, bool, type(None)}


class Writer:
    """Writes JSON-ready data (and what ``convert`` makes JSON-ready) as ``json.dumps(indent=indent)``."""

    def __init__(self, indent: int, convert: Callable[[Any], Any]):
        self.indent = " " * indent
        self.convert = convert

    def text(self, obj: Any) -> str:
        """``obj`` as indented JSON text."""
        parts: list[str] = []
        with paused_gc():  # millions of new strings, no cycle among them
            self._value(obj, 0, parts)
        return "".join(parts)

    def _value(self, obj: Any, depth: int, out: list[str]) -> None:
        """Append ``obj``'s text to ``out``; ``depth`` is the indentation of the line it starts on."""
        # The order of the standard encoder's isinstance tests, so subclasses are written as it does.
        if isinstance(obj, str):
            out.append(_text(obj))
        elif obj is None or obj is True or obj is False:
            out.append("null" if obj is None else _bool(obj))
        elif isinstance(obj, int):
            out.append(int.__repr__(obj))
        elif isinstance(obj, float):
            out.append(_float(obj))
        elif isinstance(obj, dict):
            if not all(type(key) is str or isinstance(key, str) for key in obj):
                self._value(self.convert(obj), depth, out)
            else:
                self._dict(obj, depth, out)
        elif isinstance(obj, (list, tuple)):
            self._list(obj, depth, out)
        else:
            self._value(self.convert(obj), depth, out)

    def _dict(self, obj: dict, depth: int, out: list[str]) -> None:
        if not obj:
            out.append("{}")
            return
        inner = "\n" + self.indent * (depth + 1)
        out.append("{" + inner)
        first = True
        for key, value in obj.items():
            if not first:
                out.append("," + inner)
            first = False
            out.append(_text(key) + ": ")
            self._value(value, depth + 1, out)
        out.append("\n" + self.indent * depth + "}")

    def _list(self, obj: list | tuple, depth: int, out: list[str]) -> None:
        if not obj:
            out.append("[]")
            return
        inner = "\n" + self.indent * (depth + 1)
        rows = self._rows(obj, depth + 1) if len(obj) >= COLUMN_ROWS else None
        out.append("[" + inner)
        if rows is not None:
            out.append(("," + inner).join(rows))
        else:
            first = True
            for value in obj:
                if not first:
                    out.append("," + inner)
                first = False
                self._value(value, depth + 1, out)
        out.append("\n" + self.indent * depth + "]")

    def _rows(self, items: list | tuple, depth: int) -> list[str] | None:
        """Each of ``items`` as text when they are plain dicts with the same keys (in the same
        order), written column by column; None otherwise (the caller writes them one by one)."""
        if set(map(type, items)) != {dict}:
            return None
        shapes = set(map(tuple, items))
        if len(shapes) != 1:
            return None
        keys = shapes.pop()
        if not keys or not all(type(key) is str for key in keys):
            return None
        # one C-level pass per key (zip(*rows) would first build every row as a tuple of arguments)
        texts = [self._column(list(map(itemgetter(key), items)), depth + 1) for key in keys]
        inner = "\n" + self.indent * (depth + 1)
        template = ("{" + inner + ("," + inner).join(_text(key).replace("%", "%%") + ": %s" for key in keys)
                    + "\n" + self.indent * depth + "}")
        return [template % row for row in zip(*texts)]

    def _column(self, values, depth: int) -> list[str]:
        """The text of each of ``values`` (one key of every row), at indentation ``depth``."""
        kinds = set(map(type, values))
        if kinds == {str}:
            return list(map(_text, values))
        if kinds <= _NUMERIC:
            # the C encoder writes numbers, true, false and null as the indented writer does, and
            # a number's text holds no ", ": the list's text split there is each value's text
            try:
                return json.dumps(values, allow_nan=False)[1:-1].split(", ")
            except ValueError:
                pass  # a float that is not finite: written as its text below
        if kinds <= _SCALAR.keys():
            return [_SCALAR[type(v)](v) for v in values]
        return [self._text_at(value, depth) for value in values]

    def _text_at(self, value: Any, depth: int) -> str:
        """``value``'s text at indentation ``depth`` (an empty dict or list, common in rows, at once)."""
        kind = type(value)
        if (kind is dict or kind is list) and not value:
            return "{}" if kind is dict else "[]"
        scalar = _SCALAR.get(kind)
        if scalar is not None:
            return scalar(value)
        parts: list[str] = []
        self._value(value, depth, parts)
        return "".join(parts)
