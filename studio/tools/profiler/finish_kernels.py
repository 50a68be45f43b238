"""Compiled kernels for finishing a big trace: slice order, nesting depth, levels of detail.

Each is one or two passes over the columns where numpy needs a sort and a dozen temporaries; on
10M slices numpy took 1.8 CPU-s to order them, 0.9 to nest them and 2.9 to build the levels. Every
kernel computes exactly what its numpy twin computes (``builder.sort_order``,
``builder._nesting_depth``, ``lod._merge``), which stays the path without numba and the reference
the tests compare against. Loaded through :data:`studio.tools.profiler.finish.compiled`, never
imported directly; the machine code is cached as the scanner's is.
"""

from __future__ import annotations


import numpy as np

from studio.core.compiled import keep_numba_cache_with_studio

keep_numba_cache_with_studio(__file__)

import numba  # noqa: E402 - after NUMBA_CACHE_DIR: numba reads it on import

_jit = numba.njit(cache=True, nogil=True)


@_jit
def track_order(track, start, dur, tracks):
    """The slices' order by track, keeping their order within a track (a counting sort), and per
    track whether that order is already (start, longest first): (order, bounds, sorted flags)."""
    n = track.shape[0]
    counts = np.zeros(tracks + 1, np.int64)
    for i in range(n):
        counts[track[i] + 1] += 1
    bounds = np.cumsum(counts)
    fill = bounds[:-1].copy()
    order = np.empty(n, np.int64)
    in_order = np.ones(tracks, np.bool_)
    last_start = np.zeros(tracks, np.int64)
    last_dur = np.zeros(tracks, np.int64)
    for i in range(n):
        t = track[i]
        at = fill[t]
        if at > bounds[t] and in_order[t]:
            s, d = start[i], dur[i]
            if s < last_start[t] or (s == last_start[t] and d > last_dur[t]):
                in_order[t] = False
        last_start[t], last_dur[t] = start[i], dur[i]
        order[at] = i
        fill[t] = at + 1
    return order, bounds, in_order


@_jit
def nesting_depth(start, dur, track):
    """Depth of each slice in its track (sorted by track, start, longest first): its index in the
    track minus how many of the track's slices end at or before its start, clipped to 0..32000."""
    n = start.shape[0]
    depth = np.zeros(n, np.int16)
    a = 0
    while a < n:
        b = a + 1
        while b < n and track[b] == track[a]:
            b += 1
        ends = np.empty(b - a, np.int64)
        ordered = True
        for i in range(a, b):
            ends[i - a] = start[i] + dur[i]
            if i > a and ends[i - a] < ends[i - a - 1]:
                ordered = False
        if not ordered:
            ends.sort()
        ended = 0
        for i in range(a, b):
            while ended < b - a and ends[ended] <= start[i]:
                ended += 1
            local = (i - a) - ended
            depth[i] = 0 if local < 0 else (32000 if local > 32000 else local)
        a = b
    return depth


@_jit
def _cell(t, bucket, shift):
    """``t // bucket`` (floor); a shift when the bucket is a power of two (it always is: 1024 * 8**k)."""
    return t >> shift if shift >= 0 else t // bucket


@_jit
def _shift_of(bucket):
    """log2 of ``bucket`` when it is a power of two, else -1."""
    if bucket <= 0 or bucket & (bucket - 1) != 0:
        return -1
    shift = 0
    while (1 << shift) < bucket:
        shift += 1
    return shift


@_jit
def merge_groups(prev_start, prev_row, bucket):
    """How many items the next level has: runs of items in the same row and bucket."""
    shift = _shift_of(bucket)
    groups = 0
    cell = 0
    for i in range(prev_start.shape[0]):
        c = _cell(prev_start[i], bucket, shift)
        if i == 0 or prev_row[i] != prev_row[i - 1] or c != cell:
            groups += 1
            cell = c
    return groups


@_jit
def merge_level(prev_start, prev_end, prev_rep, prev_count, prev_row, dur, bucket, groups, rows):
    """The next level's ``groups`` items (see :func:`merge_groups`): each run's first start, last
    end, the first of its longest slices, its slice count and row; and each of the ``rows`` rows'
    first item."""
    shift = _shift_of(bucket)
    start = np.empty(groups, np.int64)
    end = np.empty(groups, np.int64)
    rep = np.empty(groups, np.int64)
    count = np.empty(groups, np.int64)
    row = np.empty(groups, prev_row.dtype)
    g = -1
    best = 0
    cell = 0
    for i in range(prev_start.shape[0]):
        c = _cell(prev_start[i], bucket, shift)
        d = dur[prev_rep[i]]
        if i == 0 or prev_row[i] != prev_row[i - 1] or c != cell:
            g += 1
            start[g], end[g], rep[g], count[g], row[g] = prev_start[i], prev_end[i], prev_rep[i], prev_count[i], prev_row[i]
            best = d
            cell = c
        else:
            if prev_end[i] > end[g]:
                end[g] = prev_end[i]
            if d > best:
                best = d
                rep[g] = prev_rep[i]
            count[g] += prev_count[i]
    bounds = np.empty(rows, np.int64)  # searchsorted(row, arange(rows)): the first item of row >= r
    g = 0
    for r in range(rows):
        while g < groups and row[g] < r:
            g += 1
        bounds[r] = g
    return start, end, rep, count, row, bounds


@_jit
def self_time(start, dur, depth, track, transparent, has_transparent):
    """Each slice's duration minus the part its direct children cover (ns, >= 0, float64), for
    slices sorted by (track, start, longest first) with their depth: a slice's parent is the last
    one before it at the depth above on its track; a ``transparent`` parent passes its children on
    to its own parent, and a transparent child covers nothing. One pass; per depth, the last slice
    and the parent its children would get."""
    n = start.shape[0]
    out = np.empty(n, np.float64)
    levels = int(depth.max()) + 1 if n else 1
    last = np.full(levels, -1, np.int64)  # the last slice seen at each depth
    owner = np.full(levels, -1, np.int64)  # who a child of that slice counts against
    for i in range(n):
        out[i] = dur[i]
        d = depth[i]
        p = -1
        if d > 0:
            p = last[d - 1]
            if p >= 0 and track[p] != track[i]:
                p = -1
            elif p >= 0:
                p = owner[d - 1]
        last[d] = i
        owner[d] = p if has_transparent and transparent[i] else i
        if p < 0 or (has_transparent and transparent[i]):
            continue
        a = start[i] if start[i] > start[p] else start[p]
        end_i, end_p = start[i] + dur[i], start[p] + dur[p]
        b = end_i if end_i < end_p else end_p
        if b > a:
            out[p] -= b - a
    for i in range(n):
        if out[i] < 0.0:
            out[i] = 0.0
    return out


@_jit
def name_totals(name, dur, selfs, keep, names):
    """Per name id, over the slices in ``keep``: count, total and self time (summed in slice order,
    as ``np.bincount`` sums), shortest and longest duration."""
    counts = np.zeros(names, np.int64)
    totals = np.zeros(names, np.float64)
    self_totals = np.zeros(names, np.float64)
    mins = np.full(names, np.iinfo(np.int64).max, np.int64)
    maxs = np.zeros(names, np.int64)
    for i in range(name.shape[0]):
        if not keep[i]:
            continue
        k = name[i]
        counts[k] += 1
        totals[k] += dur[i]
        self_totals[k] += selfs[i]
        if dur[i] < mins[k]:
            mins[k] = dur[i]
        if dur[i] > maxs[k]:
            maxs[k] = dur[i]
    return counts, totals, self_totals, mins, maxs
