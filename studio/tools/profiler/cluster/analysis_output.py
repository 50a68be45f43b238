"""msprof-analyze's own cluster output (``cluster_analysis_output``) read back into Studio's shape.

Text mode: ``cluster_step_trace_time.csv`` (rows of Type ``rank`` and ``stage``),
``cluster_communication_matrix.json`` and ``cluster_communication.json`` (keyed by group, then
step, then op, in global ranks) and ``communication_group.json``. Db mode: the same in
``cluster_analysis.db`` (``ClusterStepTraceTime``, ``ClusterCommunicationMatrix``,
``CommunicationGroupMapping``). Older outputs have no Preparing column and an empty Step.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.tools.profiler.cluster.bandwidth import TOTAL
from studio.tools.profiler.cluster.matrix import counted, step_number
from studio.tools.profiler.cluster.step_time import FIELDS, OPTIONAL, StepRow, _step
from studio.tools.profiler.db_reader import open_readonly
from studio.tools.profiler.rank_files import EXPORT_AGAIN, cell_float, query, read_csv, read_json, require_tables

STEP_CSV, MATRIX_JSON, COMM_JSON, GROUP_JSON, DB = ("cluster_step_trace_time.csv", "cluster_communication_matrix.json",
                                                     "cluster_communication.json", "communication_group.json",
                                                     "cluster_analysis.db")


@dataclass
class AnalysisOutput:
    """What the folder holds, in the shapes the engine uses."""

    rows: list[StepRow] = field(default_factory=list)
    stages: list[dict] = field(default_factory=list)
    matrix: list[dict] = field(default_factory=list)
    bandwidth: dict[int, dict[tuple[str, str], list[float]]] = field(default_factory=dict)
    groups: dict = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def read_analysis_output(folder: Path) -> AnalysisOutput:
    """Read a ``cluster_analysis_output`` folder (text files, else cluster_analysis.db)."""
    out = AnalysisOutput()
    if (folder / STEP_CSV).is_file():
        _steps_csv(folder / STEP_CSV, out)
    elif (folder / DB).is_file():
        _steps_db(folder / DB, out)
    else:
        raise UserError(f"This cluster_analysis_output has neither {STEP_CSV} nor {DB}", folder,
                        "Run msprof-analyze cluster -d DIR -m all again, or open the ranks' folders.")
    if (folder / MATRIX_JSON).is_file():
        out.matrix = _matrix_json(folder / MATRIX_JSON)
        out.files.append(MATRIX_JSON)
    if (folder / COMM_JSON).is_file():
        out.bandwidth = _bandwidth_json(folder / COMM_JSON)
        out.files.append(COMM_JSON)
    if (folder / GROUP_JSON).is_file():
        data = read_json(folder / GROUP_JSON)
        out.groups = {k: v for k, v in (data or {}).items() if k in ("collective", "p2p")}
        out.files.append(GROUP_JSON)
    return out


def _steps_csv(path: Path, out: AnalysisOutput) -> None:
    required = ["Step", "Type", "Index"] + [f[1] for f in FIELDS if f[1] not in OPTIONAL]
    for row in read_csv(path, required):
        values = [cell_float(row, f[1], path, empty=None if f[1] in OPTIONAL else 0.0) for f in FIELDS]
        _add(out, row["Type"], row["Index"], _step(row["Step"]), values, str(path))
    out.files.append(STEP_CSV)


def _steps_db(path: Path, out: AnalysisOutput) -> None:
    with open_readonly(path) as db:
        require_tables(db, path, ["ClusterStepTraceTime"], "the step time")
        have = {r[1] for r in query(db, path, "PRAGMA table_info(ClusterStepTraceTime)")}
        cols = ["step", "type", "[index]"] + [f[0] if f[0] in have else "NULL" for f in FIELDS]
        rows = query(db, path, f"SELECT {', '.join(cols)} FROM ClusterStepTraceTime")
        if "ClusterCommunicationMatrix" in {r[0] for r in query(db, path, "SELECT name FROM sqlite_master")}:
            out.matrix = [{"step": step_number(r[0]), "group": str(r[1]), "group_id": str(r[1]),
                           "src": int(float(r[2])),
                           "dst": int(float(r[3])), "transport": r[4], "size_mb": float(r[5] or 0),
                           "time_ms": float(r[6] or 0), "bandwidth_gbps": float(r[7] or 0)}
                          for r in query(db, path, "SELECT step, group_name, src_rank, dst_rank, transport_type, "
                                                   "transit_size, transit_time, bandwidth FROM "
                                                   "ClusterCommunicationMatrix WHERE hccl_op_name = ?", (TOTAL,))]
    for step, kind, index, *values in rows:
        _add(out, str(kind), str(index), _step(step), [None if v is None else float(v) for v in values], str(path))
    out.files.append(DB)


def _add(out: AnalysisOutput, kind: str, index: str, step, values: list, source: str) -> None:
    if kind == "rank":
        try:
            rank = int(float(index))
        except ValueError:
            raise UserError(f"{Path(source).name}: rank index {index!r} is not a number", source, EXPORT_AGAIN) \
                from None
        out.rows.append(StepRow(rank, step, *values, source=source))
    elif kind == "stage":
        ranks = sorted(int(x) for x in re.findall(r"\d+", index))
        out.stages.append({"step": step, "ranks": ranks,
                           **{f[2]: v for f, v in zip(FIELDS, values)}})


def _matrix_json(path: Path) -> list[dict]:
    data = read_json(path)
    rows = []
    for group, steps in (data or {}).items():
        for step, ops in (steps or {}).items():
            chosen = {k: v for k, v in (ops or {}).items() if k == TOTAL} or \
                {k: v for k, v in (ops or {}).items() if counted(k)}
            sums: dict = defaultdict(lambda: ["", 0.0, 0.0])
            for links in chosen.values():
                for key, link in (links or {}).items():
                    src, dst = (int(x) for x in key.split("-", 1))
                    entry = sums[(src, dst)]
                    entry[0] = entry[0] or link.get("Transport Type", "")
                    entry[1] += float(link.get("Transit Size(MB)", 0) or 0)
                    entry[2] += float(link.get("Transit Time(ms)", 0) or 0)
            for (src, dst), (transport, size, time) in sorted(sums.items()):
                rows.append({"step": step_number(step), "group": group, "group_id": group, "src": src, "dst": dst,
                             "transport": transport, "size_mb": size, "time_ms": time,
                             "bandwidth_gbps": size / time if time > 0 else 0.0})
    return rows


def _bandwidth_json(path: Path) -> dict[int, dict[tuple[str, str], list[float]]]:
    data = read_json(path)
    out: dict = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for steps in (data or {}).values():
        for step, ops in (steps or {}).items():
            for op, ranks in (ops or {}).items():
                if op == TOTAL or op.split("@")[0] == TOTAL:
                    continue
                for rank, info in (ranks or {}).items():
                    for transport, values in ((info or {}).get("Communication Bandwidth Info") or {}).items():
                        entry = out[int(rank)][(step_number(step), transport)]
                        entry[0] += float(values.get("Transit Size(MB)", 0) or 0)
                        entry[1] += float(values.get("Transit Time(ms)", 0) or 0)
    return {rank: dict(v) for rank, v in out.items()}


def stage_index(stages: list[dict]) -> dict[int, int]:
    """rank -> stage number from msprof-analyze's stage rows (stages in order of their first rank)."""
    ordered = sorted({tuple(s["ranks"]) for s in stages}, key=lambda r: r[0] if r else 0)
    return {rank: i for i, ranks in enumerate(ordered) for rank in ranks}
