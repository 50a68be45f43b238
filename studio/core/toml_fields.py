"""Typed fields of hand-edited TOML files, with messages that name the file, line and key.

``tomllib`` gives any type for any key; a settings file edited by hand can hold ``port = "abc"``,
``hosts = 5`` or ``excludes = "build"``. :class:`TomlPlace` finds where a table or key is written
(best effort: the header line, then the key's line below it) and the readers here raise a
:class:`~studio.core.errors.UserError` saying which key has which wrong value and what is expected.
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from studio.core.errors import UserError

_HEADER = re.compile(r"^\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*(?:"([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*=""")  # a key written at the start of a line
_TYPE_NAMES = {str: "text", int: "a whole number", float: "a number", bool: "true/false", list: "a list",
               dict: "a table"}


def type_name(value: Any) -> str:
    """How a TOML value's type reads in a message."""
    return _TYPE_NAMES.get(type(value), type(value).__name__)


_BARE_PATH = re.compile(r"^[A-Za-z0-9_-]+(?:\s*\.\s*[A-Za-z0-9_-]+)*$")


def _header_path(inner: str) -> tuple[str, ...] | None:
    if _BARE_PATH.match(inner):  # the common case, without a parser
        return tuple(part.strip() for part in inner.split("."))
    try:
        data = tomllib.loads(f"{inner} = 0")  # the header's dotted key, quotes and all, read by TOML itself
    except tomllib.TOMLDecodeError:
        return None
    path: list[str] = []
    while isinstance(data, dict) and len(data) == 1:
        key, data = next(iter(data.items()))
        path.append(key)
    return tuple(path)


class TomlPlace:
    """Names places in one TOML file: ``hosts.toml, line 4: [hosts.a] port``.

    The file's headers and the keys under each are indexed once, on the first lookup: every key of
    every entry is placed as it is read, so a scan of the file per lookup made reading a file of
    2,000 hosts quadratic (minutes).
    """

    def __init__(self, path: Path, text: str | None = None):
        self.path = Path(path)
        if text is None:
            from studio.core.safe_read import SETTINGS_CAP, read_text

            try:
                text = read_text(self.path, "settings file", SETTINGS_CAP, errors="replace")
            except (OSError, UserError):  # the reader says what is wrong with the file; places lack lines
                text = ""
        self._lines = text.splitlines()
        self._index: dict[tuple[str, ...], list[tuple[int, dict[str, int]]]] | None = None

    def _build(self) -> dict[tuple[str, ...], list[tuple[int, dict[str, int]]]]:
        """table -> [(header line, {key: line}) per occurrence], in file order."""
        index: dict[tuple[str, ...], list[tuple[int, dict[str, int]]]] = {}
        keys: dict[str, int] = {}  # the keys of the table being read (those above any header: dropped)
        for number, line in enumerate(self._lines, start=1):
            match = _HEADER.match(line)
            if match:
                keys = {}
                table = _header_path(match.group(2))
                if table is not None:
                    index.setdefault(table, []).append((number, keys))
                continue
            key = _KEY.match(line)
            if key:
                keys.setdefault(next(g for g in key.groups() if g is not None), number)
        return index

    def line_of(self, table: tuple[str, ...], key: str | None = None, nth: int = 0) -> int | None:
        """The line of ``key`` in table ``table`` (the ``nth`` ``[[table]]`` for arrays), or of the
        table's header when ``key`` is None (or not written on a line of its own); None when the
        table is not written as a header (inline)."""
        if self._index is None:
            self._index = self._build()
        found = self._index.get(tuple(table), [])
        if nth >= len(found):
            return None
        start, keys = found[nth]
        return start if key is None else keys.get(key, start)

    def __call__(self, table: tuple[str, ...], key: str | None = None, nth: int | None = None) -> str:
        """``file, line N: [table] key``; ``nth`` names an entry of an array of tables (``[[run]]``)."""
        line = self.line_of(table, key, nth or 0)
        name = "[" + ".".join(table) + "]" if table else "top level"
        if nth is not None:
            name = f"[[{'.'.join(table)}]] number {nth + 1}"
        at = f", line {line}" if line else ""
        return f"{self.path}{at}: {name}" + (f" {key}" if key else "")


def expect_table(value: Any, where: str, example: str) -> dict:
    """``value`` when it is a table; a UserError naming ``where`` otherwise."""
    if not isinstance(value, dict):
        raise UserError(f"Expected a table here, found {type_name(value)} ({_short(value)})", where,
                        f"Write it as a table, e.g. {example}.")
    return value


def expect_text(table: dict, key: str, where: str, required: bool = False) -> str | None:
    """``table[key]`` as text (None when absent and not ``required``)."""
    if key not in table:
        if required:
            raise UserError(f"The key {key!r} is missing", where, f'Add {key} = "..." to this table.')
        return None
    value = table[key]
    if not isinstance(value, str):
        raise UserError(f"{key} is {type_name(value)} ({_short(value)}), not text", where,
                        f'Write it in quotes: {key} = "...".')
    if "\0" in value:
        raise UserError(f"{key} holds a NUL character (\\u0000)", where, "Remove it: no program can take it.")
    return value


def expect_int(table: dict, key: str, where: str, low: int, high: int, example: int | None = None) -> int | None:
    """``table[key]`` as a whole number in ``[low, high]`` (None when absent)."""
    if key not in table:
        return None
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{key} is {type_name(value)} ({_short(value)}), not a whole number", where,
                        f"Write a number without quotes, e.g. {key} = {example if example is not None else max(low, 1)}.")
    if not low <= value <= high:
        raise UserError(f"{key} = {value} is out of range", where, f"Use a number from {low} to {high}.")
    return value


def expect_text_list(table: dict, key: str, where: str) -> list[str]:
    """``table[key]`` as a list of text ([] when absent)."""
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{key} must be a list of text, found {_short(value)}", where,
                        f'Write {key} = ["...", "..."].')
    return list(value)


def expect_text_map(table: dict, key: str, where: str) -> dict[str, str]:
    """``table[key]`` as a table of text values ({} when absent)."""
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise UserError(f"{key} must be a table, found {type_name(value)} ({_short(value)})", where,
                        f'Write {key} = {{ NAME = "value" }}.')
    for name, item in value.items():
        if isinstance(item, (dict, list)) or (isinstance(item, float) and not math.isfinite(item)):
            raise UserError(f"{key}.{name} is {type_name(item)} ({_short(item)}), not text", where,
                            f'Write {key} = {{ {name} = "value" }}.')
    return {str(k): _scalar_text(v) for k, v in value.items()}


def reject_misspelled(table: dict, known: set[str], where: str) -> None:
    """A key that is not one of ``known`` but close to one is a typo (``prot`` for ``port``): say so.
    Other unknown keys are left to the caller (files may carry keys newer versions add)."""
    for key in table:
        if key in known:
            continue
        close = difflib.get_close_matches(key.lower(), sorted(known), n=1, cutoff=0.75)
        if close:
            raise UserError(f"Unknown key {key!r} (did you mean {close[0]!r}?)", where,
                            f"Rename it to {close[0]}, or remove it.")


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # as a shell script would expect, not Python's True
    return str(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
