"""Statistics over a trace: per-name totals, a time range's aggregate, per-API rows.

``share`` is a name's *self* time (its duration minus the time of the slices nested in it) over
the self time of all op slices counted, so shares add up to 1 and a parent range does not count
its children twice; it drives the timeline colours (MindStudio's Timeline Color: <=5 % green,
5-10 % yellow, >=10 % red). The run's own wrapper slices — ONNX Runtime's ``model_run`` and
``SequentialExecutor::Execute``, session phases, iteration and user ranges — are not ops: they are
left out of the op statistics and of the denominator (:func:`wrapper_mask`; :func:`wrappers` lists
them), and are no one's parent in the ops' self time (:func:`self_time`). Warm-up iterations are left out too when the profile marks its measured iterations
(:func:`summary`, :func:`op_rows`; see :mod:`.measured`). Everything is vectorised over the slice columns (bincount by name id).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from studio.core.serial import to_json
from studio.tools.profiler import csv_tables, finish
from studio.tools.profiler.model import Trace

API_PROCESSES = ("CANN", "AscendCL", "Runtime", "GE", "HCCL API")
# Categories and names of slices that wrap a run rather than measure an op.
WRAPPER_CATS = frozenset({"Session", "annotation", "mstx"})
WRAPPER_NAMES = frozenset({"model_run", "SequentialExecutor::Execute", "session_initialization",
                           "model_loading_uri", "model_loading_array", "model_loading_from_saved_proto"})
_WRAPPER_PATTERN = re.compile(r"^(ProfilerStep#\d+|iteration \d+|warm-up \d+)$")


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
    self_us: float = field(default=0.0)


def by_name(trace: Trace, mask: np.ndarray | None = None, ops: bool = True,
            selfs: np.ndarray | None = None, wrapped: np.ndarray | None = None) -> list[NameStat]:
    """Per-name count/total/avg/min/max/self/share over the slices in ``mask`` (all when None),
    sorted by total time, largest first. With ``ops`` (the default) the run's wrapper slices are
    left out (:func:`wrapper_mask`); with ``ops=False`` only they are counted. ``selfs`` and
    ``wrapped`` are :func:`self_time` (with the wrappers transparent, for ops) and :func:`wrapper_mask`
    of ``trace`` when the caller has them."""
    keep = wrapper_mask(trace) if wrapped is None else wrapped
    if ops:
        keep = ~keep
    elif mask is not None:
        keep = keep.copy()  # ``&=`` below must not change the caller's mask
    if mask is not None:
        keep &= np.asarray(mask, dtype=bool)
    if selfs is None:
        selfs = self_time(trace, wrapper_mask(trace) if wrapped is None else wrapped) if ops else self_time(trace)
    if not keep.any():
        return []
    counts, totals, self_totals, mins, maxs = _name_totals(trace, keep, selfs)
    # Names that differ only as ids (a reader may intern one text twice) are merged by text.
    merged: dict[str, list[float]] = {}
    for i in np.flatnonzero(counts):
        row = merged.get(trace.names[i])
        if row is None:
            merged[trace.names[i]] = [int(counts[i]), float(totals[i]), int(mins[i]), int(maxs[i]),
                                      float(self_totals[i])]
        else:
            row[0] += int(counts[i])
            row[1] += float(totals[i])
            row[2] = min(row[2], int(mins[i]))
            row[3] = max(row[3], int(maxs[i]))
            row[4] += float(self_totals[i])
    grand = float(self_totals.sum()) or 1.0
    stats = [NameStat(name, c, t / 1e3, t / c / 1e3, lo / 1e3, hi / 1e3, st / grand, st / 1e3)
             for name, (c, t, lo, hi, st) in merged.items()]
    stats.sort(key=lambda s: (-s.total_us, s.name))
    return stats


def _name_totals(trace: Trace, keep: np.ndarray, selfs: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per name id over the slices in ``keep``: counts, total and self time, shortest and longest."""
    n_names = len(trace.names)
    k = finish.kernels_for(keep.size)
    if k is not None:  # one pass over the columns, no filtered copies of them
        return k.name_totals(np.ascontiguousarray(trace.name), np.ascontiguousarray(trace.dur),
                             np.ascontiguousarray(selfs, dtype=np.float64), np.ascontiguousarray(keep), n_names)
    names = np.asarray(trace.name)[keep]
    durs = np.asarray(trace.dur)[keep]
    selfs = selfs[keep]
    counts = np.bincount(names, minlength=n_names)
    totals = np.bincount(names, weights=durs, minlength=n_names)
    self_totals = np.bincount(names, weights=selfs, minlength=n_names)
    mins = np.full(n_names, np.iinfo(np.int64).max, dtype=np.int64)
    maxs = np.zeros(n_names, dtype=np.int64)
    np.minimum.at(mins, names, durs)
    np.maximum.at(maxs, names, durs)
    return counts, totals, self_totals, mins, maxs


