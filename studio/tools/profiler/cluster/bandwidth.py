"""Each rank's bandwidth per transport (RDMA, SDMA, HCCS, ...) over a step: what a slow link shows in.

From ``communication.json`` ("Communication Bandwidth Info" of every op) or ``analysis.db``
(``CommAnalyzerBandwidth``). Per rank and transport, size and time are added over the step's ops
(not the "Total Op Info" entry, which repeats them) and bandwidth = size / time, as
msprof-analyze's slow-link check does. The db table repeats an op's size and time on one row
per packet-size bucket, so each (op, transport) is counted once.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from studio.core.errors import UserError
from studio.tools.profiler.cluster.discover import RankDir
from studio.tools.profiler.cluster.matrix import step_number
from studio.tools.profiler.db_reader import open_readonly
from studio.tools.profiler.rank_files import EXPORT_AGAIN, json_number, json_object, query, read_json, require_tables

TOTAL = "Total Op Info"


def read_bandwidth(rank: RankDir, use_db: bool) -> dict[tuple, list[float]]:
    """``{(step, transport): [size_mb, time_ms]}`` for one rank (empty when it recorded none)."""
    if use_db:
        return _from_db(rank.files["analysis_db"])
    path = rank.files.get("communication_json")
    return _from_json(path) if path is not None else {}


def _from_db(path: Path) -> dict[tuple[str, str], list[float]]:
    with open_readonly(path) as db:
        require_tables(db, path, ["CommAnalyzerBandwidth"], "the link bandwidth")
        rows = query(db, path, "SELECT step, group_name, hccl_op_name, transport_type, transit_size, transit_time "
                               "FROM CommAnalyzerBandwidth")
    seen, out = set(), defaultdict(lambda: [0.0, 0.0])
    for step, group, op, transport, size, time in rows:
        key = (step_number(step), str(group), str(op), str(transport))
        if op == TOTAL or key in seen:
            continue
        seen.add(key)
        out[(key[0], key[3])][0] += float(size or 0)
        out[(key[0], key[3])][1] += float(time or 0)
    return dict(out)


def _from_json(path: Path) -> dict[tuple[str, str], list[float]]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise UserError(f"{path.name} is not a communication file (expected {{step: {{p2p|collective: ...}}}})",
                        path, EXPORT_AGAIN)
    out = defaultdict(lambda: [0.0, 0.0])
    for step, kinds in data.items():
        for kind, ops in json_object(kinds, path, f"step {step}").items():
            for op, info in json_object(ops, path, f"{step}/{kind}").items():
                if op.split("@")[0] == TOTAL:
                    continue
                bandwidth = json_object(json_object(info, path, op).get("Communication Bandwidth Info"), path,
                                        f"{op} Communication Bandwidth Info")
                for transport, values in bandwidth.items():
                    values = json_object(values, path, f"{op} {transport}")
                    out[(step_number(step), transport)][0] += json_number(values.get("Transit Size(MB)"), path,
                                                                          f"{op} {transport} Transit Size(MB)")
                    out[(step_number(step), transport)][1] += json_number(values.get("Transit Time(ms)"), path,
                                                                          f"{op} {transport} Transit Time(ms)")
    return dict(out)
