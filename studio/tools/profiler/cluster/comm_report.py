"""``studio profile cluster DIR --comm``: why a rank is slow in its collectives, as one report.

Puts together :mod:`.comm_time` (each op's time split per rank, the per-group totals, who waited
for whom) and :mod:`.bottleneck` (the slow rank of each long op: host- or device-bound), with the
groups named and their ranks listed, and each rank's folder (where the timeline jumps go).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import Progress
from studio.core.serial import to_json
from studio.tools.profiler.cluster.bottleneck import bottlenecks
from studio.tools.profiler.cluster.bottleneck_sources import rank_sources
from studio.tools.profiler.cluster.comm_time import CommTimes, OpTime, read_op_times, times_of
from studio.tools.profiler.cluster.discover import ClusterInput, find_ranks
from studio.tools.profiler.cluster.groups import layout_of, rank_metadata
from studio.tools.profiler.cluster.slow import step_text


@dataclass
class CommReport(CommTimes):
    """:class:`.CommTimes` as JSON rows (``ops`` as dicts, ``sources`` keyed by the rank as text), with
    the slow ops' causes, the groups named, each rank's folder and what the report could not tell."""

    bottlenecks: list[dict] = field(default_factory=list)
    groups: dict[str, dict] = field(default_factory=dict)     # group id -> {name, ranks, kind}
    rank_folders: dict[str, str] = field(default_factory=dict)
    sources_of_causes: dict[str, str] = field(default_factory=dict)  # rank -> "db" or "trace_view.json"
    warnings: list[str] = field(default_factory=list)

    def group_label(self, group_id: str) -> str:
        """``tp (0, 1)``, or the group's hash and ranks when it has no name."""
        group = self.groups.get(group_id, {})
        ranks = ", ".join(map(str, group.get("ranks", [])))
        return f"{group.get('name') or group_id} ({ranks})"

    def __str__(self) -> str:
        lines = ["collective time per rank and group (ms; ratios: wait/(wait+transit), sync/(sync+transit))",
                 f"{'step':>6} {'rank':>4}  {'group':<40} {'ops':>4} {'elapse':>10} {'transit':>10} {'wait':>10} "
                 f"{'sync':>10} {'idle':>10} {'wait r':>7} {'sync r':>7}"]
        for t in self.totals:
            lines.append(f"{'' if t['step'] is None else t['step']:>6} {t['rank']:>4}  "
                         f"{self.group_label(t['group_id'])[:40]:<40} {t['ops']:>4} "
                         + " ".join(f"{t[k]:>10,.3f}" for k in ("elapse_ms", "transit_ms", "wait_ms", "sync_ms",
                                                                 "idle_ms"))
                         + f" {t['wait_ratio']:>7.4f} {t['sync_ratio']:>7.4f}")
        if not self.group_waits:
            lines.append("waits: no rank waited 0.1 ms or more in a collective for another")
        for g in self.group_waits:
            lines.append(f"waits: in {self.group_label(g['group_id'])}, {step_text(g['step'])}, the others waited "
                         f"{g['wait_ms']:,.3f} ms in {g['ops']} op(s) for rank {g['waited_for']} (it arrived last)"
                         + "".join(f"; {o['wait_ms']:,.3f} ms in {o['ops']} op(s) for rank {o['rank']}"
                                   for o in g["others"]))
        for b in self.bottlenecks:
            lines.append(f"slow op {b['op']} ({b['duration_ns'] / 1e6:,.3f} ms): {b['verdict']} — {b['reason']}")
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)


def open_comm(folder: Path, target: int | None = None, top: int = 10) -> CommReport:
    """The communication report of the ranks in ``folder`` (their own folders, not msprof-analyze's output)."""
    found = comm_ranks(folder)
    return assemble_comm([comm_parts(found, with_spans=False)], target, top, rank_sources(found.ranks))