def wrappers(trace: Trace, selfs: np.ndarray | None = None, wrapped: np.ndarray | None = None) -> list[NameStat]:
    """The run's own wrapper slices (model_run, iterations, session phases) by name; ``share`` is
    their total time over the trace's span (they are not ops)."""
    rows = by_name(trace, ops=False, selfs=selfs, wrapped=wrapped)
    span = trace.span_ns / 1e3 or 1.0
    for row in rows:
        row.share = row.total_us / span
    return rows


def wrapper_mask(trace: Trace) -> np.ndarray:
    """True for the slices that wrap a run (by category and by name) rather than measure an op."""
    cat_ids = [i for i, cat in enumerate(trace.cats) if cat in WRAPPER_CATS]
    name_ids = [i for i, name in enumerate(trace.names) if name in WRAPPER_NAMES or _WRAPPER_PATTERN.match(name)]
    mask = np.zeros(trace.size, dtype=bool)
    if cat_ids:
        mask |= np.isin(np.asarray(trace.cat), np.asarray(cat_ids, dtype=np.int32))
    if name_ids:
        mask |= np.isin(np.asarray(trace.name), np.asarray(name_ids, dtype=np.int32))
    return mask


def self_time(trace: Trace, transparent: np.ndarray | None = None) -> np.ndarray:
    """Each slice's duration minus the part of it covered by its direct children (ns, >= 0).

    Slices are sorted by (track, start, longest first) with their depth, so the parent of a slice
    at depth d is the last slice before it at depth d-1 on the same track. Slices in
    ``transparent`` (the run's wrappers, :func:`wrapper_mask`) are no one's parent: their children
    count against the nearest slice above them that is not transparent — so an If keeps the time
    of the executor that runs its subgraph (ONNX Runtime nests a ``SequentialExecutor::Execute``
    between the If and the subgraph's kernels) and loses only its kernels' time."""
    start = np.asarray(trace.start, dtype=np.int64)
    dur = np.asarray(trace.dur, dtype=np.int64)
    k = finish.kernels_for(start.size)
    if k is not None:  # one pass, two arrays, where the lines below make a dozen temporaries
        mask = np.zeros(1, bool) if transparent is None else np.ascontiguousarray(transparent, dtype=bool)
        return k.self_time(np.ascontiguousarray(start), np.ascontiguousarray(dur), np.ascontiguousarray(trace.depth),
                           np.ascontiguousarray(trace.track), mask, transparent is not None)
    out = dur.astype(np.float64)
    if not start.size:
        return out
    depth = np.asarray(trace.depth)
    track = np.asarray(trace.track)
    end = start + dur
    parent = np.full(start.size, -1, dtype=np.int64)
    for d in range(1, int(depth.max()) + 1):
        parents = np.flatnonzero(depth == d - 1)
        children = np.flatnonzero(depth == d)
        if not parents.size or not children.size:
            continue
        k = np.searchsorted(parents, children) - 1
        ok = k >= 0
        children, found = children[ok], parents[k[ok]]
        same = track[found] == track[children]
        parent[children[same]] = found[same]
        if transparent is not None:  # climb through wrappers (their parents are done: lower depth)
            up = children[same]
            through = parent[up] >= 0
            through[through] = transparent[parent[up][through]]
            parent[up[through]] = parent[parent[up[through]]]
    children = np.flatnonzero(parent >= 0)
    if transparent is not None:
        children = children[~transparent[children]]  # a wrapper's own children count, not it
    owner = parent[children]
    covered = np.minimum(end[children], end[owner]) - np.maximum(start[children], start[owner])
    np.clip(covered, 0, None, out=covered)
    out -= np.bincount(owner, weights=covered, minlength=out.size)
    np.clip(out, 0, None, out=out)
    return out


