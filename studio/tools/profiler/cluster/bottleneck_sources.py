"""What the slow-collective analysis reads of one rank, from its db export or its text export.

Both sources answer the same four questions, in integer nanoseconds on the rank's own clock:

- ``ops()``: every communication op (start, end, name);
- ``launches(start, end)``: each kernel run inside the window that a PyTorch op started through
  a CANN ``node@launch`` call — (kernel start, kernel end, launch start, launch end, op start, op end);
- ``device_tasks(before)``: compute kernels, communication ops (first to last task) and memcpy
  tasks that ended by ``before``;
- ``host_tasks(level, before)``: PyTorch ops (``aten::...``) or CANN calls (``type@name``) that
  ended by ``before``.

The db export (``ascend_pytorch_profiler_<rank>.db``) is read with msprof-analyze's
``communication_bottleneck`` queries. The text export's ``trace_view.json`` (which the recipe
cannot read) holds the same rows: the ``HCCL`` process's ``Group … Communication`` lanes are the
ops, ``Ascend Hardware`` the device tasks, ``CANN`` the calls (joined to a task by
``connection_id``), ``Python`` the PyTorch ops (joined to a task by its ``async_npu`` flow). A
trace is parsed only when asked for more than the op spans: those come from the rank's
``communication.json`` where it has one, so the ranks no verdict rests on cost a small JSON file.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

from studio.core.errors import UserError
from studio.tools.profiler.cluster.comm_time import op_times_info
from studio.tools.profiler.cluster.discover import OUTPUT, RankDir
from studio.tools.profiler.cluster.free_events import ns
from studio.tools.profiler.cluster.free_sources import decode_json
from studio.tools.profiler.db_reader import open_readonly
from studio.tools.profiler.rank_files import EXPORT_AGAIN, db_tables, query

NEEDED = ("COMMUNICATION_OP", "TASK", "CANN_API", "PYTORCH_API", "CONNECTION_IDS", "STRING_IDS", "ENUM_API_TYPE")
_OPS = ("SELECT c.startNs, c.endNs, s.value FROM COMMUNICATION_OP c JOIN STRING_IDS s ON s.id = c.opName "
        "ORDER BY c.startNs")
_LAUNCHES = """
    SELECT t.startNs, t.endNs, a.startNs, a.endNs, CAST(p.startNs AS INTEGER), CAST(p.endNs AS INTEGER)
    FROM TASK t JOIN CANN_API a ON t.connectionId = a.connectionId
    JOIN CONNECTION_IDS c ON c.connectionId = t.connectionId
    JOIN PYTORCH_API p ON c.id = p.connectionId
    JOIN ENUM_API_TYPE e ON a.type = e.id JOIN STRING_IDS s ON s.id = a.name
    WHERE t.startNs > ? AND t.endNs < ? AND e.name = 'node' AND s.value = 'launch'"""
_DEVICE = {
    "compute": "SELECT t.startNs, t.endNs, s.value FROM TASK t JOIN COMPUTE_TASK_INFO i ON t.globalTaskId = "
               "i.globalTaskId JOIN STRING_IDS s ON i.name = s.id WHERE t.startNs >= ? AND t.endNs <= ?",
    "communication": "SELECT MIN(t.startNs), MAX(t.endNs), s.value FROM TASK t JOIN COMMUNICATION_TASK_INFO i ON "
                     "t.globalTaskId = i.globalTaskId JOIN STRING_IDS s ON i.name = s.id "
                     "WHERE t.startNs >= ? AND t.endNs <= ? GROUP BY s.value",
    "memcpy": "SELECT t.startNs, t.endNs, s.value FROM TASK t JOIN STRING_IDS s ON t.taskType = s.id "
              "WHERE t.startNs >= ? AND t.endNs <= ? AND LOWER(s.value) LIKE '%memcpy%'",
}
_HOST = {
    "PyTorch": "SELECT CAST(p.startNs AS INTEGER) AS b, CAST(p.endNs AS INTEGER) AS e, s.value FROM PYTORCH_API p "
               "JOIN STRING_IDS s ON s.id = p.name WHERE b >= ? AND e <= ? AND s.value LIKE '%::%'",
    "CANN": "SELECT a.startNs, a.endNs, e.name || '@' || s.value FROM CANN_API a JOIN STRING_IDS s ON s.id = a.name "
            "JOIN ENUM_API_TYPE e ON e.id = a.type WHERE a.startNs >= ? AND a.endNs <= ?",
}
_TASK_TYPE = re.compile(r"^[A-Z][A-Z0-9_]*$")  # the text export names a non-kernel task by its type
Span = tuple[int, int, str]


class Pending(Exception):
    """A rank read on its host has yet to answer a question the analysis asked (see :mod:`.host_causes`)."""


class DbRank:
    """One rank's ``ascend_pytorch_profiler_<rank>.db``."""

    kind = "db"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def _rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        with open_readonly(self.path) as db:
            return query(db, self.path, sql, args)

    def ops(self) -> list[Span]:
        return [(int(a), int(b), str(n)) for a, b, n in self._rows(_OPS)]

    def launches(self, start: int, end: int) -> list[tuple[int, ...]]:
        return [tuple(int(v) for v in row) for row in self._rows(_LAUNCHES, (start, end))]

    def device_tasks(self, before: int) -> list[Span]:
        return [(int(a), int(b), str(n)) for sql in _DEVICE.values() for a, b, n in self._rows(sql, (0, before))]

    def host_tasks(self, level: str, before: int) -> list[Span]:
        return [(int(a), int(b), str(n)) for a, b, n in self._rows(_HOST[level], (0, before))]


