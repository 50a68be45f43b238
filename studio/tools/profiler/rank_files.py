"""Strict readers for the per-rank files of a profiling folder (CSV, JSON, SQLite tables).

The cluster and memory views add numbers from many files; a missing column or a cut-off row
must not silently become a zero. Every reader here raises a :class:`~studio.core.errors.UserError`
that names the file, the line or table, and what is missing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from studio.core.errors import UserError
from studio.core.safe_read import loads_json, read_text
from studio.tools.profiler.csv_tables import read_rows

EXPORT_AGAIN = "Export the profile again (torch_npu: tensorboard_trace_handler / msprof --export=on); " \
               "a copy cut short in transfer also does this."


def read_json(path: Path) -> Any:
    """A JSON file, or a UserError saying why it cannot be read."""
    try:
        text = read_text(path, Path(path).name, encoding="utf-8-sig")
    except OSError as exc:
        raise UserError(f"Cannot read {Path(path).name}: {exc.strerror}", path, "Check the file is readable.") \
            from exc
    except UnicodeDecodeError as exc:
        raise UserError(f"{Path(path).name} is not UTF-8 text (byte {exc.start} is damaged)", path,
                        EXPORT_AGAIN) from exc
    try:
        return loads_json(text, path, Path(path).name)  # lone surrogates scrubbed, deep nesting refused
    except UserError as exc:
        raise UserError(exc.what, exc.where, EXPORT_AGAIN) from exc


def json_object(value: Any, path: Path, where: str) -> dict:
    """``value`` when it is a JSON object (None: an empty one); a UserError naming ``where`` otherwise."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UserError(f"{Path(path).name}: {where} is {_json_kind(value)}, not an object", path, EXPORT_AGAIN)
    return value


def json_number(value: Any, path: Path, where: str) -> float:
    """``value`` as a number (None or "" count as 0; "12.5" as text is read); a UserError otherwise."""
    if value is None or value == "":
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UserError(f"{Path(path).name}: {where} is {_json_kind(value)}, not a number", path, EXPORT_AGAIN)
    try:
        return float(value)
    except (ValueError, OverflowError):
        raise UserError(f"{Path(path).name}: {where} is not a number ({str(value)[:40]!r})", path,
                        EXPORT_AGAIN) from None


def _json_kind(value: Any) -> str:
    names = {bool: "true/false", int: "a number", float: "a number", str: "text", list: "a list", dict: "an object"}
    return names.get(type(value), "null")


def read_csv(path: Path, required: Iterable[str]) -> list[dict[str, str]]:
    """The rows of a CSV as dicts (cells stripped of msprof's trailing TAB), header checked.

    Raises a UserError naming the file when it is empty, lacks one of ``required`` columns, or
    has a row with fewer cells than the header (a truncated file).
    """
    path = Path(path)
    rows = read_rows(path, EXPORT_AGAIN)
    if not rows or not any(c.strip() for c in rows[0]):
        raise UserError(f"{path.name} is empty", path, EXPORT_AGAIN)
    header = [c.strip() for c in rows[0]]
    missing = [c for c in required if c not in header]
    if missing:
        raise UserError(f"{path.name} lacks the column(s) {', '.join(missing)}", f"{path}, line 1",
                        EXPORT_AGAIN)
    out = []
    for line_no, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) < len(header):
            raise UserError(f"{path.name} is truncated: line {line_no} has {len(row)} of {len(header)} cells",
                            f"{path}, line {line_no}", EXPORT_AGAIN)
        record = {name: row[i].strip().strip('"').strip() for i, name in enumerate(header)}
        record["__line__"] = str(line_no)
        out.append(record)
    return out


def cell_float(row: dict[str, str], column: str, path: Path, *, empty: float | None = None) -> float | None:
    """One numeric cell; ``empty`` for a blank one, a UserError (file, line, column) for text."""
    text = row.get(column, "")
    if text == "" or text.upper() in ("N/A", "NA"):
        return empty
    try:
        return float(text)
    except ValueError:
        raise UserError(f"{Path(path).name}: {column} is not a number ({text!r})",
                        f"{path}, line {row.get('__line__', '?')}", EXPORT_AGAIN) from None


def db_tables(db: sqlite3.Connection) -> set[str]:
    """The table names of an open database."""
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def require_tables(db: sqlite3.Connection, path: Path, names: Iterable[str], what: str) -> None:
    """A UserError naming the database and the tables ``what`` needs that it lacks."""
    try:
        have = db_tables(db)
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{Path(path).name} is not a readable SQLite database: {exc}", path, EXPORT_AGAIN) from exc
    missing = [n for n in names if n not in have]
    if missing:
        raise UserError(f"{Path(path).name} has no {', '.join(missing)} table (needed for {what})", path,
                        EXPORT_AGAIN)


def query(db: sqlite3.Connection, path: Path, sql: str, args: tuple = ()) -> list[tuple]:
    """Rows of ``sql``; a UserError naming the database when a column is missing or the file is damaged."""
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.DatabaseError as exc:
        raise UserError(f"Cannot read {Path(path).name}: {exc}", path, EXPORT_AGAIN) from exc
