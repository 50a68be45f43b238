"""``open_cluster``: every rank of a folder read and put side by side.

For each rank the db export (``analysis.db``) is read when it is there, as msprof-analyze does,
and the report's ``source`` says so (and that the text files were left alone).
"""

from __future__ import annotations

import re
from collections.abc import Generator
from pathlib import Path

from studio.core.jobs import Progress
from studio.core.formats import CLUSTER, FileFormat, path_only
from studio.core.serial import to_json
from studio.tools.profiler.cluster import slow
from studio.tools.profiler.cluster.analysis_output import read_analysis_output, stage_index
from studio.tools.profiler.cluster.bandwidth import read_bandwidth
from studio.tools.profiler.cluster.discover import ANALYSIS_OUTPUT, OUTPUT, ClusterInput, find_ranks
from studio.tools.profiler.cluster.groups import layout_of, rank_metadata
from studio.tools.profiler.cluster.matrix import Link, build_matrix, read_links
from studio.tools.profiler.cluster.op_links import below_reference, build_op_links, op_type_spread
from studio.tools.profiler.cluster.report import ClusterReport
from studio.tools.profiler.cluster.step_time import FIELDS, read_rank_steps


def open_cluster(folder: Path) -> ClusterReport:
    """The cluster report of ``folder`` (ranks' folders, or msprof-analyze's output)."""
    found = find_ranks(Path(folder))
    if found.analysis_output is not None:
        return _from_analysis_output(found)
    return _from_ranks(found)


def cluster_json(folder: str, cancel=None) -> Generator[Progress, None, dict]:
    """:func:`open_cluster`'s JSON, as a job (what a worker process sends the Cluster panel back)."""
    yield Progress(None, f"reading the ranks of {Path(folder).name}")
    return to_json(open_cluster(Path(folder)))


def json_bytes(folder: Path) -> int:
    """The size of the JSON files :func:`open_cluster` decodes in ``folder`` (the ranks'
    communication.json and communication_matrix.json, or msprof-analyze's output)."""
    found = find_ranks(Path(folder))
    if found.analysis_output is not None:
        return sum(p.stat().st_size for p in found.analysis_output.glob("*.json") if p.is_file())
    return sum(rank.files[role].stat().st_size for rank in found.ranks
               for role in ("communication_json", "matrix_json") if role in rank.files)


def _from_ranks(found: ClusterInput) -> ClusterReport:
    return assemble([rank_parts(found)])


def rank_parts(found: ClusterInput) -> dict:
    """What the report is made of, per rank, as JSON: step rows, raw links, bandwidth, metadata.

    A host holding some of the ranks sends this back (``studio profile cluster DIR --parts``);
    :func:`assemble` makes the report of every host's parts, so links between ranks on different
    hosts are placed as if the folders were side by side."""
    warnings: list[str] = []
    ranks = []
    for rank in found.ranks:
        steps = read_rank_steps(rank, warnings)
        part = {"rank": rank.rank, "kind": rank.kind, "has_db": rank.has_db, "has_text": rank.has_text,
                "steps": [to_json(row) for row in steps], "metadata": rank_metadata(rank), "use_db": False,
                "links": [], "bandwidth": []}
        if rank.kind != "msprof":
            part["use_db"] = rank.has_db and any(s.source.endswith("analysis.db") for s in steps)
            part["links"] = [to_json(link) for link in read_links(rank, part["use_db"])]
            part["bandwidth"] = [[step, transport, size, time] for (step, transport), (size, time)
                                 in read_bandwidth(rank, part["use_db"]).items()]
        ranks.append(part)
    return {"ranks": ranks, "warnings": warnings}


def assemble(parts: list[dict]) -> ClusterReport:
    """The cluster report of the ranks in ``parts`` (one :func:`rank_parts` per folder or host)."""
    report = ClusterReport()
    ranks = [rank for part in parts for rank in part["ranks"]]
    for part in parts:
        report.warnings.extend(part["warnings"])
    layout = layout_of([rank["metadata"] for rank in ranks])
    rows, links, bandwidth, kinds, files = [], {}, {}, set(), []
    for rank in ranks:
        rows.extend(rank["steps"])
        files.extend(sorted({row["source"] for row in rank["steps"]}))
        if rank["kind"] == "msprof":
            kinds.add("msprof timeline")
            continue
        kinds.add("db" if rank["use_db"] else "text")
        links[rank["rank"]] = [Link(**link) for link in rank["links"]]
        bandwidth[rank["rank"]] = {(step, transport): [size, time]
                                   for step, transport, size, time in rank["bandwidth"]}
    report.matrix, unplaced = build_matrix(links, layout.by_hash, layout.name_by_hash)
    if unplaced:
        report.warnings.append(f"{unplaced} matrix links lead to ranks that were not profiled (or whose group "
                               f"is unknown) and are left out, as msprof-analyze does")
    stages = {rank["rank"]: layout.stage_of(rank["rank"]) for rank in ranks}
    report.ranks = [_rank_dict(dict(row), layout, stages) for row in rows]
    report.stages = _stage_rows(report.ranks, layout.groups.get("pp", []))
    report.groups = to_json(layout)
    report.slow_ranks = slow.slow_ranks(report.ranks, stages)
    report.op_links, _ = build_op_links(links, layout.by_hash, layout.name_by_hash)
    report.slow_links = (slow.slow_links(bandwidth, report.matrix) + op_type_spread(report.op_links)
                         + below_reference(report.matrix, report.op_links))
    both = [rank["rank"] for rank in ranks if rank["has_db"] and rank["has_text"]]
    report.source = {"kind": "/".join(sorted(kinds)), "ranks": len(ranks), "files": files,
                     "note": (f"text and db both present for rank(s) {', '.join(map(str, both))}: the db "
                              f"(analysis.db) was read" if both and "db" in kinds else "")}
    return report


