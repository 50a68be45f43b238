"""msprof SQLite export (``msprof_*.db``, CANN >= 8.0; schema in ascend_formats.md §3.4).

Device tasks come from ``TASK`` joined with ``COMPUTE_TASK_INFO`` / ``COMMUNICATION_TASK_INFO``
for their names; host API calls from ``CANN_API``; user ranges from ``MSTX_EVENTS``; usage
counters (HBM, LLC, NPU memory, host CPU ...) from their tables (:mod:`.usage_counters`). Strings are
interned in ``STRING_IDS``. Times are already nanoseconds. API calls and tasks that share a
``connectionId`` are joined by flow arrows (host -> device).

The database is the user's file: it is opened so that nothing is ever written beside it (msprof
writes WAL-mode databases, and even a ``mode=ro`` open of those creates ``-shm``/``-wal`` files).

Events far outside the session's collection window (``SESSION_TIME_INFO``) are on another clock —
msproftx ranges stamped by a different time source have been seen 55 million seconds away. They
are kept out of the timeline (which would otherwise span years), listed in a table of their own,
and reported as a warning.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sqlite3
import tempfile
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from studio.core.errors import UserError
from studio.core.formats import PROFILER, FileFormat
from studio.core.jobs import CancelToken, Progress
from studio.core.safe_read import check_regular
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.model import Table, Trace, add_warning
from studio.tools.profiler.usage_counters import add_db_counters

_NO_ID = 4294967295
OUTSIDE_TABLE = "outside_session"
# An event this far outside the collection window cannot belong to it (clock skew between host
# and device is micro- to milliseconds); at least one hour, or the session's own length.
MIN_OUTSIDE_NS = 3600 * 10**9
_FIX = "Export it again with msprof --export=on --type=db, or open the text export (the CSV/JSON folder)."


@dataclass
class _Event:
    start: int
    end: int
    track: tuple  # (pid, thread name)
    name: str
    cat: str
    args: dict
    flow: tuple | None = None  # (phase, connection id)
    source: str = ""


def read_database(path: Path, cancel: CancelToken | None = None) -> Generator[Progress, None, Trace]:
    """Read one msprof database file into a trace."""
    yield Progress(None, f"reading {path.name}")
    builder = TraceBuilder()
    add_database(builder, path)
    builder.facts["size"] = f"{path.stat().st_size / 1024:.0f} KiB"
    return builder.build(source=str(path))


@contextmanager
def open_readonly(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to ``path`` that writes nothing beside it.

    ``immutable=1`` makes SQLite skip locking and the WAL index (no ``-shm``), which is right for a
    finished export. If a non-empty ``-wal`` file lies beside the database, committed rows may still
    be in it: then the two files are copied to a private temporary folder and the copy is opened.
    """
    path = Path(path).resolve()
    check_regular(path, "msprof database")  # SQLite would block on a FIFO and read a device without end
    wal = path.with_name(path.name + "-wal")
    tmp = None
    try:
        if wal.is_file() and wal.stat().st_size > 0:
            tmp = Path(tempfile.mkdtemp(prefix="studio-db-"))
            shutil.copyfile(path, tmp / path.name)
            shutil.copyfile(wal, tmp / wal.name)
            uri = f"file:{quote(str(tmp / path.name))}"
        else:
            uri = f"file:{quote(str(path))}?immutable=1"
        db = sqlite3.connect(uri, uri=True)
    except (OSError, sqlite3.Error) as exc:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise UserError(f"Cannot open the msprof database: {exc}", path, _FIX) from exc
    try:
        yield db
    finally:
        db.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def count_events(path: Path) -> int:
    """How many slices the database holds (tasks, API calls, ranges); 0 when it is unreadable."""
    try:
        with open_readonly(path) as db:
            tables = _tables(db)
            return sum(int(db.execute(f"select count(*) from {t}").fetchone()[0])  # noqa: S608 - fixed names
                       for t in ("TASK", "CANN_API", "MSTX_EVENTS") if t in tables)
    except (UserError, sqlite3.Error, TypeError, ValueError):
        return 0


