"""msprof SQLite export (``msprof_*.db``, CANN >= 8.0; schema in ascend_formats.md §3.4).

Device tasks come from ``TASK`` joined with ``COMPUTE_TASK_INFO`` / ``COMMUNICATION_TASK_INFO``
for their names; host API calls from ``CANN_API``; user ranges from ``MSTX_EVENTS``. Strings are
interned in ``STRING_IDS``. Times are already nanoseconds. API calls and tasks that share a
``connectionId`` are joined by flow arrows (host -> device).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Generator
from pathlib import Path

from studio.errors import UserError
from studio.jobs import CancelToken, Progress
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.model import Trace

_NO_ID = 4294967295


def read_database(path: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, Trace]:
    """Read one msprof database file into a trace."""
    yield Progress(None, f"reading {path.name}")
    builder = TraceBuilder()
    add_database(builder, path)
    builder.facts["size"] = f"{path.stat().st_size / 1024:.0f} KiB"
    return builder.build(source=str(path))


def add_database(builder: TraceBuilder, path: Path) -> None:
    """Add the database's tasks, API calls and ranges to ``builder``."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {row[0] for row in db.execute("select name from sqlite_master where type='table'")}
    except sqlite3.DatabaseError as exc:
        raise UserError(f"Not a readable msprof database: {exc}", path,
                        "Export it again with msprof --export=on --type=db, or open the text export.") from exc
    try:
        strings = dict(db.execute("select id, value from STRING_IDS")) if "STRING_IDS" in tables else {}
        if "TASK" in tables:
            _tasks(builder, db, tables, strings)
        if "CANN_API" in tables:
            _apis(builder, db, tables, strings)
        if "MSTX_EVENTS" in tables:
            for start, end, message, tid in db.execute("select startNs, endNs, message, globalTid from MSTX_EVENTS"):
                builder.process_names.setdefault("mstx", "msprofTx")
                track = builder.track_id("mstx", f"Thread {tid & 0xFFFFFFFF}")
                builder.add_slice(start, max(0, end - start), track, strings.get(message, str(message)), "mstx")
        _facts(builder, db, tables)
    except sqlite3.DatabaseError as exc:
        raise UserError(f"msprof database is corrupt or of an unknown schema: {exc}", path,
                        "Export it again with msprof --export=on --type=db.") from exc
    finally:
        db.close()


def _tasks(builder: TraceBuilder, db: sqlite3.Connection, tables: set[str], strings: dict) -> None:
    names: dict[int, tuple[str, str, dict]] = {}
    if "COMPUTE_TASK_INFO" in tables:
        query = ("select globalTaskId, name, opType, taskType, blockDim, inputShapes, outputShapes "
                 "from COMPUTE_TASK_INFO")
        for gid, name, op_type, task_type, block, ins, outs in db.execute(query):
            args = {"OP Type": strings.get(op_type, ""), "Task Type": strings.get(task_type, ""),
                    "Block Num": block, "Input Shapes": strings.get(ins, ""), "Output Shapes": strings.get(outs, "")}
            names[gid] = (strings.get(name, str(name)), strings.get(task_type, ""), args)
    if "COMMUNICATION_TASK_INFO" in tables:
        for gid, name, task_type in db.execute("select globalTaskId, name, taskType from COMMUNICATION_TASK_INFO"):
            names.setdefault(gid, (strings.get(name, str(name)), "HCCL", {"Task Type": strings.get(task_type, "")}))
    query = "select startNs, endNs, deviceId, connectionId, taskType, streamId, taskId, globalTaskId from TASK"
    for start, end, device, connection, task_type, stream, task_id, gid in db.execute(query):
        pid = f"device {device}"
        builder.process_names.setdefault(pid, f"Ascend Hardware (device {device})")
        track = builder.track_id(pid, f"Stream {stream}")
        name, cat, args = names.get(gid, (strings.get(task_type, f"task {task_id}"), strings.get(task_type, ""), {}))
        args = dict(args, **{"Stream ID": stream, "Task ID": task_id})
        builder.add_slice(start, max(0, end - start), track, name, cat, json.dumps(args).encode())
        if connection not in (None, _NO_ID):
            builder.add_flow_point(("HostToDevice", connection), "f", start, track, True)


def _apis(builder: TraceBuilder, db: sqlite3.Connection, tables: set[str], strings: dict) -> None:
    levels = dict(db.execute("select id, name from ENUM_API_TYPE")) if "ENUM_API_TYPE" in tables else {}
    builder.process_names.setdefault("cann", "CANN")
    builder.process_sort.setdefault("cann", -1.0)
    query = "select startNs, endNs, type, globalTid, name, connectionId from CANN_API"
    for start, end, level, tid, name, connection in db.execute(query):
        track = builder.track_id("cann", f"Thread {tid & 0xFFFFFFFF}")
        level_name = levels.get(level, str(level))
        builder.add_slice(start, max(0, end - start), track, strings.get(name, str(name)), level_name,
                          json.dumps({"level": level_name, "connection_id": connection}).encode())
        if connection not in (None, _NO_ID):
            builder.add_flow_point(("HostToDevice", connection), "s", start, track, True)


def _facts(builder: TraceBuilder, db: sqlite3.Connection, tables: set[str]) -> None:
    if "SESSION_TIME_INFO" in tables:
        row = db.execute("select startTimeNs, endTimeNs from SESSION_TIME_INFO").fetchone()
        if row:
            import datetime as dt

            start = dt.datetime.fromtimestamp(row[0] / 1e9, dt.timezone.utc)
            builder.facts["collection start"] = start.strftime("%Y-%m-%d %H:%M:%S UTC")
            builder.facts["collection length"] = f"{(row[1] - row[0]) / 1e9:.3f} s"
    if "NPU_INFO" in tables:
        devices = sorted({name for _, name in db.execute("select id, name from NPU_INFO")})
        if devices:
            builder.facts["device"] = ", ".join(devices)
