"""Each rank's step trace time, with msprof-analyze's definitions.

torch_npu writes the split itself, per step, in ``analysis.db`` (table ``StepTraceTime``) and in
``step_trace_time.csv``; msprof-analyze's cluster analysis copies it per rank, and so does Studio
(the db when both exist, as msprof-analyze does). For msprof ``PROF_*`` timelines it is summed
from the "Overlap Analysis" process exactly as msprof-analyze's ``MsprofStepTraceTimeAdapter``
does: computing, communication, communication(not overlapped) and free are the summed durations
of the events of those names; bubble is the time in ``hcom_receive*`` ops; overlapped =
communication - not overlapped; stage = computing + not overlapped + free - bubble.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from studio.core.errors import UserError
from studio.tools.profiler.cluster.discover import RankDir
from studio.tools.profiler.db_reader import open_readonly
from studio.tools.profiler.rank_files import EXPORT_AGAIN, cell_float, db_tables, query, read_csv, read_json

# column in analysis.db, column in step_trace_time.csv, key in Studio's output
FIELDS = (
    ("computing", "Computing", "computing_us"),
    ("communication_not_overlapped", "Communication(Not Overlapped)", "communication_not_overlapped_us"),
    ("overlapped", "Overlapped", "overlapped_us"),
    ("communication", "Communication", "communication_us"),
    ("free", "Free", "free_us"),
    ("stage", "Stage", "stage_us"),
    ("bubble", "Bubble", "bubble_us"),
    ("communication_not_overlapped_and_exclude_receive", "Communication(Not Overlapped and Exclude Receive)",
     "communication_not_overlapped_exclude_receive_us"),
    ("preparing", "Preparing", "preparing_us"),
)
OPTIONAL = {"preparing", "Preparing"}  # older exports have no Preparing


@dataclass
class StepRow:
    """One rank's time in one step, in microseconds (``preparing_us`` None when not exported)."""

    rank: int
    step: int | None
    computing_us: float
    communication_not_overlapped_us: float
    overlapped_us: float
    communication_us: float
    free_us: float
    stage_us: float
    bubble_us: float
    communication_not_overlapped_exclude_receive_us: float
    preparing_us: float | None
    source: str = ""


def read_rank_steps(rank: RankDir, warnings: list[str]) -> list[StepRow]:
    """The step rows of one rank from the best source it has (db, then text, then msprof timeline)."""
    if rank.kind == "msprof":
        return _from_timelines(rank)
    db, csv = rank.files.get("analysis_db"), rank.files.get("step_trace_csv")
    if db is not None:
        rows = _from_analysis_db(rank.rank, db, needed=csv is None)
        if rows is not None:
            return rows
        warnings.append(f"rank {rank.rank}: {db} has no StepTraceTime table; step_trace_time.csv was read")
    if csv is not None:
        return _from_csv(rank.rank, csv)
    raise UserError(f"Rank {rank.rank} has no step time: neither analysis.db nor step_trace_time.csv is in "
                    f"its ASCEND_PROFILER_OUTPUT", rank.path,
                    "Parse the profile with torch_npu's analyse() (Level1 or higher) so it writes them.")


def _from_analysis_db(rank: int, path: Path, needed: bool) -> list[StepRow] | None:
    with open_readonly(path) as db:
        try:
            tables = db_tables(db)
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{path.name} is not a readable SQLite database: {exc}", path, EXPORT_AGAIN) from exc
        if "StepTraceTime" not in tables:
            if needed:
                raise UserError(f"{path.name} has no StepTraceTime table (needed for the step time)", path,
                                EXPORT_AGAIN)
            return None
        have = {r[1] for r in query(db, path, "PRAGMA table_info(StepTraceTime)")}
        missing = [f[0] for f in FIELDS if f[0] not in have and f[0] not in OPTIONAL] + \
            ([] if "step" in have else ["step"])
        if missing:
            raise UserError(f"{path.name}: table StepTraceTime lacks the column(s) {', '.join(missing)}", path,
                            EXPORT_AGAIN)
        cols = ["step"] + [f[0] if f[0] in have else "NULL" for f in FIELDS]
        rows = query(db, path, f"SELECT {', '.join(cols)} FROM StepTraceTime")
    out = []
    for row in rows:
        values = [None if v is None else float(v) for v in row[1:]]
        if any(v is None for v, f in zip(values, FIELDS) if f[0] not in OPTIONAL):
            raise UserError(f"{path.name}: a StepTraceTime row of step {row[0]} has an empty value", path,
                            EXPORT_AGAIN)
        out.append(StepRow(rank, _step(row[0]), *values, source=str(path)))
    return out


def _from_csv(rank: int, path: Path) -> list[StepRow]:
    required = ["Step"] + [f[1] for f in FIELDS if f[1] not in OPTIONAL]
    out = []
    for row in read_csv(path, required):
        values = []
        for _db_col, column, _key in FIELDS:
            value = cell_float(row, column, path)
            if value is None and column not in OPTIONAL:
                raise UserError(f"{path.name}: {column} is empty", f"{path}, line {row['__line__']}", EXPORT_AGAIN)
            values.append(value)
        out.append(StepRow(rank, _step(row["Step"]), *values, source=str(path)))
    return out


def _step(value) -> int | None:
    if value is None or str(value).strip() == "":
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


_OVERLAP = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")


def _from_timelines(rank: RankDir) -> list[StepRow]:
    timelines = [p for role, p in sorted(rank.files.items()) if role.startswith("timeline_")]
    if not timelines:
        raise UserError(f"Rank {rank.rank} has no msprof timeline (timeline/msprof_*.json)", rank.path,
                        "Export the PROF_ folder with msprof --export=on so it writes the timeline.")
    out = []
    for path in timelines:
        events = read_json(path)
        if isinstance(events, dict):
            events = events.get("traceEvents", [])
        if not isinstance(events, list):
            raise UserError(f"{path.name} is not a Chrome trace (a list of events)", path, EXPORT_AGAIN)
        sums = dict.fromkeys(_OVERLAP, 0.0)
        bubble, step = 0.0, None
        for event in events:
            if not isinstance(event, dict):
                continue
            name = event.get("name", "")
            if name in sums:
                sums[name] += float(event.get("dur", 0) or 0)
            elif name.startswith("hcom_receive"):
                bubble += float(event.get("dur", 0) or 0)
            elif name.startswith("Iteration ") and step is None and isinstance(event.get("args"), dict):
                step = _step(event["args"].get("Iteration ID"))
        if not any(sums.values()):
            raise UserError(f"{path.name} has no Overlap Analysis events (Computing, Communication, Free)", path,
                            "Collect with task-time on (msprof --task-time=on) and export again.")
        if step is None and (m := re.search(r"_(\d+)\.json$", path.name)):
            step = int(m.group(1))
        comm, pure = sums["Communication"], sums["Communication(Not Overlapped)"]
        stage = sums["Free"] + sums["Computing"] + pure - bubble
        out.append(StepRow(rank.rank, step, sums["Computing"], pure, comm - pure, comm, sums["Free"], stage,
                           bubble, pure - bubble, None, source=str(path)))
    return out