def comm_json(folder: str, cancel=None) -> Generator[Progress, None, dict]:
    """:func:`open_comm` as a job returning its JSON (what a worker process sends back)."""
    yield Progress(None, f"splitting the collectives' time of {Path(folder).name}")
    return to_json(open_comm(Path(folder)))


def comm_ranks(folder: Path) -> ClusterInput:
    """The ranks of ``folder``; a UserError when it is msprof-analyze's output (no per-op rows)."""
    found = find_ranks(Path(folder))
    if not found.ranks:
        raise UserError("The collective time split reads the ranks' own folders; this is msprof-analyze's "
                        "output, which keeps only group totals", folder,
                        "Give the folder that holds the *_ascend_pt folders of the ranks.")
    return found


def comm_parts(found: ClusterInput, with_spans: bool = True) -> dict:
    """What the report is made of, per rank, as JSON: op rows, metadata, and (``with_spans``, what a
    host sends back) the rank's communication op spans and which export its causes are read from."""
    sources = rank_sources(found.ranks) if with_spans else {}
    ranks = []
    for rank in found.ranks:
        ops, source = read_op_times(rank) if rank.kind == "pytorch" else ([], "")
        part = {"rank": rank.rank, "kind": rank.kind, "folder": str(rank.path), "ops": [to_json(o) for o in ops],
                "ops_file": source, "metadata": rank_metadata(rank)}
        if rank.rank in sources:
            part["cause_source"] = sources[rank.rank].kind
            part["spans"] = [list(span) for span in sources[rank.rank].ops()]
        ranks.append(part)
    return {"ranks": ranks}


def assemble_comm(parts: list[dict], target: int | None, top: int, sources: dict) -> CommReport:
    """The report of every folder's or host's :func:`comm_parts`; ``sources`` (rank -> what the
    causes are read from) may raise :class:`.Pending` while a host has questions to answer."""
    ranks = sorted((rank for part in parts for rank in part["ranks"]), key=lambda r: r["rank"])
    times = times_of([OpTime(**{k: v for k, v in op.items() if k not in ("wait_ratio", "sync_ratio")})
                      for rank in ranks for op in rank["ops"]],
                     {rank["rank"]: rank["ops_file"] for rank in ranks if rank["ops_file"]})
    report = CommReport(ops=[to_json(o) for o in times.ops], totals=times.totals, waits=times.waits,
                        group_waits=times.group_waits, rank_folders={str(r["rank"]): r["folder"] for r in ranks},
                        sources={str(k): v for k, v in times.sources.items()})
    layout = layout_of([rank["metadata"] for rank in ranks])
    for op in times.ops:
        group = report.groups.setdefault(op.group_id, {"name": layout.name_by_hash.get(op.group_id, ""),
                                                       "kind": op.kind, "ranks": []})
        if op.rank not in group["ranks"]:
            group["ranks"].append(op.rank)
    for group_id, group in report.groups.items():
        known = layout.by_hash.get(group_id)
        group["ranks"] = sorted(known) if known else sorted(group["ranks"])
    missing = [r["rank"] for r in ranks if r["rank"] not in times.sources and r["kind"] == "pytorch"]
    if missing:
        report.warnings.append(f"rank(s) {', '.join(map(str, missing))}: no communication.json and no "
                               f"CommAnalyzerTime in analysis.db, so no collective times")
    if any(r["kind"] == "msprof" for r in ranks):
        report.warnings.append("msprof PROF_ ranks carry no per-op communication analysis: left out")
    if not sources:
        report.warnings.append("no rank has its ascend_pytorch_profiler_<rank>.db (db export) or trace_view.json "
                               "(text export), so the slow collectives' causes (host- or device-bound) cannot be told")
    else:
        report.bottlenecks = [to_json(b) for b in bottlenecks([], target, top, sources)]
        report.sources_of_causes = {str(rank): source.kind for rank, source in sorted(sources.items())}
    return report
