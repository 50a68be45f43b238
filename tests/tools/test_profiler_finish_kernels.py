"""The compiled kernels that finish a big trace give exactly numpy's order, depths and levels.

numpy's ``sort_order``, ``_nesting_depth`` and ``lod._merge`` are the reference (they are the path
without numba); each case is built to hit what the kernels do differently: tracks out of order
(the counting sort's fallback), equal starts and durations (stability), zero durations (an end
equal to a later start), deep nesting, overlapping (not nested) slices, buckets that are not a
power of two (the floor division's own path), negative times; and ``stats.self_time`` with
transparent wrappers at several depths.
"""

from __future__ import annotations

import numpy as np
import pytest

from studio.tools.profiler import builder, finish, lod, stats
from studio.tools.profiler.model import Trace

kernels = finish.compiled()
pytestmark = pytest.mark.skipif(kernels is None, reason="numba is not installed")


def _case(seed: int, n: int, tracks: int, shuffled: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    track = rng.integers(0, tracks, n).astype(np.int32)
    start = np.sort(rng.integers(0, n * 3, n)).astype(np.int64)  # in order per track: the usual export
    dur = rng.choice([0, 1, 2, 5, 40, 400, 5000], n).astype(np.int64)  # nesting, ties, zero durations
    if shuffled:  # some tracks written out of order (host threads whose parents follow their children)
        late = np.flatnonzero(track % 3 == 0)
        start[late] = rng.permutation(start[late])
    return track, start, dur


def _numpy(monkeypatch):
    monkeypatch.setattr(finish, "kernels_for", lambda n: None)


def _compiled(monkeypatch):
    monkeypatch.setattr(finish, "kernels_for", lambda n: kernels)


@pytest.mark.parametrize("seed,n,tracks,shuffled", [(1, 5000, 4, False), (2, 5000, 7, True), (3, 20000, 1, True),
                                                    (4, 3000, 300, True), (5, 1, 1, False)])
def test_order_depth_and_levels_equal_numpys(monkeypatch, seed, n, tracks, shuffled):
    track, start, dur = _case(seed, n, tracks, shuffled)
    results = []
    for mode in (_numpy, _compiled):
        mode(monkeypatch)
        order = builder.sort_order(track, start, dur)
        s, d, t = start[order], dur[order], track[order]
        depth = builder._nesting_depth(s, d, t)
        levels = lod.build_lod(s, d, t, depth)
        results.append((order, depth, levels))
    (order, depth, want), (order_k, depth_k, got) = results
    assert np.array_equal(order, order_k)
    assert depth.dtype == depth_k.dtype and np.array_equal(depth, depth_k)
    assert np.array_equal(want.row_track, got.row_track) and np.array_equal(want.row_depth, got.row_depth)
    assert len(want.levels) == len(got.levels)
    for i, (a, b) in enumerate(zip(want.levels, got.levels)):
        assert a.bucket_ns == b.bucket_ns
        for column in ("start", "end", "end_max", "rep", "count", "bounds"):
            x, y = getattr(a, column), getattr(b, column)
            assert x.dtype == y.dtype and np.array_equal(x, y), (i, column)
        if i:  # a level shares its finer level's arrays in both or in neither
            assert (a.start is want.levels[i - 1].start) == (b.start is got.levels[i - 1].start)
    if n > 1:
        assert depth.max() > 1 and any(lvl.start.size < n for lvl in want.levels)  # nesting and merging happened


def test_the_order_keeps_tied_slices_in_their_file_order(monkeypatch):
    track = np.array([1, 0, 1, 1, 0, 1], np.int32)
    start = np.array([5, 3, 5, 2, 3, 5], np.int64)
    dur = np.array([1, 4, 9, 1, 4, 1], np.int64)
    _compiled(monkeypatch)
    # track 0: two equal slices, file order; track 1: by start, longest first, then file order
    assert builder.sort_order(track, start, dur).tolist() == [1, 4, 3, 2, 0, 5]


@pytest.mark.parametrize("bucket", [1000, 1024, 7])
def test_a_merge_at_any_bucket_equals_numpys(monkeypatch, bucket):
    rng = np.random.default_rng(9)
    n = 4000
    start = np.sort(rng.integers(-50_000, 50_000, n)).astype(np.int64)  # negative times: floor, not truncation
    dur = rng.integers(0, 3000, n).astype(np.int64)
    bounds = np.array([0, 1500, 1500, n], np.int64)  # an empty row between two
    row = np.repeat(np.arange(3, dtype=np.int32), np.diff(bounds))
    level0 = lod.Level(0, start, start + dur, start + dur, np.arange(n, dtype=np.int64), np.ones(n, np.int32), bounds)
    monkeypatch.setattr(lod, "MIN_MERGE", 1.0)  # always merge, so both paths build the level
    _numpy(monkeypatch)
    want, want_rows = lod._merge(level0, row, dur, bucket)
    _compiled(monkeypatch)
    got, got_rows = lod._merge(level0, row, dur, bucket)
    assert np.array_equal(want_rows, got_rows) and want.start.size < n
    for column in ("start", "end", "end_max", "rep", "count", "bounds"):
        assert np.array_equal(getattr(want, column), getattr(got, column)), column


@pytest.mark.parametrize("seed,tracks,shuffled", [(11, 3, False), (12, 5, True), (13, 1, True)])
def test_self_time_equals_numpys_with_and_without_wrappers(monkeypatch, seed, tracks, shuffled):
    track, start, dur = _case(seed, 6000, tracks, shuffled)
    _numpy(monkeypatch)
    order = builder.sort_order(track, start, dur)
    s, d, t = start[order], dur[order], track[order]
    depth = builder._nesting_depth(s, d, t)
    n = s.size
    trace = Trace(s, d, t, depth, np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int64),
                  np.zeros(n, np.int32), b"", ["x"], [""], [], [])
    wrappers = np.random.default_rng(seed).random(n) < 0.2  # transparent slices at every depth
    assert depth.max() >= 3 and wrappers[depth >= 2].any()
    for transparent in (None, wrappers):
        _numpy(monkeypatch)
        want = stats.self_time(trace, transparent)
        _compiled(monkeypatch)
        got = stats.self_time(trace, transparent)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        assert (want < d).any() and (want >= 0).all()  # children covered some of their parents


def test_per_name_statistics_equal_numpys(monkeypatch):
    track, start, dur = _case(21, 8000, 4, True)
    _numpy(monkeypatch)
    order = builder.sort_order(track, start, dur)
    s, d, t = start[order], dur[order], track[order]
    depth = builder._nesting_depth(s, d, t)
    rng = np.random.default_rng(21)
    names = ["model_run", "Conv", "MatMul", "Conv", "Relu"]  # one text interned twice; a wrapper
    name = rng.integers(0, len(names), s.size).astype(np.int32)
    trace = Trace(s, d, t, depth, name, np.zeros(s.size, np.int32), np.zeros(s.size, np.int64),
                  np.zeros(s.size, np.int32), b"", names, [""], [], [])
    mask = rng.random(s.size) < 0.7
    for ops, kept in ((True, None), (True, mask), (False, None), (False, mask)):
        _numpy(monkeypatch)
        want = stats.by_name(trace, kept, ops=ops)
        _compiled(monkeypatch)
        got = stats.by_name(trace, kept, ops=ops)
        assert want and got == want  # every field equal, floats to the bit
