"""What the free-gap analysis reads of one rank: its device's busy time and each device task's
dispatch chain (the PyTorch op that asked for it, the CANN call that launched it).

Two sources, the same columns:

- the db export (``ascend_pytorch_profiler_<rank>.db``), with msprof-analyze's ``free_analysis``
  queries: busy = compute tasks (``TASK`` joined to ``COMPUTE_TASK_INFO``) and communication ops
  (``COMMUNICATION_OP``); every ``TASK`` row joined to its ``CANN_API`` call by ``connectionId`` and
  to its ``PYTORCH_API`` op through ``CONNECTION_IDS`` (left joins: one row per match, as the recipe);
- the text export (``trace_view.json``): busy = the ``Overlap Analysis`` lane's *Computing* and
  *Communication* slices (msprof's own merge of the same tasks and ops); every ``Ascend Hardware``
  task joined to the ``CANN`` call of its ``connection_id``, and to the ``Python`` op its
  ``async_npu`` flow starts from (msprof-analyze's recipe reads only the db export).

Times are integer nanoseconds on the rank's own clock (the text export's microsecond strings are
read digit by digit: a float would lose the last hundreds of ns of an epoch time; fractions of a
ns are cut, as msprof cuts them, so a task ends where its Overlap Analysis slice does).
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from studio.core.errors import UserError
from studio.tools.profiler.cluster.free_events import ns, read_events
from studio.tools.profiler.db_reader import open_readonly
from studio.tools.profiler.rank_files import EXPORT_AGAIN, db_tables

DB_TABLES = ("TASK", "COMPUTE_TASK_INFO", "COMMUNICATION_OP", "CANN_API", "PYTORCH_API", "CONNECTION_IDS",
             "STRING_IDS")
_BUSY = ("SELECT t.startNs, t.endNs FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId "
         "UNION ALL SELECT startNs, endNs FROM COMMUNICATION_OP")
_LINKS = """
    SELECT s.value, t.startNs, t.endNs, a.startNs, a.endNs, p.startNs, p.endNs
    FROM TASK t
    LEFT JOIN CANN_API a ON t.connectionId = a.connectionId
    LEFT JOIN STRING_IDS s ON t.taskType = s.id
    LEFT JOIN CONNECTION_IDS c ON c.connectionId = t.connectionId
    LEFT JOIN PYTORCH_API p ON p.connectionId = c.id
    ORDER BY t.startNs"""
_TASK_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")  # the text export names non-kernel tasks by their type


@dataclass
class DeviceTimeline:
    """One rank's busy intervals (merged, sorted) and its device tasks' dispatch chains.

    ``cann_*`` and ``py_*`` hold 0 where a task has no CANN call or no PyTorch op (``has_cann``,
    ``has_py`` say which)."""

    source: str
    busy_start: np.ndarray
    busy_end: np.ndarray
    task_type: np.ndarray      # object array of str
    task_ts: np.ndarray
    task_end: np.ndarray
    cann_ts: np.ndarray
    cann_end: np.ndarray
    py_ts: np.ndarray
    py_end: np.ndarray
    has_cann: np.ndarray
    has_py: np.ndarray


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Overlapping or touching intervals merged (a next start equal to the running end joins it,
    as the recipe's ``startNs > MAX(endNs)`` test)."""
    if not len(starts):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    running = np.maximum.accumulate(ends)
    new = np.ones(len(starts), bool)
    new[1:] = starts[1:] > running[:-1]
    group = np.cumsum(new) - 1
    out_end = np.full(group[-1] + 1, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(out_end, group, ends)
    return starts[new], out_end


def db_usable(path: Path) -> bool:
    """True when the profiler db holds every table the analysis reads."""
    with open_readonly(path) as db:
        return set(DB_TABLES) <= db_tables(db)


def from_db(path: Path) -> DeviceTimeline:
    """The rank's timeline from its ``ascend_pytorch_profiler_<rank>.db``.

    Read in chunks straight into columns (a task's type as a code into the types seen): a rank of
    millions of tasks never sits in memory as a list of row tuples."""
    with open_readonly(path) as db:
        busy = _chunked(db, path, _BUSY, 2)
        types: dict[str, int] = {}
        links = _chunked(db, path, _LINK_COLUMNS, 9, lambda value: types.setdefault(str(value or ""), len(types)))
    names = np.empty(len(types), object)
    names[list(types.values())] = list(types)
    return DeviceTimeline("ascend_pytorch_profiler db", *merge(busy[:, 0], busy[:, 1]), names[links[:, 0]],
                          links[:, 1], links[:, 2], links[:, 3], links[:, 4], links[:, 5], links[:, 6],
                          links[:, 7].astype(bool), links[:, 8].astype(bool))


# The dispatch chain per task, as integer columns: a CANN call's times 0 where there is none, a
# PyTorch op's (kept as text) cast exactly to integers, NULL and "" meaning "no op" as the recipe's
# test of pytorch_ts.
_LINK_COLUMNS = f"""
    SELECT type, startNs, endNs, CASE WHEN has_cann THEN cann_ts ELSE 0 END, CASE WHEN has_cann THEN cann_end ELSE 0 END,
           CASE WHEN has_py THEN CAST(py_ts AS INTEGER) ELSE 0 END, CASE WHEN has_py THEN CAST(py_end AS INTEGER) ELSE 0 END,
           has_cann, has_py
    FROM (SELECT s.value AS type, t.startNs, t.endNs, a.startNs AS cann_ts, a.endNs AS cann_end,
                 p.startNs AS py_ts, p.endNs AS py_end,
                 a.startNs IS NOT NULL AND a.endNs IS NOT NULL AS has_cann,
                 p.startNs IS NOT NULL AND p.startNs <> '' AND p.endNs IS NOT NULL AS has_py
          {_LINKS[_LINKS.index("FROM"):]})"""
CHUNK = 1 << 16


def _chunked(db, path: Path, sql: str, width: int, code=None) -> np.ndarray:
    """The rows of ``sql`` as an int64 (rows, width) array, fetched ``CHUNK`` rows at a time; ``code``
    turns the first column into an integer (a text's code)."""
    parts = []
    try:
        cursor = db.execute(sql)
        while rows := cursor.fetchmany(CHUNK):
            if code is not None:
                rows = [(code(r[0]), *r[1:]) for r in rows]
            parts.append(np.array(rows, np.int64).reshape(-1, width))
    except (sqlite3.DatabaseError, OverflowError, ValueError, TypeError) as exc:
        raise UserError(f"Cannot read {Path(path).name}: {exc}", path, EXPORT_AGAIN) from exc
    return np.concatenate(parts) if parts else np.zeros((0, width), np.int64)


def decode_json(data: bytes):
    """JSON by msgspec (several times faster than json on a big trace), by json where it is absent."""
    try:
        import msgspec
    except ImportError:
        return json.loads(data)
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from exc


def from_trace(path: Path) -> DeviceTimeline:
    """The rank's timeline from its ``trace_view.json``.

    Each event is decoded into the few fields the analysis reads (:mod:`.free_events`), its ``args``
    left as raw bytes and decoded only for the tasks, launches and process names that need them;
    only the busy slices, the tasks and the launches and ops linked to a task have their times
    converted. About 3x faster than a dict per event, and the same values."""
    events = read_events(path)
    names = {e.pid: e.arg("name") for e in events if e.ph == "M" and e.name == "process_name"}
    busy, tasks, cann, python, flow_start, flow_end = [], [], {}, {}, {}, {}
    for e in events:
        ph = e.ph
        if ph == "X":
            process = names.get(e.pid)
            if process == "Python":
                python[(e.tid, e.ts)] = e
            elif process == "CANN":
                connection = e.arg("connection_id")
                if connection is not None:
                    cann[connection] = e
            elif process == "Ascend Hardware":
                args = e.arg_map()
                kind = e.name if _TASK_NAME.match(e.name) else str(args.get("Task Type", e.name))
                tasks.append((*_span(e, path), kind, args.get("connection_id"), (e.tid, e.ts)))
            elif process == "Overlap Analysis" and e.name in ("Computing", "Communication"):
                busy.append(_span(e, path))
        elif (ph == "s" or ph == "f") and e.cat == "async_npu":
            (flow_start if ph == "s" else flow_end)[e.id] = (e.tid, e.ts)
    # only the launches and ops a task links to have their times converted: most are not linked
    op_of_task = {flow_end[i]: python.get(flow_start[i]) for i in flow_end if i in flow_start}
    tasks.sort(key=lambda t: t[0])
    cann_rows = [_span(c, path) if (c := cann.get(t[3])) is not None else None for t in tasks]
    py_rows = [_span(p, path) if (p := op_of_task.get(t[4])) is not None else None for t in tasks]
    busy_cols = np.array(busy, np.int64).reshape(-1, 2)
    return DeviceTimeline("trace_view.json", *merge(busy_cols[:, 0], busy_cols[:, 1]),
                          np.array([t[2] for t in tasks], object),
                          np.array([t[0] for t in tasks], np.int64), np.array([t[1] for t in tasks], np.int64),
                          np.array([c[0] if c else 0 for c in cann_rows], np.int64),
                          np.array([c[1] if c else 0 for c in cann_rows], np.int64),
                          np.array([p[0] if p else 0 for p in py_rows], np.int64),
                          np.array([p[1] if p else 0 for p in py_rows], np.int64),
                          np.array([c is not None for c in cann_rows], bool),
                          np.array([p is not None for p in py_rows], bool))


def _span(event, path: Path) -> tuple[int, int]:
    """An X event's (start, end) in integer ns."""
    start = ns(event.stamp(path))
    return start, start + ns(0 if event.dur is None else event.dur)
