"""Levels of detail for drawing millions of slices: per row, slices merged per time bucket.

A *row* is one (track, depth) pair. Level 0 is the row's own slices; level k merges the items of
level k-1 that fall in the same bucket of ``BASE_NS * 8**k`` nanoseconds into one item that spans
them and remembers the longest slice (its name and colour represent the merged run) — the idea of
Perfetto's slice mipmap and catapult's FastRectRenderer. A frame picks the coarsest level whose
bucket is at most one pixel, so it never touches more than a few items per pixel column, whatever
the zoom, and merges the rest per pixel column (keeping the longest).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from studio.tools.profiler import finish

BASE_NS = 1024
FACTOR = 8


@dataclass
class Level:
    """Merged items of all rows at one bucket size, sorted by (row, start)."""

    bucket_ns: int
    start: np.ndarray      # int64, first start in the item
    end: np.ndarray        # int64, last end in the item
    end_max: np.ndarray    # int64, running max of end within the row (for range lookup)
    rep: np.ndarray        # int64, index of the longest slice in the item (into Trace columns)
    count: np.ndarray      # int32, slices merged into the item
    bounds: np.ndarray     # int64, row r's items are [bounds[r], bounds[r+1])


@dataclass
class Lod:
    """Rows and their levels for one trace."""

    row_track: np.ndarray  # int32, track of each row
    row_depth: np.ndarray  # int16, depth of each row
    levels: list[Level]

    def level_for(self, ns_per_px: float) -> Level:
        """The coarsest level whose buckets are no wider than one pixel."""
        chosen = self.levels[0]
        for level in self.levels[1:]:
            if level.bucket_ns <= ns_per_px:
                chosen = level
            else:
                break
        return chosen

    def rows_of_track(self, track: int) -> np.ndarray:
        """Row indices of ``track``, by depth."""
        return np.flatnonzero(self.row_track == track)


def build_lod(start: np.ndarray, dur: np.ndarray, track: np.ndarray, depth: np.ndarray) -> Lod:
    """Compute rows and all levels (vectorised; ~0.3 s for 1M slices)."""
    n = start.shape[0]
    from studio.tools.profiler.builder import sort_order

    row_key = track.astype(np.int64) * (int(depth.max()) + 1 if n else 1) + depth
    # Temporaries are let go as soon as they are used: on 30M slices each is 60-240 MB.
    if n and not np.any(row_key[1:] < row_key[:-1]):
        # Rows already in order (no nesting, the usual device stream): the slices' own order
        # (track, start) is the rows' order, and level 0 shares the start column.
        order = None
    else:
        order = sort_order(row_key, np.asarray(start)).astype(np.int64, copy=False)
        row_key = row_key[order]
    if n:
        row_starts = np.r_[0, np.flatnonzero(row_key[1:] != row_key[:-1]) + 1]
    else:
        row_starts = np.zeros(0, np.int64)
    del row_key
    bounds = np.r_[row_starts, n].astype(np.int64)
    firsts = row_starts if order is None else order[row_starts]
    row_track = np.asarray(track)[firsts].astype(np.int32) if n else np.zeros(0, np.int32)
    row_depth = np.asarray(depth)[firsts].astype(np.int16) if n else np.zeros(0, np.int16)
    if order is None:
        order = np.arange(n, dtype=np.int64)
        s = start
        e = np.add(start, dur, dtype=np.int64)
    else:
        s = start[order]
        e = dur[order]
        e += s
    row_of_item = (np.repeat(np.arange(len(row_starts), dtype=np.int32), np.diff(bounds)) if n
                   else np.zeros(0, np.int32))
    level0 = Level(0, s, e, _row_cummax(e, bounds), order, np.ones(n, np.int32), bounds)
    levels = [level0]
    span = int(e.max() - s.min()) if n else 0
    bucket = BASE_NS
    prev, prev_row = level0, row_of_item
    while n and bucket <= max(span, BASE_NS) * 2:
        level, prev_row = _merge(prev, prev_row, dur, bucket)
        levels.append(level)
        prev = level
        bucket *= FACTOR
    return Lod(row_track, row_depth, levels)


MIN_MERGE = 0.5  # a level is only stored when it has at most this fraction of the finer one's items


def _merge(prev: Level, prev_row: np.ndarray, dur: np.ndarray, bucket: int) -> tuple[Level, np.ndarray]:
    k = finish.kernels_for(prev.start.shape[0])
    if k is not None:
        return _merge_compiled(k, prev, prev_row, dur, bucket)
    cell = prev.start // bucket
    new_group = np.empty(prev.start.shape[0], dtype=bool)
    new_group[:1] = True
    np.not_equal(cell[1:], cell[:-1], out=new_group[1:])
    del cell
    new_group[1:] |= prev_row[1:] != prev_row[:-1]
    if np.count_nonzero(new_group) > MIN_MERGE * prev.start.shape[0]:
        # Little merges at this size: share the finer level's arrays. A frame at this zoom then
        # reads at most 1/MIN_MERGE times the items it would need (``visible`` still merges them
        # per pixel column), and a 30M-slice trace does not carry near-copies of its columns.
        return Level(bucket, prev.start, prev.end, prev.end_max, prev.rep, prev.count, prev.bounds), prev_row
    heads = np.flatnonzero(new_group)
    rep_dur = dur[prev.rep]
    group_max = np.maximum.reduceat(rep_dur, heads)
    group_of = np.cumsum(new_group) - 1
    is_max = np.flatnonzero(rep_dur == group_max[group_of])
    first_max = is_max[np.searchsorted(group_of[is_max], np.arange(heads.size))]
    start = prev.start[heads]
    end = np.maximum.reduceat(prev.end, heads)
    rows = prev_row[heads]
    bounds = np.searchsorted(rows, np.arange(prev.bounds.shape[0])).astype(np.int64)
    return Level(bucket, start, end, _row_cummax(end, bounds), prev.rep[first_max],
                 np.add.reduceat(prev.count, heads).astype(np.int32), bounds), rows


def _merge_compiled(k, prev: Level, prev_row: np.ndarray, dur: np.ndarray, bucket: int) -> tuple[Level, np.ndarray]:
    """:func:`_merge` in two compiled passes (count the runs, then fill them), the same result."""
    columns = [np.ascontiguousarray(c) for c in (prev.start, prev.end, prev.rep, prev.count, prev_row)]
    groups = k.merge_groups(columns[0], columns[4], bucket)
    if groups > MIN_MERGE * prev.start.shape[0]:  # little merges: share the finer level's arrays (see _merge)
        return Level(bucket, prev.start, prev.end, prev.end_max, prev.rep, prev.count, prev.bounds), prev_row
    start, end, rep, count, rows, bounds = k.merge_level(*columns, np.ascontiguousarray(dur), bucket, groups,
                                                         prev.bounds.shape[0])
    return Level(bucket, start, end, _row_cummax(end, bounds), rep, count.astype(np.int32), bounds), rows


def _row_cummax(end: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    # Nested slices never overlap within a row, so ends are usually sorted already: no copy then.
    falls = np.flatnonzero(end[1:] < end[:-1]) + 1
    if np.isin(falls, bounds).all():  # every fall is at a row boundary
        return end
    out = np.empty_like(end)
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b > a:
            np.maximum.accumulate(end[a:b], out=out[a:b])
    return out


def visible(level: Level, row: int, t0: float, t1: float, ns_per_px: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Items of ``row`` overlapping [t0, t1], merged per pixel column (longest kept).

    Returns (start, end, rep, count) arrays; at most about one item per pixel column.
    """
    a, b = int(level.bounds[row]), int(level.bounds[row + 1])
    # Integer keys: a float key makes numpy convert the whole row to float64 before searching
    # (a row of 4M slices: ~4 ms per search instead of microseconds). For integer columns,
    # "<= t" is "<= floor(t)".
    lo = a + int(np.searchsorted(level.end_max[a:b], _int_key(t0), side="right"))
    hi = a + int(np.searchsorted(level.start[a:b], _int_key(t1), side="right"))
    if hi <= lo:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, np.zeros(0, np.int32)
    start, end = level.start[lo:hi], level.end[lo:hi]
    rep, count = level.rep[lo:hi], level.count[lo:hi]
    if hi - lo < 2 or ns_per_px <= 0:
        return start, end, rep, count
    column = np.floor((start - t0) / ns_per_px).astype(np.int64)
    heads = np.flatnonzero(np.r_[True, column[1:] != column[:-1]])
    if heads.size == column.size:
        return start, end, rep, count
    width = end - start
    widest = np.maximum.reduceat(width, heads)
    group_of = np.cumsum(np.r_[True, column[1:] != column[:-1]]) - 1
    is_max = np.flatnonzero(width == widest[group_of])
    first_max = is_max[np.searchsorted(group_of[is_max], np.arange(heads.size))]
    return (start[heads], np.maximum.reduceat(end, heads), rep[first_max],
            np.add.reduceat(count, heads).astype(np.int32))


_INT64 = np.iinfo(np.int64)


def _int_key(t: float) -> np.int64:
    """``floor(t)`` as an int64 search key, clamped to the int64 range (t may be +-inf)."""
    if t != t:  # NaN: nothing is <= it
        return np.int64(_INT64.min)
    if t >= _INT64.max:
        return np.int64(_INT64.max)
    if t <= _INT64.min:
        return np.int64(_INT64.min)
    return np.int64(math.floor(t))