def add_database(builder: TraceBuilder, path: Path) -> None:
    """Add the database's tasks, API calls and ranges to ``builder``."""
    with open_readonly(path) as db:
        try:
            tables = _tables(db)
            if not tables & {"TASK", "CANN_API", "MSTX_EVENTS", "SESSION_TIME_INFO"}:
                raise UserError("This SQLite file holds no msprof tables (TASK, CANN_API, MSTX_EVENTS)", path, _FIX)
            strings = dict(db.execute("select id, value from STRING_IDS")) if "STRING_IDS" in tables else {}
            events: list[_Event] = []
            if "TASK" in tables:
                events += _tasks(db, tables, strings)
            if "CANN_API" in tables:
                events += _apis(db, tables, strings)
            if "MSTX_EVENTS" in tables:
                events += _mstx(db, strings)
            session = session_window(db, tables)
            _facts(builder, db, tables, session)
            add_db_counters(builder, db, tables, strings, path.name)
        except sqlite3.DatabaseError as exc:
            raise UserError(f"msprof database is corrupt or of an unknown schema: {exc}", path, _FIX) from exc
        except (TypeError, ValueError, OverflowError, AttributeError, OSError) as exc:  # damaged values in intact pages
            raise UserError(f"msprof database holds values of the wrong type: {exc}", path, _FIX) from exc
    inside, outside = split_outside(events, session)
    for event in inside:
        _add(builder, event)
    if outside:
        _report_outside(builder, outside, session)


def _tables(db: sqlite3.Connection) -> set[str]:
    return {row[0] for row in db.execute("select name from sqlite_master where type='table'")}


def _tasks(db: sqlite3.Connection, tables: set[str], strings: dict) -> list[_Event]:
    names: dict[int, tuple[str, str, dict]] = {}
    if "COMPUTE_TASK_INFO" in tables:
        query = ("select globalTaskId, name, opType, taskType, blockDim, inputShapes, outputShapes "
                 "from COMPUTE_TASK_INFO")
        for gid, name, op_type, task_type, block, ins, outs in db.execute(query):
            args = {"OP Type": strings.get(op_type, ""), "Task Type": strings.get(task_type, ""),
                    "Block Num": block, "Input Shapes": strings.get(ins, ""), "Output Shapes": strings.get(outs, "")}
            names[gid] = (str(strings.get(name, name)), str(strings.get(task_type, "")), args)
    if "COMMUNICATION_TASK_INFO" in tables:
        for gid, name, task_type in db.execute("select globalTaskId, name, taskType from COMMUNICATION_TASK_INFO"):
            names.setdefault(gid, (str(strings.get(name, name)), "HCCL", {"Task Type": strings.get(task_type, "")}))
    events = []
    query = "select startNs, endNs, deviceId, connectionId, taskType, streamId, taskId, globalTaskId from TASK"
    for start, end, device, connection, task_type, stream, task_id, gid in db.execute(query):
        name, cat, args = names.get(gid, (str(strings.get(task_type, f"task {task_id}")),
                                          str(strings.get(task_type, "")), {}))
        flow = ("f", connection) if connection not in (None, _NO_ID) else None
        events.append(_Event(int(start), int(end), (f"device {device}", f"Stream {stream}"), name, cat,
                             dict(args, **{"Stream ID": stream, "Task ID": task_id}), flow, "device task"))
    return events


def _apis(db: sqlite3.Connection, tables: set[str], strings: dict) -> list[_Event]:
    levels = dict(db.execute("select id, name from ENUM_API_TYPE")) if "ENUM_API_TYPE" in tables else {}
    events = []
    query = "select startNs, endNs, type, globalTid, name, connectionId from CANN_API"
    for start, end, level, tid, name, connection in db.execute(query):
        level_name = str(levels.get(level, level))
        flow = ("s", connection) if connection not in (None, _NO_ID) else None
        events.append(_Event(int(start), int(end), ("cann", f"Thread {int(tid) & 0xFFFFFFFF}"),
                             str(strings.get(name, name)), level_name,
                             {"level": level_name, "connection_id": connection}, flow, "CANN API call"))
    return events


def _mstx(db: sqlite3.Connection, strings: dict) -> list[_Event]:
    events = []
    for start, end, message, tid in db.execute("select startNs, endNs, message, globalTid from MSTX_EVENTS"):
        events.append(_Event(int(start), int(end), ("mstx", f"Thread {int(tid) & 0xFFFFFFFF}"),
                             str(strings.get(message, message)), "mstx", {}, None, "msproftx range"))
    return events


