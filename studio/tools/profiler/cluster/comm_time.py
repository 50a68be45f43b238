"""Each collective's time split on each rank: moving data, waiting for peers, or idle.

Per rank and communication op (``CommAnalyzerTime`` of ``analysis.db``, or the "Communication
Time Info" of ``communication.json``), with the meanings msprof-analyze gives them:

- elapse: the op's time on this rank, from its first task to its last;
- transit: time spent moving data (the transfer tasks);
- wait: time spent in the op's Notify_Wait tasks (waiting for a peer's signal);
- synchronization: the wait before the op's first transfer — the time this rank spent in the
  collective waiting for the other ranks to arrive;
- idle: elapse - transit - wait (inside the op, neither moving data nor waiting);
- wait ratio = wait / (wait + transit), synchronization ratio = sync / (sync + transit).

Per step, rank and group the ops are summed into a ``Total Op Info`` row as msprof-analyze's
``communication_time_sum`` recipe and its text-mode ``cluster_communication.json`` do (ratios of
the sums, rounded to 4 places as it rounds them). The per-op ratios are those of the definitions
(the recipe writes 0 in its per-op rows; ``communication.json`` holds the same values as ours).

"The fast ranks wait for the slow one": in each op instance (same name, group and step on every
rank of the group) the rank with the least synchronization time arrived last — the others spent
their synchronization time waiting for it. :func:`waits` names it per op and per group.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.tools.profiler.cluster.discover import RankDir
from studio.tools.profiler.cluster.matrix import step_entries, step_number
from studio.tools.profiler.db_reader import open_readonly
from studio.tools.profiler.rank_files import EXPORT_AGAIN, db_tables, query

TOTAL = "Total Op Info"
TIMES = ("elapse_ms", "transit_ms", "wait_ms", "sync_ms", "idle_ms")
_JSON_KEYS = {"elapse_ms": "Elapse Time(ms)", "transit_ms": "Transit Time(ms)", "wait_ms": "Wait Time(ms)",
              "sync_ms": "Synchronization Time(ms)", "idle_ms": "Idle Time(ms)"}
# An op in which the waiting rank spent less than this is not worth naming (launch jitter).
MIN_WAIT_MS = 0.1


@dataclass
class OpTime:
    """One communication op on one rank (times in ms, start in µs as msprof writes it)."""

    step: int | str | None
    rank: int
    group_id: str
    kind: str          # "collective" or "p2p"
    op: str
    start_us: float
    elapse_ms: float
    transit_ms: float
    wait_ms: float
    sync_ms: float
    idle_ms: float
    wait_ratio: float = 0.0
    sync_ratio: float = 0.0

    def __post_init__(self) -> None:
        self.wait_ratio = ratio(self.wait_ms, self.transit_ms)
        self.sync_ratio = ratio(self.sync_ms, self.transit_ms)


@dataclass
class CommTimes:
    """Every rank's op rows, the per-group totals, and who waited for whom."""

    ops: list[OpTime] = field(default_factory=list)
    totals: list[dict] = field(default_factory=list)
    waits: list[dict] = field(default_factory=list)
    group_waits: list[dict] = field(default_factory=list)
    sources: dict[int, str] = field(default_factory=dict)


def ratio(part: float, transit: float) -> float:
    """``part / (part + transit)``, 0 when both are 0 (msprof-analyze's ``compute_ratio``)."""
    whole = part + transit
    return part / whole if whole > 0 else 0.0


def read_op_times(rank: RankDir) -> tuple[list[OpTime], str]:
    """The rank's op rows and the file they came from (db first, as msprof-analyze reads it)."""
    db = rank.files.get("analysis_db")
    if db is not None:
        with open_readonly(db) as conn:
            if "CommAnalyzerTime" in db_tables(conn):
                rows = query(conn, db, "SELECT step, group_name, type, hccl_op_name, start_timestamp, elapse_time, "
                                       "transit_time, wait_time, synchronization_time, idle_time "
                                       "FROM CommAnalyzerTime")
                return [OpTime(step_number(r[0] if r[0] is not None else "step"), rank.rank, str(r[1]), str(r[2]),
                               str(r[3]), float(r[4] or 0), *(float(v or 0) for v in r[5:10]))
                        for r in rows if r[3] != TOTAL], str(db)
    path = rank.files.get("communication_json")
    if path is None:
        return [], ""
    return _from_json(rank.rank, path), str(path)


def _from_json(rank: int, path: Path) -> list[OpTime]:
    out = []
    for step, kind, name, times in op_times_info(path):
        op, _, group = name.partition("@")
        out.append(OpTime(step_number(step), rank, group, kind, op, float(times.get("Start Timestamp(us)", 0) or 0),
                          *(float(times.get(_JSON_KEYS[k], 0) or 0) for k in TIMES)))
    return out


