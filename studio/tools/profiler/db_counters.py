"""A profiling database's usage counters kept in its query cache, so a window never reopens the file.

The counters (HBM, LLC, NPU memory, host CPU ... : :mod:`.usage_counters`) are read from the
user's file once, while the cache is built, as the full reader reads them, and stored one row per
series with its samples as raw int64 / float64 arrays. Opening a window from the cache then costs
one small query instead of a pass over every usage table in Python (a third of the first frame
of 16 ranks from warm caches).
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np

from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.model import Counter
from studio.tools.profiler.usage_counters import add_db_counters

SCHEMA = """CREATE TABLE counters(ord INTEGER PRIMARY KEY, process TEXT, name TEXT, pid TEXT, sort REAL,
                                  source TEXT, times BLOB, vals BLOB);"""


def store(cache: sqlite3.Connection, source: sqlite3.Connection, strings: dict, file_name: str) -> None:
    """Read ``source``'s usage counters and write them into ``cache`` (times in the file's own ns)."""
    tables = {r[0] for r in source.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    builder = TraceBuilder()
    add_db_counters(builder, source, tables, strings, file_name)
    trace = builder.build(source=file_name)
    cache.executemany("INSERT INTO counters VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      [(k, c.process, c.name, json.dumps(c.pid), c.process_sort, c.source,
                        (c.times.astype(np.int64) + trace.origin_ns).tobytes(), c.values.astype(np.float64).tobytes())
                       for k, c in enumerate(trace.counters)])


def load(cache: sqlite3.Connection, origin: int) -> list[Counter]:
    """The counters stored in ``cache``, their times relative to ``origin`` (ns)."""
    out = []
    for process, name, pid, sort, source, times, vals in cache.execute(
            "SELECT process, name, pid, sort, source, times, vals FROM counters ORDER BY ord"):
        pid = json.loads(pid)
        out.append(Counter(process, name, np.frombuffer(times, np.int64) - origin, np.frombuffer(vals, np.float64).copy(),
                           tuple(pid) if isinstance(pid, list) else pid, sort, source))
    return out
