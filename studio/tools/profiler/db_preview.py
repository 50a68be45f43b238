"""A first look at a big profiling database while its query cache is built: sampled device tasks.

msprof and torch_npu index ``TASK`` on ``startNs`` in the file they write (``TaskIndex``). Through
that index a few tasks are read at each of a few hundred points across the session — a few
hundred index probes, well under a second whatever the file's size — so the timeline shows where
the device was busy before the cache (a pass over every row) is ready. The preview says it is a
sample; its tasks are real rows with their own names and times.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from studio.tools.profiler import db_source
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.db_reader import lane_track
from studio.tools.profiler.lod import build_lod
from studio.tools.profiler.model import Trace

PROBES = 400     # points across the session
PER_PROBE = 12   # tasks read at each point

_SAMPLE = """SELECT t.startNs, t.endNs, t.deviceId, t.streamId, t.rowid, coalesce(s.value, 'task ' || t.taskId)
             FROM TASK t LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId
             LEFT JOIN STRING_IDS s ON s.id = coalesce(c.name, t.taskType)
             WHERE t.startNs >= ? ORDER BY t.startNs LIMIT ?"""


def has_time_index(db: sqlite3.Connection) -> bool:
    """True when the file indexes ``TASK`` by ``startNs`` first (what the preview reads through)."""
    for row in db.execute("PRAGMA index_list(TASK)"):
        columns = [c[2] for c in db.execute(f"PRAGMA index_info({row[1]!r})")]  # noqa: S608 - SQLite's own name
        if columns[:1] == ["startNs"]:
            return True
    return False


def preview_trace(path: Path, probes: int = PROBES, per_probe: int = PER_PROBE) -> Trace | None:
    """Device tasks sampled at ``probes`` points of the session; None when the file has no task
    table indexed by time (then there is nothing quick to show) or the tables it joins."""
    db = db_source.connect(path)
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"TASK", "COMPUTE_TASK_INFO", "STRING_IDS"} <= tables or not has_time_index(db):
            return None
        lo = db.execute("SELECT min(startNs) FROM TASK").fetchone()[0]  # one each: both use the index
        hi = db.execute("SELECT max(startNs) FROM TASK").fetchone()[0]
        if lo is None or hi is None:
            return None
        seen: dict[int, tuple] = {}
        for i in range(probes):
            at = lo + (hi - lo) * i // probes
            for row in db.execute(_SAMPLE, (at, per_probe)):
                seen.setdefault(row[4], row)
    except sqlite3.Error as exc:
        raise db_source.explain(exc, Path(path)) from exc
    finally:
        db.close()
    builder = TraceBuilder()
    for start, end, device, stream, _rowid, name in sorted(seen.values()):
        builder.add_slice(start, end - start, lane_track(builder, f"device {device}", f"Stream {stream}"), str(name))
    builder.facts["read by"] = (f"sampled preview: {len(seen):,} device tasks read at {probes} points of the "
                                f"session through the file's own time index, while the query cache is built")
    trace = builder.build(source=str(path))
    trace.lod = build_lod(trace.start, trace.dur, trace.track, trace.depth)
    return trace