class TraceRank:
    """One rank's ``trace_view.json``, read once — and only when needed — into the rows the analysis asks for.

    With the rank's ``communication.json``, the op spans come from it (the op's start to 0.1 µs,
    its elapse exact): a rank whose ops no verdict rests on is never parsed. The two ranks a
    verdict rests on get their exact spans from the trace (:meth:`exact_span`)."""

    kind = "trace_view.json"

    def __init__(self, path: Path, communication: Path | None = None) -> None:
        self.path, self.communication = Path(path), communication
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        try:
            events = decode_json(self.path.read_bytes())
        except (OSError, ValueError) as exc:
            raise UserError(f"{self.path.name} cannot be read as a trace: {exc}", self.path, EXPORT_AGAIN) from exc
        if isinstance(events, dict):
            events = events.get("traceEvents", [])
        self._read(events)
        self._loaded = True

    def _read(self, events: list) -> None:
        process = {e.get("pid"): (e.get("args") or {}).get("name") for e in events
                   if e.get("ph") == "M" and e.get("name") == "process_name"}
        thread = {(e.get("pid"), e.get("tid")): str((e.get("args") or {}).get("name", "")) for e in events
                  if e.get("ph") == "M" and e.get("name") == "thread_name"}
        self._ops, self._compute, self._memcpy, self._python, self._cann = [], [], [], [], []
        tasks, cann_by_id, python_at, flow_start, flow_end = [], {}, {}, {}, {}
        for e in events:
            ph, name = e.get("ph"), str(e.get("name", ""))
            if ph in ("s", "f") and e.get("cat") == "async_npu":
                (flow_start if ph == "s" else flow_end)[e.get("id")] = (e.get("tid"), e.get("ts"))
                continue
            if ph != "X":
                continue
            where = process.get(e.get("pid"))
            start = ns(e["ts"])
            span = (start, start + ns(e.get("dur", 0)), name)
            args = e.get("args") or {}
            if where == "HCCL":
                if thread.get((e.get("pid"), e.get("tid")), "").endswith("Communication"):
                    self._ops.append(span)
            elif where == "Ascend Hardware":
                task_type = str(args.get("Task Type", ""))
                if "MEMCPY" in name.upper() or "MEMCPY" in task_type.upper():
                    self._memcpy.append(span)
                elif not _TASK_TYPE.match(name) and task_type != name:  # a kernel, not an HCCL or sync task
                    self._compute.append(span)
                tasks.append((span, args.get("connection_id"), (e.get("tid"), e["ts"])))
            elif where == "CANN":
                self._cann.append(span)
                if name == "Node@launch" and args.get("connection_id") is not None:
                    cann_by_id[args["connection_id"]] = span
            elif where == "Python":
                python_at[(e.get("tid"), e["ts"])] = span
                if "::" in name:
                    self._python.append(span)
        op_of_task = {flow_end[i]: python_at.get(flow_start[i]) for i in flow_end if i in flow_start}
        self._launched = []
        for span, connection, key in tasks:
            launch, op = cann_by_id.get(connection), op_of_task.get(key)
            if launch is not None and op is not None:
                self._launched.append((span[0], span[1], launch[0], launch[1], op[0], op[1]))
        self._ops.sort()

    def ops(self) -> list[Span]:
        if self.communication is not None:
            return communication_spans(self.communication)
        self._load()
        return list(self._ops)

    def exact_span(self, name: str) -> tuple[int, int] | None:
        """The first op of ``name`` as the trace has it (to the ns)."""
        self._load()
        return next(((a, b) for a, b, n in self._ops if n == name), None)

    def launches(self, start: int, end: int) -> list[tuple[int, ...]]:
        self._load()
        return [row for row in self._launched if row[0] > start and row[1] < end]

    def device_tasks(self, before: int) -> list[Span]:
        self._load()
        first: dict[str, list[int]] = {}
        for a, b, name in self._ops:  # one span per op, from its first task to its last (as the db's GROUP BY)
            if a >= 0 and b <= before:
                span = first.setdefault(name, [a, b])
                span[0], span[1] = min(span[0], a), max(span[1], b)
        return ([t for t in self._compute if t[1] <= before] + [(a, b, n) for n, (a, b) in first.items()]
                + [t for t in self._memcpy if t[1] <= before])

    def host_tasks(self, level: str, before: int) -> list[Span]:
        self._load()
        rows = self._python if level == "PyTorch" else self._cann
        return [t for t in rows if t[1] <= before]


def rank_sources(ranks: list[RankDir]) -> dict[int, DbRank | TraceRank]:
    """Rank -> what the analysis reads of it: its profiler db when it holds every table needed (as
    msprof-analyze reads it), else its ``trace_view.json``; ranks with neither are left out."""
    out: dict[int, DbRank | TraceRank] = {}
    for rank in ranks:
        if rank.kind != "pytorch":
            continue
        path = rank.files.get("profiler_db")
        if path is not None:
            with open_readonly(path) as db:
                if set(NEEDED) <= db_tables(db):
                    out[rank.rank] = DbRank(path)
                    continue
        trace = rank.path / OUTPUT / "trace_view.json"
        if trace.is_file():
            out[rank.rank] = TraceRank(trace, rank.files.get("communication_json"))
    return out


def communication_spans(path: Path) -> list[Span]:
    """Every op of a ``communication.json``: (start, start + elapse, name) in ns, sorted by start.

    The start is written to 0.1 µs, the elapse in ms to the ns; both are read as decimals (a float
    would lose the last digits of an epoch time)."""
    out = []
    for _step, _kind, key, times in op_times_info(path):
        if "Start Timestamp(us)" not in times:
            continue
        start = int(Decimal(repr(times["Start Timestamp(us)"])) * 1000)
        out.append((start, start + int(Decimal(repr(times.get("Elapse Time(ms)", 0) or 0)) * 1_000_000),
                    key.partition("@")[0]))
    return sorted(out)