def nested_self_time(start: np.ndarray, dur: np.ndarray, group: np.ndarray | None = None) -> np.ndarray:
    """Self time of intervals that may nest (a kernel and the kernels of the subgraph it runs, on
    one thread): each duration minus the part covered by the intervals directly inside it, per
    ``group`` (a thread or stream; all one group when None). Same unit as ``dur``."""
    start = np.asarray(start, dtype=np.float64)
    dur = np.asarray(dur, dtype=np.float64)
    group = np.zeros(start.size, np.int64) if group is None else np.asarray(group)
    out = dur.copy()
    if start.size < 2:
        return out
    order = np.lexsort((-dur, start, group))
    s, e, g = start[order], start[order] + dur[order], group[order]
    same = g[1:] == g[:-1]
    if not np.any(same & (s[1:] < np.maximum.accumulate(e)[:-1])):
        return out  # nothing overlaps (the common case): self time is the duration
    stack: list[int] = []
    for k in range(order.size):  # intervals in start order; the stack holds the open ones
        while stack and (g[stack[-1]] != g[k] or e[stack[-1]] <= s[k]):
            stack.pop()
        if stack:
            parent = stack[-1]
            out[order[parent]] -= min(e[k], e[parent]) - s[k]
        stack.append(k)
    return np.clip(out, 0.0, None)


def in_range(trace: Trace, t0: int, t1: int, tracks: list[int] | None = None) -> np.ndarray:
    """Mask of the slices overlapping [t0, t1] (ns), optionally only on ``tracks``."""
    start = np.asarray(trace.start)
    mask = (start <= t1) & (start + np.asarray(trace.dur) >= t0)
    if tracks is not None:
        mask &= np.isin(np.asarray(trace.track), np.asarray(tracks, dtype=np.int32))
    return mask


def op_rows(trace: Trace, include_warmup: bool = False) -> tuple[list[NameStat], str]:
    """:func:`by_name` over the measured iterations (warm-ups left out unless ``include_warmup``)
    and the sentence saying what was counted — what the profiler's tables, the timeline colours
    and the graph overlay show."""
    from studio.tools.profiler.measured import measured

    counted = measured(trace, include_warmup)
    return by_name(trace, counted.mask), counted.note


def share_by_name_id(trace: Trace, rows: list[NameStat] | None = None) -> np.ndarray:
    """Share of op self time for every name id (for colouring slices); NaN for the run's wrapper
    slices, which are not ops. Pass ``rows`` (:func:`by_name` of the trace) when already computed:
    the rest is a few vectorised passes, cheap enough for the GUI thread."""
    by_text = {s.name: s.share for s in (rows if rows is not None else by_name(trace))}
    share = np.array([by_text.get(name, 0.0) for name in trace.names], dtype=np.float64)
    names = np.asarray(trace.name)
    wrapped = wrapper_mask(trace)
    n = len(trace.names)
    only_wrapper = (np.bincount(names[wrapped], minlength=n) > 0) & (np.bincount(names[~wrapped], minlength=n) == 0)
    share[only_wrapper] = np.nan
    return share


def summary(trace: Trace, top: int | None = None, include_warmup: bool = False) -> dict:
    """What ``studio profile stats --json`` prints: events, span_us, by_name (over the measured
    iterations, warm-ups left out unless ``include_warmup``: see ``measured``), wrappers."""
    from studio.tools.profiler.measured import measured

    wrapped = wrapper_mask(trace)  # once for both tables
    counted = measured(trace, include_warmup)
    rows = by_name(trace, counted.mask, selfs=self_time(trace, wrapped), wrapped=wrapped)
    return {
        "source": trace.source,
        "events": trace.size,
        "span_us": trace.span_ns / 1e3,
        "tracks": len(trace.tracks),
        "counters": len(trace.counters),
        "measured": to_json(counted),
        "by_name": to_json(rows[:top] if top else rows),
        "wrappers": to_json(wrappers(trace, self_time(trace), wrapped)),
        "warnings": trace.warnings,
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