def op_times_info(path: Path):
    """``(step, kind, "op@group", its Communication Time Info)`` of each op of a communication.json
    (the per-group ``Total Op Info`` left out)."""
    for step, kind, name, info in step_entries(path, "communication file"):
        if name.partition("@")[0] == TOTAL:
            continue
        times = (info or {}).get("Communication Time Info")
        if not isinstance(times, dict):
            raise UserError(f"{path.name}: {name} has no 'Communication Time Info'", path, EXPORT_AGAIN)
        yield step, kind, name, times


def times_of(ops: list[OpTime], sources: dict[int, str]) -> CommTimes:
    """The totals and waits of op rows read here or on the ranks' hosts (``sources``: rank -> file)."""
    result = CommTimes(sorted(ops, key=lambda o: (str(o.step), o.rank, o.start_us)), sources=dict(sources))
    result.totals = totals(result.ops)
    result.waits = waits(result.ops)
    result.group_waits = group_waits(result.waits)
    return result


def totals(ops: list[OpTime]) -> list[dict]:
    """One ``Total Op Info`` row per (step, rank, group): sums, op count and the sums' ratios."""
    sums: dict[tuple, dict] = {}
    for op in ops:
        key = (op.step, op.rank, op.group_id)
        entry = sums.setdefault(key, {"step": op.step, "rank": op.rank, "group_id": op.group_id, "kind": op.kind,
                                      "ops": 0, **{k: 0.0 for k in TIMES}})
        entry["ops"] += 1
        for k in TIMES:
            entry[k] += getattr(op, k)
    out = []
    for key in sorted(sums, key=lambda k: (str(k[0]), k[1], k[2])):
        entry = sums[key]
        entry["wait_ratio"] = round(ratio(entry["wait_ms"], entry["transit_ms"]), 4)
        entry["sync_ratio"] = round(ratio(entry["sync_ms"], entry["transit_ms"]), 4)
        out.append(entry)
    return out


def waits(ops: list[OpTime]) -> list[dict]:
    """Per op instance seen on 2+ ranks: the rank the others waited for and how long they waited.

    The rank with the least synchronization time arrived last; each other rank's synchronization
    time is its wait for that rank. Instances where no rank waited ``MIN_WAIT_MS`` are left out."""
    by_instance: dict[tuple, list[OpTime]] = defaultdict(list)
    for op in ops:
        by_instance[(op.step, op.group_id, op.op)].append(op)
    out = []
    for (step, group, name), members in by_instance.items():
        if len(members) < 2:
            continue
        late = min(members, key=lambda o: (o.sync_ms, -o.start_us))
        waiting = sorted((o for o in members if o is not late), key=lambda o: -o.sync_ms)
        if waiting[0].sync_ms < MIN_WAIT_MS:
            continue
        out.append({"step": step, "group_id": group, "op": name, "kind": late.kind, "waited_for": late.rank,
                    "start_us": min(o.start_us for o in members),
                    "late_sync_ms": late.sync_ms,
                    "waiting": [{"rank": o.rank, "sync_ms": o.sync_ms, "start_us": o.start_us,
                                 "elapse_ms": o.elapse_ms} for o in waiting],
                    "max_wait_ms": waiting[0].sync_ms})
    out.sort(key=lambda w: -w["max_wait_ms"])
    return out


def group_waits(instances: list[dict]) -> list[dict]:
    """Per step and group: whom the ranks waited for, how often and how long in all (ms)."""
    by_group: dict[tuple, dict] = {}
    for w in instances:
        entry = by_group.setdefault((w["step"], w["group_id"]), {"step": w["step"], "group_id": w["group_id"],
                                                                 "kind": w["kind"], "by_rank": defaultdict(
                                                                     lambda: {"ops": 0, "wait_ms": 0.0})})
        slot = entry["by_rank"][w["waited_for"]]
        slot["ops"] += 1
        slot["wait_ms"] += w["max_wait_ms"]
    out = []
    for entry in by_group.values():
        ranked = sorted(entry["by_rank"].items(), key=lambda kv: -kv[1]["wait_ms"])
        rank, top = ranked[0]
        out.append({"step": entry["step"], "group_id": entry["group_id"], "kind": entry["kind"],
                    "waited_for": rank, "ops": top["ops"], "wait_ms": top["wait_ms"],
                    "others": [{"rank": r, **v} for r, v in ranked[1:]]})
    out.sort(key=lambda g: -g["wait_ms"])
    return out
