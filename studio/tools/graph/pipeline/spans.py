"""A JSON reader that remembers where every value sits in the text.

``json.loads`` gives values but not positions. To name the line of a finding and to change one
value while keeping the rest of a hand-written file byte for byte (key order, indentation, line
endings, comments of layout), the pipeline tools need the span of each value. Pipelines are a few
KiB, so a small recursive reader is fast enough.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from studio.core.errors import UserError

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"
MAX_DEPTH = 200  # deeper than any real pipeline; keeps a hostile file from exhausting the stack


@dataclass
class Span:
    """One JSON value: where it starts and ends in the text, and its Python value.

    ``members`` holds an object's (key, key start, value span) triples in file order; ``items``
    an array's element spans. ``value`` is the plain Python value of the whole span.
    """

    start: int
    end: int
    value: Any
    members: list[tuple[str, int, Span]] = field(default_factory=list)
    items: list[Span] = field(default_factory=list)

    def member(self, key: str) -> Span | None:
        """The value of ``key`` in this object (the last one, as json.loads keeps), or None."""
        found = None
        for name, _start, span in self.members:
            if name == key:
                found = span
        return found


def line_of(text: str, offset: int) -> int:
    """1-based line number of ``offset`` (a lone CR, an LF or a CRLF ends a line)."""
    return text.count("\n", 0, offset) + 1


def parse(text: str, where: str) -> Span:
    """Parse ``text`` into a span tree; a UserError names the line and column of a syntax error."""
    reader = _Reader(text, where)
    pos = reader.skip(1 if text.startswith("\ufeff") else 0)
    span = reader.value(pos, 0)
    end = reader.skip(span.end)
    if end != len(text):
        reader.fail("Extra text after the end of the JSON document", end)
    return span


class _Reader:
    def __init__(self, text: str, where: str):
        self.text = text
        self.where = where

    def fail(self, what: str, pos: int) -> None:
        line = line_of(self.text, pos)
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        raise UserError(what, f"{self.where}, line {line}, column {column}",
                        "Fix the JSON syntax (a missing comma or quote is the usual cause).")

    def skip(self, pos: int) -> int:
        text = self.text
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        return pos

    def value(self, pos: int, depth: int) -> Span:
        if depth > MAX_DEPTH:
            self.fail(f"JSON nested deeper than {MAX_DEPTH} levels", pos)
        if pos >= len(self.text):
            self.fail("The JSON ends too early (the file may be truncated)", pos)
        char = self.text[pos]
        if char == "{":
            return self.object(pos, depth)
        if char == "[":
            return self.array(pos, depth)
        try:
            value, end = _DECODER.raw_decode(self.text, pos)
        except json.JSONDecodeError as exc:
            self.fail(f"Not valid JSON: {exc.msg}", exc.pos)
        return Span(pos, end, value)

    def object(self, start: int, depth: int) -> Span:
        members: list[tuple[str, int, Span]] = []
        pos = self.skip(start + 1)
        if self.text.startswith("}", pos):
            return Span(start, pos + 1, {}, members)
        while True:
            if not self.text.startswith('"', pos):
                self.fail("Expected a quoted key", pos)
            key = self.value(pos, depth + 1)
            pos = self.skip(key.end)
            if not self.text.startswith(":", pos):
                self.fail("Expected ':' after a key", pos)
            member = self.value(self.skip(pos + 1), depth + 1)
            members.append((key.value, key.start, member))
            pos = self.skip(member.end)
            if self.text.startswith(",", pos):
                pos = self.skip(pos + 1)
                continue
            if self.text.startswith("}", pos):
                return Span(start, pos + 1, {k: s.value for k, _p, s in members}, members)
            self.fail("Expected ',' or '}' in an object", pos)

    def array(self, start: int, depth: int) -> Span:
        items: list[Span] = []
        pos = self.skip(start + 1)
        if self.text.startswith("]", pos):
            return Span(start, pos + 1, [], items=items)
        while True:
            item = self.value(pos, depth + 1)
            items.append(item)
            pos = self.skip(item.end)
            if self.text.startswith(",", pos):
                pos = self.skip(pos + 1)
                continue
            if self.text.startswith("]", pos):
                return Span(start, pos + 1, [s.value for s in items], items=items)
            self.fail("Expected ',' or ']' in an array", pos)
