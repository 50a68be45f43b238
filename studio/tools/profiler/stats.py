"""Statistics over a trace: per-name totals, a time range's aggregate, per-API rows.

``share`` is a name's total time over the total time of all slices counted (so shares add up to
1); it drives the timeline colours (MindStudio's Timeline Color: <=5 % green, 5-10 % yellow,
>=10 % red). Everything is vectorised over the slice columns (bincount by name id).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from studio.tools.profiler import csv_tables
from studio.tools.profiler.model import Trace

API_PROCESSES = ("CANN", "AscendCL", "Runtime", "GE", "HCCL API")


@dataclass
class NameStat:
    """Aggregate of the slices sharing one name (times in microseconds)."""

    name: str
    count: int
    total_us: float
    avg_us: float
    min_us: float
    max_us: float
    share: float

    def as_dict(self) -> dict:
        """Plain dict (the ``by_name`` entries of ``studio profile stats --json``)."""
        return asdict(self)


def by_name(trace: Trace, mask: np.ndarray | None = None) -> list[NameStat]:
    """Per-name count/total/avg/min/max/share over the slices in ``mask`` (all when None),
    sorted by total time, largest first."""
    names = np.asarray(trace.name)
    durs = np.asarray(trace.dur)
    if mask is not None:
        names, durs = names[mask], durs[mask]
    if not names.size:
        return []
    n_names = len(trace.names)
    counts = np.bincount(names, minlength=n_names)
    totals = np.bincount(names, weights=durs, minlength=n_names)
    mins = np.full(n_names, np.iinfo(np.int64).max, dtype=np.int64)
    maxs = np.zeros(n_names, dtype=np.int64)
    np.minimum.at(mins, names, durs)
    np.maximum.at(maxs, names, durs)
    # Names that differ only as ids (a reader may intern one text twice) are merged by text.
    merged: dict[str, list[float]] = {}
    for i in np.flatnonzero(counts):
        row = merged.get(trace.names[i])
        if row is None:
            merged[trace.names[i]] = [int(counts[i]), float(totals[i]), int(mins[i]), int(maxs[i])]
        else:
            row[0] += int(counts[i])
            row[1] += float(totals[i])
            row[2] = min(row[2], int(mins[i]))
            row[3] = max(row[3], int(maxs[i]))
    grand = float(totals.sum()) or 1.0
    stats = [NameStat(name, c, t / 1e3, t / c / 1e3, lo / 1e3, hi / 1e3, t / grand)
             for name, (c, t, lo, hi) in merged.items()]
    stats.sort(key=lambda s: (-s.total_us, s.name))
    return stats


def in_range(trace: Trace, t0: int, t1: int, tracks: list[int] | None = None) -> np.ndarray:
    """Mask of the slices overlapping [t0, t1] (ns), optionally only on ``tracks``."""
    start = np.asarray(trace.start)
    mask = (start <= t1) & (start + np.asarray(trace.dur) >= t0)
    if tracks is not None:
        mask &= np.isin(np.asarray(trace.track), np.asarray(tracks, dtype=np.int32))
    return mask


def share_by_name_id(trace: Trace) -> np.ndarray:
    """Share of total time for every name id (for colouring slices)."""
    totals = np.bincount(np.asarray(trace.name), weights=np.asarray(trace.dur), minlength=len(trace.names))
    grand = totals.sum()
    return totals / grand if grand else totals


def summary(trace: Trace, top: int | None = None) -> dict:
    """What ``studio profile stats --json`` prints: events, span_us, by_name."""
    rows = by_name(trace)
    return {
        "source": trace.source,
        "events": trace.size,
        "span_us": trace.span_ns / 1e3,
        "tracks": len(trace.tracks),
        "counters": len(trace.counters),
        "by_name": [s.as_dict() for s in (rows[:top] if top else rows)],
    }


def api_rows(trace: Trace) -> list[dict]:
    """Per-API statistics: the api_statistic CSV when the profile has one, else computed from the
    host API slices (CANN / AscendCL / Runtime processes)."""
    table = trace.tables.get("api_statistic")
    if table is not None:
        cols = {c: i for i, c in enumerate(table.columns)}
        rows = []
        for row in table.rows:
            get = lambda key: csv_tables.number(row[cols[key]]) if key in cols else None  # noqa: E731
            rows.append({"level": row[cols["Level"]] if "Level" in cols else "", "name": row[cols["API Name"]],
                         "count": int(get("Count") or 0), "total_us": get("Time(us)") or 0.0,
                         "avg_us": get("Avg(us)") or 0.0, "min_us": get("Min(us)") or 0.0,
                         "max_us": get("Max(us)") or 0.0})
        return sorted(rows, key=lambda r: -r["total_us"])
    api_tracks = [t.id for t in trace.tracks if t.process in API_PROCESSES]
    if not api_tracks:
        return []
    mask = np.isin(np.asarray(trace.track), np.asarray(api_tracks, dtype=np.int32))
    rows = []
    for s in by_name(trace, mask):
        level, _, api = s.name.partition("@") if "@" in s.name else ("", "", s.name)
        rows.append({"level": level, "name": api, "count": s.count, "total_us": s.total_us,
                     "avg_us": s.avg_us, "min_us": s.min_us, "max_us": s.max_us})
    return rows


def table_rows(trace: Trace, kind: str) -> tuple[list[str], list[list[str]]]:
    """Columns and rows of a summary table (op_summary = the AI Core metrics table)."""
    table = trace.tables.get(kind)
    return (list(table.columns), table.rows) if table is not None else ([], [])
