"""Hostile inputs for every reader: what a path or a file can be besides a damaged copy.

Byte mutations (``mutate.py``) damage a real file; these change what the file *is* or what its
values are, the ways that hung or crashed readers before:

- ``fifo``: the file is a named pipe with no writer (a blocking open waits forever);
- ``devzero``: the file is a symbolic link to ``/dev/zero`` (a read never ends);
- ``sparse``: a regular file that claims 8 GiB but takes no disk (reading it whole exhausts memory);
- ``surrogates``: lone UTF-16 surrogates in strings (JSON ``"\\ud800"``, or their UTF-8 bytes in
  text), valid JSON that no terminal or file can encode;
- ``typeswap``: values of another type (a number as text, text as a number, ``true``, ``NaN``, a
  400-digit number, a 1 MB string, a list where a table was);
- ``deep``: 500-deep nesting inside the document (JSON lists, TOML inline tables);
- ``hugelist``: the document's longest list grown to 200,000 elements (CSV: 20,000 rows).

``hostile(data, kind, seed)`` returns (label, payload) pairs, where payload is the mutant's bytes or
one of the special kinds above (``"fifo"``, ``"devzero"``, ``"sparse"``), which :func:`place`
creates at the reader's path. Seeded: a failure reproduces from its label.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import random
import re
import tomllib
from pathlib import Path
from typing import Any

SPECIAL = ("fifo", "devzero", "sparse")
SPARSE_SIZE = 8 << 30
DEPTH = 500
HUGE_LIST = 200_000
HUGE_ROWS = 20_000
BIG_FIELD = 1 << 20
LONG_NUMBER = "9" * 400

_WILD = [True, math.nan, "text", 1e308, -1, [], {}, LONG_NUMBER, 0, "x" * BIG_FIELD]


def place(path: Path, payload: bytes | str) -> None:
    """Put ``payload`` at ``path``: its bytes, or a FIFO, a link to /dev/zero, an 8 GiB sparse file."""
    path.unlink(missing_ok=True)
    if payload == "fifo":
        os.mkfifo(path)
    elif payload == "devzero":
        path.symlink_to("/dev/zero")
    elif payload == "sparse":
        with path.open("wb") as handle:
            handle.truncate(SPARSE_SIZE)
    else:
        path.write_bytes(payload)


# ---------------------------------------------------------------- JSON documents
def _walk(value: Any, fn) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, fn) for v in value]
    return fn(value)


def _json_surrogates(data: Any) -> bytes:
    marked = _walk(data, lambda v: "\ud800" + v + "\udfff" if isinstance(v, str) else v)
    if isinstance(marked, dict):  # keys too (op names are keys in some files)
        marked = {("\udc80" + k if i % 2 else k): v for i, (k, v) in enumerate(marked.items())}
    return json.dumps(marked).encode()  # ensure_ascii writes them as \ud800 escapes


def _swap(rng: random.Random, value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return rng.choice(["yes", 1e308, []])
    if isinstance(value, (int, float)):
        return rng.choice([str(value), "text", True, math.nan, LONG_NUMBER, None, [value]])
    if isinstance(value, str):
        return rng.choice([42, 1e308, True, math.nan, None, {"a": value}, "x" * BIG_FIELD if rng.random() < 0.1 else 7])
    return value


def _json_typeswap(rng: random.Random, data: Any, rate: float) -> bytes:
    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: (walk(v) if rng.random() > rate else _swap_any(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) if rng.random() > rate else _swap_any(v) for v in value]
        return _swap(rng, value) if rng.random() < rate else value

    def _swap_any(value: Any) -> Any:
        if isinstance(value, dict):
            return list(value.values())[:3]
        if isinstance(value, list):
            return {"0": value[:1]} if rng.random() < 0.5 else 5
        return _swap(rng, value)

    return json.dumps(walk(data)).encode()  # NaN is written as NaN, as Python's json reads it


def _lists(value: Any, out: list) -> list:
    if isinstance(value, list):
        out.append(value)
    for child in (value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()):
        _lists(child, out)
    return out


def _json_hugelist(data: Any) -> bytes:
    lists = [lst for lst in _lists(data, []) if lst]
    if lists:
        longest = max(lists, key=len)
        items = list(longest)
        longest[:] = [items[i % len(items)] for i in range(HUGE_LIST)]
    elif isinstance(data, dict):
        data["extra"] = list(range(HUGE_LIST))
    return json.dumps(data).encode()


def _json_deep(data: Any) -> bytes:
    deep = json.loads("[" * DEPTH + "1" + "]" * DEPTH)
    if isinstance(data, dict) and data:
        key = next(iter(data))
        data[key] = deep
        return json.dumps(data).encode()
    return ("[" * DEPTH + "]" * DEPTH).encode()


def _json(data: bytes, rng: random.Random) -> list[tuple[str, bytes]]:
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except ValueError:
        return []
    return [("surrogates", _json_surrogates(doc)),
            ("typeswap30", _json_typeswap(rng, json.loads(data.decode("utf-8-sig")), 0.3)),
            ("typeswap100", _json_typeswap(rng, json.loads(data.decode("utf-8-sig")), 1.0)),
            ("deep", _json_deep(json.loads(data.decode("utf-8-sig")))),
            ("hugelist", _json_hugelist(json.loads(data.decode("utf-8-sig"))))]


# ---------------------------------------------------------------- TOML settings
def _toml(data: bytes, rng: random.Random) -> list[tuple[str, bytes]]:
    import tomli_w

    doc = tomllib.loads(data.decode())
    swapped = _walk(doc, lambda v: _swap(rng, v))
    swapped = _walk(swapped, lambda v: "nan-free" if v is None else v)
    deep = "{a = " * DEPTH + "1" + "}" * DEPTH
    text = data.decode()
    first_table = re.search(r"^\[\[?[^\]]+\]\]?\s*$", text, re.M)
    cut = first_table.end() if first_table else 0
    nested = (text[:cut] + f"\ndeep = {deep}\n" + text[cut:]).encode()
    huge = data + b"\n[huge]\nitems = [" + b"1, " * HUGE_LIST + b"]\n"
    return [("surrogates", data.replace(b'"', b'"\xed\xa0\x80', 2) + b'\n# \xed\xa0\x80\n'),
            ("typeswap", tomli_w.dumps(swapped).encode()),
            ("deep", nested), ("hugelist", huge)]


# ---------------------------------------------------------------- CSV tables and line-based text
def _csv(data: bytes, rng: random.Random) -> list[tuple[str, bytes]]:
    text = data.decode("utf-8-sig", "replace")
    rows = list(csv.reader(io.StringIO(text)))
    if len(rows) < 2:
        return []

    def write(table: list[list[str]]) -> bytes:
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(table)
        return out.getvalue().encode()

    def swap_cell(cell: str) -> str:
        try:
            float(cell)
            return rng.choice(["text", "nan", "true", "-"])
        except ValueError:
            return LONG_NUMBER

    swapped = [rows[0]] + [[swap_cell(c) for c in row] for row in rows[1:]]
    big = [rows[0]] + [list(r) for r in rows[1:]]
    big[1][0] = "x" * BIG_FIELD
    body = rows[1:] or [rows[0]]
    huge = [rows[0]] + [body[i % len(body)] for i in range(HUGE_ROWS)]
    return [("surrogates", write(rows).replace(b",", b",\xed\xa0\x80")),
            ("typeswap", write(swapped)), ("bigfield", write(big)), ("hugelist", write(huge))]


def _lines(data: bytes, rng: random.Random) -> list[tuple[str, bytes]]:
    """Line-based text (AIPP .cfg, ssh_config): values of the other type, a 1 MB value, surrogates."""
    def swap(match: re.Match) -> str:
        value = match.group(2)
        return match.group(1) + ("text" if re.fullmatch(r"-?[\d.]+", value) else LONG_NUMBER)

    text = data.decode("utf-8", "replace")
    swapped = re.sub(r"(?m)^(\s*\w+\s*[:= ]\s*)(\S+)\s*$", swap, text)
    big = re.sub(r"(?m)^(\s*\w+\s*[:= ]\s*)(\S+)\s*$", lambda m: m.group(1) + "9" * BIG_FIELD, text, count=1)
    huge = text + "\n" + "\n".join(f"# filler {i}" for i in range(HUGE_LIST)) + "\n"
    return [("surrogates", data.replace(b"\n", b"\xed\xa0\x80\n", 3)),
            ("typeswap", swapped.encode()), ("bigfield", big.encode()), ("hugelist", huge.encode())]


def hostile(data: bytes, kind: str, seed: int) -> list[tuple[str, bytes | str]]:
    """The hostile variants of a seed file: ``kind`` is "json", "toml", "csv", "lines" or "binary"."""
    rng = random.Random(seed)
    out: list[tuple[str, bytes | str]] = [(name, name) for name in SPECIAL]
    out += {"json": _json, "toml": _toml, "csv": _csv, "lines": _lines, "binary": lambda d, r: []}[kind](data, rng)
    return out
