"""What the cluster panel shows, from the engines' JSON (``studio profile cluster|memory --json``).

Qt-free: the rows of the rank table for the chosen step, the matrix rows of the chosen
communication group (the heat map adds them up: :mod:`.heat_data`), the findings in one list, the layout lines, each rank's folder (for "Open in
Profiler") and the memory devices' labels and summaries. Times stay in the engines' units (µs)
and are shown in ms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

ALL = object()  # "all steps" / "all groups"

# (key in the engine's rank rows, column title)
PARTS = (("computing_us", "Computing"), ("communication_not_overlapped_us", "Comm. not overlapped"),
         ("overlapped_us", "Overlapped"), ("free_us", "Free"), ("bubble_us", "Bubble"),
         ("preparing_us", "Preparing"))
# The parts that add up to a step (overlapped is inside computing, bubble inside communication).
BAR_PARTS = ("computing_us", "communication_not_overlapped_us", "free_us", "preparing_us")
LAYOUT_KINDS = ("tp", "pp", "dp", "cp", "ep")


@dataclass
class Cell:
    """One heat-map cell: every selected matrix row from ``src`` to ``dst`` added up."""

    src: int
    dst: int
    size_mb: float
    time_ms: float
    bandwidth_gbps: float
    transports: list[str]
    groups: list[str]


def step_label(step) -> str:
    """How a step shows in the table and the step list (msprof-analyze's older outputs have none)."""
    return "-" if step is None else str(step)


def ms(value_us) -> str:
    return "-" if value_us is None else f"{value_us / 1000:,.3f}"


@dataclass
class ClusterState:
    """The report shown and the user's choices (step, communication group)."""

    folder: Path | None = None
    report: dict | None = None
    memory: dict | None = None
    memory_message: str = ""
    step: object = ALL
    group: object = ALL
    warnings: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ ranks
    def steps(self) -> list:
        """The steps of the report in order (None, a step without a number, first)."""
        found = {r["step"] for r in (self.report or {}).get("ranks", [])}
        return sorted(found, key=lambda s: (s is not None, str(type(s)), s if s is not None else 0))

    def _in_step(self, row: dict) -> bool:
        return self.step is ALL or row.get("step") == self.step

    def rank_rows(self) -> list[dict]:
        """The engine's rank rows of the chosen step, by rank then step."""
        rows = [r for r in (self.report or {}).get("ranks", []) if self._in_step(r)]
        return sorted(rows, key=lambda r: (r["rank"], step_label(r["step"])))

    def bar_total(self, row: dict) -> float:
        """The step as the bar draws it: computing + communication not overlapped + free + preparing."""
        return sum(row.get(k) or 0.0 for k in BAR_PARTS)

    def bar_scale(self, rows: list[dict] | None = None) -> float:
        """The longest bar among the rows shown (every bar is drawn to this scale, so ranks compare);
        ``rows``: those rows when the caller has them already."""
        return max((self.bar_total(r) for r in (self.rank_rows() if rows is None else rows)), default=0.0)

    def rank_folder(self, row: dict) -> Path | None:
        """The rank's own folder (``*_ascend_pt`` or ``PROF_*``), found above its source file; None
        for msprof-analyze's output, which holds no rank's timeline."""
        source = row.get("source")
        if not source:
            return None
        for parent in Path(source).parents:
            if parent.name.endswith("_ascend_pt") or parent.name.startswith("PROF_"):
                return parent
        return None

    def folder_files(self, row: dict) -> dict | None:
        """``{"timeline": [...], "files": [...]}`` of the rank's folder (listed by the cluster job),
        or None when it was not listed."""
        folder = self.rank_folder(row)
        return None if folder is None else ((self.report or {}).get("rank_folders") or {}).get(str(folder))

    def has_timeline(self, row: dict) -> bool:
        """Whether the rank's folder holds a file a timeline is drawn from (unknown counts as yes)."""
        files = self.folder_files(row)
        return files is None or bool(files["timeline"])

    def timeline_stand_in(self, row: dict) -> dict | None:
        """The rank to look at instead when ``row``'s has no timeline: one with a timeline in the
        same step, of the same pipeline stage first, then the nearest rank number."""
        others = [r for r in self.rank_rows() if r["rank"] != row["rank"] and r.get("step") == row.get("step")
                  and self.rank_folder(r) is not None and self.folder_files(r) is not None and self.has_timeline(r)]
        same_stage = lambda r: r.get("pp_stage") is None or r.get("pp_stage") != row.get("pp_stage")  # noqa: E731
        return min(others, key=lambda r: (same_stage(r), abs(r["rank"] - row["rank"]), r["rank"]), default=None)

    # ------------------------------------------------------------------ communication
    def group_names(self) -> list[str]:
        return sorted({m["group"] for m in (self.report or {}).get("matrix", []) if self._in_step(m)})

    def matrix_rows(self) -> list[dict]:
        return [m for m in (self.report or {}).get("matrix", [])
                if self._in_step(m) and (self.group is ALL or m["group"] == self.group)]

    def matrix_ranks(self) -> list[int]:
        """The heat map's axes: every rank of the report and every rank a link reaches."""
        report = self.report or {}
        ranks = {r["rank"] for r in report.get("ranks", [])}
        ranks |= {m[k] for m in report.get("matrix", []) for k in ("src", "dst")}
        return sorted(ranks)

    # ------------------------------------------------------------------ findings and layout
    def findings(self) -> list[dict]:
        """Slow ranks, stage imbalances and slow links of the chosen step: ``{title, rank, evidence}``."""
        report = self.report or {}
        out = []
        for f in report.get("slow_ranks", []):
            if self._in_step(f):
                out.append({"title": f"{f.get('verdict', 'slow rank')}: rank {f['rank']} ({f['part']}, "
                                     f"{f['spread'] * 100:.1f} %)", "kind": f.get("verdict", "slow rank"),
                            "rank": f["rank"], "evidence": f["evidence"]})
        for f in report.get("slow_links", []):
            if self._in_step(f):
                where = f"rank {f['link']}" if f.get("kind") == "rank" else f"link {f['link']}"
                rank = f["link"] if f.get("kind") == "rank" else f["link"].split("->")[0]
                # a spread between links, or (kind "reference") a share of the transport's nominal bandwidth
                measure = (f"{f['of_reference']:.0%} of {f['reference_gbps']:g} GB/s" if "spread" not in f
                           else f"{f['spread'] * 100:.1f} %")
                out.append({"title": f"{f.get('verdict', 'slow link')}: {where} {f['transport']} ({measure})",
                            "kind": "slow link", "rank": _int(rank), "evidence": f["evidence"]})
        return out

    def layout_lines(self) -> list[tuple[str, str]]:
        """(title, text) lines for the stages and the parallel groups."""
        report = self.report or {}
        lines = []
        for s in report.get("stages", []):
            if self._in_step(s):
                lines.append((f"stage {s['stage']}", f"ranks {_ranks(s['ranks'])}: max computing "
                              f"{ms(s.get('computing_us'))} ms, max comm. not overlapped "
                              f"{ms(s.get('communication_not_overlapped_us'))} ms, max bubble "
                              f"{ms(s.get('bubble_us'))} ms"))
        groups = report.get("groups", {})
        sizes = groups.get("sizes") or {}
        if sizes:
            lines.append(("sizes", ", ".join(f"{k.upper()} {v}" if k != "world_size" else f"world {v}"
                                             for k, v in sizes.items())))
        for kind in LAYOUT_KINDS:
            if groups.get(kind):
                lines.append((kind.upper(), ", ".join(_ranks(g) for g in groups[kind])))
        for name, members in (groups.get("other") or {}).items():
            lines.append((name, ", ".join(_ranks(g) for g in members)))
        for kind in ("collective", "p2p"):
            if groups.get(kind):
                lines.append((kind, ", ".join(_ranks(g) for g in groups[kind])))
        if groups.get("source"):
            lines.append(("from", groups["source"]))
        return lines

    def source_text(self) -> str:
        source = (self.report or {}).get("source", {})
        text = f"{source.get('ranks', 0)} ranks, {source.get('kind', '')} export"
        return text + (f" — {source['note']}" if source.get("note") else "")

    # ------------------------------------------------------------------ memory
    def memory_devices(self) -> list[dict]:
        return (self.memory or {}).get("devices", [])


def device_label(device: dict) -> str:
    """``rank0_ascend_pt NPU:0``, or ``… static graph: model 0 graph 1`` for a static graph."""
    label = f"{device.get('rank_folder', '')} {device['device']}".strip()
    if device.get("graph") is not None:
        label += f" — static graph: model {device['model']} graph {device['graph']}"
    return label


def device_summary(device: dict) -> str:
    """One line: the peak, when, reserved, the process's own reservation, the whole device's memory in
    use (NPU_MEM of the db export, npu_mem.csv of the text export) and the blocks alive at the peak."""
    if device.get("peak_allocated_mb") is None:
        return "Module peaks only: this device has no allocator samples."
    if device.get("peak_node_index") is not None:
        at = f"at node {device['peak_node_index']} of the graph"
    else:
        start = (device.get("series") or {}).get("ts_us") or [device["peak_ts_us"]]
        at = f"at {(device['peak_ts_us'] - start[0]) / 1000:,.3f} ms"
    parts = [f"Peak allocated {device['peak_allocated_mb']:,.3f} MB {at}"]
    if device.get("peak_reserved_mb") is not None:
        parts.append(f"reserved {device['peak_reserved_mb']:,.3f} MB")
    if device.get("peak_app_reserved_mb") is not None:
        parts.append(f"process {device['peak_app_reserved_mb']:,.3f} MB")
    if "peak_device_mb" in device:
        parts.append("device total not in this export (no NPU_MEM, no npu_mem.csv)" if device["peak_device_mb"] is None
                     else f"device total {device['peak_device_mb']:,.3f} MB")
    if device.get("alive_blocks_at_peak") is not None:
        parts.append(f"{device['alive_blocks_at_peak']} blocks alive ({device['alive_mb_at_peak']:,.3f} MB)")
    return "; ".join(parts)


def _ranks(ranks: list[int]) -> str:
    return "[" + ", ".join(str(r) for r in ranks) + "]"


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
