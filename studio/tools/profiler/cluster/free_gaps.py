"""Why a rank's device sat idle: each free gap on its timeline labelled with its cause.

What msprof-analyze's ``free_analysis`` recipe does, for every gap rather than the 10 longest, with
totals per cause. A *free gap* lies between two busy stretches of the device (compute tasks and
communication ops merged, :mod:`.free_sources`).

The rules each gap is labelled by are in :mod:`.free_labels`; a rank's labelled gaps come from
the cache when its timeline is unchanged (:mod:`.free_ranks`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from studio.core.errors import UserError
from studio.core.jobs import Progress
from studio.tools.profiler.cluster.discover import OUTPUT, find_ranks
from studio.tools.profiler.cluster.free_labels import LABELS
from studio.tools.profiler.cluster.free_ranks import labelled_all, timeline_file


@dataclass
class FreeReport:
    """Every free gap of every rank with a device timeline, and the totals per label."""

    # {rank, start_ns, end_ns (the rank's own clock), offset_us (from its first busy start), duration_us,
    #  label, reason, python_idle_us, cann_idle_us, device_tasks, remaining_free_us}
    gaps: list[dict] = field(default_factory=list)
    totals: list[dict] = field(default_factory=list)   # {rank, label, gaps, total_us, share}
    ranks: list[dict] = field(default_factory=list)    # {rank, source, gaps, free_us}
    rank_folders: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    top: int = 10

    def __str__(self) -> str:
        lines = ["free time per rank and cause (µs; a gap is idle device time between busy stretches)",
                 f"{'rank':>4}  {'cause':<20} {'gaps':>6} {'total µs':>14} {'share':>7}"]
        for t in self.totals:
            lines.append(f"{t['rank']:>4}  {t['label']:<20} {t['gaps']:>6} {t['total_us']:>14,.3f} {t['share']:>7.1%}")
        for rank in self.ranks:
            longest = sorted((g for g in self.gaps if g["rank"] == rank["rank"]), key=lambda g: -g["duration_us"])
            lines.append(f"rank {rank['rank']} ({rank['source']}): {rank['gaps']} gaps, {rank['free_us']:,.3f} µs "
                         f"free; the {min(self.top, len(longest))} longest (at: from the device's first busy "
                         f"start):")
            lines.extend(f"  at {g['offset_us']:>12,.3f} µs, {g['duration_us']:>10,.3f} µs  {g['label']}: {g['reason']}"
                         for g in longest[:self.top])
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)


def open_free(folder: Path, top: int = 10, workers: int | None = None) -> FreeReport:
    """The labelled free gaps of the ranks in ``folder`` (their own folders): each rank's from the
    cache when its timeline file is unchanged, the others read in ``workers`` processes (default:
    one per core; see :mod:`.free_ranks`)."""
    found = find_ranks(Path(folder))
    if not found.ranks:
        raise UserError("The free-gap analysis reads the ranks' own timelines; this is msprof-analyze's output, "
                        "which keeps none", folder, "Give the folder that holds the *_ascend_pt folders of the ranks.")
    report = FreeReport(rank_folders={str(r.rank): str(r.path) for r in found.ranks}, top=top)
    ranks = sorted(found.ranks, key=lambda r: r.rank)
    sources = {rank.rank: timeline_file(rank) for rank in ranks}
    missing = [rank.rank for rank in ranks if sources[rank.rank] is None]
    with_timeline = [rank for rank in ranks if sources[rank.rank] is not None]
    entries = labelled_all([sources[rank.rank] for rank in with_timeline], workers)
    for rank, entry in zip(with_timeline, entries):
        gaps = entry.gaps
        for gap in gaps:
            gap["rank"] = rank.rank
        report.gaps.extend(gaps)
        free = sum(g["duration_us"] for g in gaps)
        report.ranks.append({"rank": rank.rank, "source": entry.source, "gaps": len(gaps), "free_us": free})
        counts = Counter(g["label"] for g in gaps)
        for label in LABELS:
            if counts[label]:
                total = sum(g["duration_us"] for g in gaps if g["label"] == label)
                report.totals.append({"rank": rank.rank, "label": label, "gaps": counts[label], "total_us": total,
                                      "share": total / free if free else 0.0})
    if missing:
        report.warnings.append(f"rank(s) {', '.join(map(str, missing))}: no device timeline (neither "
                               f"ascend_pytorch_profiler_<rank>.db with its TASK, CANN_API and PYTORCH_API tables nor "
                               f"trace_view.json), so their free time cannot be explained")
    return report


def free_view_json(folder: str, cancel=None) -> Generator[Progress, None, dict]:
    """:func:`open_free`'s JSON as the Cluster panel shows it (what a worker process sends back):
    its gaps only the :data:`SHOWN` longest of each rank and cause (every view of a rank, a cause or
    both lists its longest :data:`SHOWN` from them), longest first. 16 ranks of 1M events have
    ~140,000 gaps: sent whole, taking them in and listing them held the window for a second."""
    from studio.core.serial import to_json

    yield Progress(None, f"labelling the idle gaps of {Path(folder).name}")
    report = to_json(open_free(Path(folder)))
    report["gaps"] = longest_per_cause(report["gaps"], SHOWN)
    report["shown"] = SHOWN
    return report


SHOWN = 200  # gaps listed per view in the panel: the longest of the rank and cause chosen


def longest_per_cause(gaps: list[dict], shown: int = SHOWN) -> list[dict]:
    """The ``shown`` longest gaps of each rank and label, all of them longest first (ties in their
    order in ``gaps``)."""
    by_pair: dict[tuple, list[int]] = {}
    for i, gap in enumerate(gaps):
        by_pair.setdefault((gap["rank"], gap["label"]), []).append(i)
    keep = sorted(i for pair in by_pair.values() for i in sorted(pair, key=lambda i: -gaps[i]["duration_us"])[:shown])
    return sorted((gaps[i] for i in keep), key=lambda g: -g["duration_us"])


def trace_bytes(folder: Path) -> int:
    """The size of the ranks' trace_view.json files (what reading the text exports costs)."""
    total = 0
    for rank in find_ranks(Path(folder)).ranks:
        trace = rank.path / OUTPUT / "trace_view.json"
        if "profiler_db" not in rank.files and trace.is_file():
            total += trace.stat().st_size
    return total