def _rank_dict(row: dict, layout, stages: dict) -> dict:
    row["pp_stage"] = stages.get(row["rank"])
    for kind in ("tp", "dp"):
        row[f"{kind}_index"] = layout.index_of(row["rank"], kind)
    return row


def _stage_rows(ranks: list[dict], pp_groups: list[list[int]]) -> list[dict]:
    """msprof-analyze's stage rows: per step and pipeline stage, the maximum of each part."""
    if not pp_groups:
        return []
    by_stage: dict = {}
    for row in ranks:
        if row["pp_stage"] is not None:
            by_stage.setdefault((row["step"], row["pp_stage"]), []).append(row)
    out = []
    for (step, stage), members in sorted(by_stage.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        entry = {"step": step, "stage": stage, "ranks": sorted(m["rank"] for m in members)}
        for _db, _csv, key in FIELDS:
            values = [m[key] for m in members if m[key] is not None]
            entry[key] = max(values) if values else None
        out.append(entry)
    return out


def _from_analysis_output(found: ClusterInput) -> ClusterReport:
    data = read_analysis_output(found.analysis_output)
    report = ClusterReport()
    stages = stage_index(data.stages)
    report.ranks = [{**to_json(row), "pp_stage": stages.get(row.rank), "tp_index": None, "dp_index": None}
                    for row in data.rows]
    report.stages = [{**s, "stage": i} for i, s in enumerate(sorted(data.stages, key=lambda s: s["ranks"][0]))]
    report.matrix = data.matrix
    report.groups = {"collective": data.groups.get("collective", []), "p2p": data.groups.get("p2p", []),
                     "source": "communication_group.json" if data.groups else "none"}
    report.slow_ranks = slow.slow_ranks(report.ranks, stages if stages else {})
    report.slow_links = slow.slow_links(data.bandwidth, report.matrix) + below_reference(report.matrix, [])
    report.source = {"kind": "cluster_analysis_output", "ranks": len({r["rank"] for r in report.ranks}),
                     "files": [str(found.analysis_output / f) for f in data.files],
                     "note": "msprof-analyze's cluster output was read (no rank folders here)"}
    return report


_CLUSTER_OUTPUT_FILES = ("cluster_step_trace_time.csv", "cluster_analysis.db")
_PROF_DEVICE = re.compile(r"^device_\d+$")


def match_cluster_dir(path: Path) -> bool:
    """A folder holding 2+ ranks (``*_ascend_pt`` folders, ``PROF_*/device_N`` folders) within 3
    levels, or msprof-analyze's ``cluster_analysis_output``. Registered after the profiler's folder
    formats, and a rank folder itself is never taken: what the profiler opens stays its own."""
    name = path.name
    if name.endswith("_ascend_pt") or name.startswith("PROF_") or name == OUTPUT:
        return False
    if name == ANALYSIS_OUTPUT or any((path / f).is_file() for f in _CLUSTER_OUTPUT_FILES):
        return True
    ranks, budget, level = 0, 400, [path]
    for _depth in range(3):  # find_ranks looks deeper; the sniff stays a few hundred entries at most
        below = []
        for folder in level:
            try:
                children = [c for c in list(folder.iterdir())[:budget] if c.is_dir()]
            except OSError:
                continue
            budget -= len(children)
            for child in children:
                if child.name == ANALYSIS_OUTPUT:
                    return True
                if child.name.endswith("_ascend_pt"):
                    ranks += 1
                elif child.name.startswith("PROF_"):
                    ranks += _prof_devices(child)
                else:
                    below.append(child)
            if ranks >= 2:
                return True
            if budget <= 0:
                return False
        level = below
    return False


def _prof_devices(prof: Path) -> int:
    try:
        return sum(1 for c in prof.iterdir() if _PROF_DEVICE.match(c.name) and c.is_dir())
    except OSError:
        return 0


CLUSTER_DIR = FileFormat("cluster_dir", "Multi-rank profile (ranks side by side)", CLUSTER, match_cluster_dir,
                         path_only(open_cluster), folder=True)