def session_window(db: sqlite3.Connection, tables: set[str], schema: str = "") -> tuple[int, int] | None:
    """The collection window (start, end ns) of ``SESSION_TIME_INFO`` (in attached ``schema``, e.g.
    ``"src."``), None when there is none or it is not a window."""
    if "SESSION_TIME_INFO" not in tables:
        return None
    row = db.execute(f"select startTimeNs, endTimeNs from {schema}SESSION_TIME_INFO").fetchone()  # noqa: S608
    if not row or row[0] is None or row[1] is None or int(row[1]) < int(row[0]):
        return None
    return int(row[0]), int(row[1])


def split_outside(events: list[_Event], session: tuple[int, int] | None) -> tuple[list[_Event], list[_Event]]:
    """(events that belong to the collection window, events far outside it)."""
    if session is None:
        return events, []
    lo, hi = session
    margin = max(MIN_OUTSIDE_NS, hi - lo)
    inside, outside = [], []
    for event in events:
        far = event.end < lo - margin or event.start > hi + margin
        (outside if far else inside).append(event)
    return inside, outside


def lane_track(builder: TraceBuilder, pid: str, thread: str) -> int:
    """The track of a database lane (``"device N"``, ``"cann"`` or ``"mstx"``; a thread or stream
    name), its process named and placed as msprof's text timeline does."""
    if pid == "cann":
        builder.process_names.setdefault(pid, "CANN")
        builder.process_sort.setdefault(pid, -1.0)
    elif pid == "mstx":
        builder.process_names.setdefault(pid, "msprofTx")
    else:
        builder.process_names.setdefault(pid, f"Ascend Hardware ({pid})")
    return builder.track_id(pid, thread)


def _add(builder: TraceBuilder, event: _Event) -> None:
    track = lane_track(builder, *event.track)
    builder.add_slice(event.start, max(0, event.end - event.start), track, event.name, event.cat,
                      json.dumps(event.args, default=str).encode() if event.args else None)
    if event.flow is not None:
        phase, connection = event.flow
        builder.add_flow_point(("HostToDevice", connection), phase, event.start, track, True)


def _report_outside(builder: TraceBuilder, outside: list[_Event], session: tuple[int, int] | None) -> None:
    lo = session[0] if session else 0
    rows = [[e.source, e.name, str(e.start), str(e.end), f"{(e.end - e.start) / 1e3:.3f}",
             f"{(e.start - lo) / 1e9:,.3f}"] for e in sorted(outside, key=lambda e: e.start)]
    builder.tables[OUTSIDE_TABLE] = Table(
        OUTSIDE_TABLE, ["Kind", "Name", "Start (ns)", "End (ns)", "Duration (us)", "Offset from session start (s)"],
        rows)
    kinds = sorted({e.source for e in outside})
    offset = min((abs(e.start - lo) for e in outside), default=0) / 1e9
    builder.facts[f"{'session' if session else 'window'} events outside"] = str(len(outside))
    add_warning(builder.facts,
                f"{len(outside)} {' / '.join(kinds)} event(s) lie {offset:,.0f} s or more outside the collection "
                f"window (another clock); they are left off the timeline and listed in the "
                f"'{OUTSIDE_TABLE}' table. The timeline shows the session.")


def _facts(builder: TraceBuilder, db: sqlite3.Connection, tables: set[str], session: tuple[int, int] | None) -> None:
    if session is not None:
        start = dt.datetime.fromtimestamp(session[0] / 1e9, dt.timezone.utc)
        builder.facts["collection start"] = start.strftime("%Y-%m-%d %H:%M:%S UTC")
        builder.facts["collection length"] = f"{(session[1] - session[0]) / 1e9:.3f} s"
    if "NPU_INFO" in tables:
        devices = sorted({str(name) for _, name in db.execute("select id, name from NPU_INFO")})
        if devices:
            builder.facts["device"] = ", ".join(devices)


def match_profiling_db(path: Path, head: bytes) -> bool:
    """An SQLite file named as msprof and the PyTorch-NPU profiler name their exports."""
    return head.startswith(b"SQLite format 3\x00") and path.name.startswith(("msprof", "ascend_pytorch_profiler"))


PROFILING_DB = FileFormat("profiling_db", "msprof SQLite database", PROFILER, match_profiling_db, read_database)
