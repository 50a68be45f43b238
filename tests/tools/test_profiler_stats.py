"""Statistics against an independent computation; range selection; comparison; cache; LOD."""

from __future__ import annotations

import json
import os
from pathlib import Path
from collections import defaultdict

import numpy as np
import pytest
from profiler_helpers import random_x_events, write_trace

from studio.core.jobs import run_job
from studio.tools.profiler import cache, lod, stats
from studio.tools.profiler.compare import compare
from studio.tools.profiler.loader import open_profile
from studio.core.serial import to_json


def independent_stats(events):
    acc = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            acc[e["name"]].append(round(e["dur"] * 1000))
    return {name: (len(d), sum(d) / 1e3, min(d) / 1e3, max(d) / 1e3) for name, d in acc.items()}


def test_by_name_matches_a_plain_python_computation(tmp_path):
    events = random_x_events(3000, seed=1)
    trace = run_job(open_profile(write_trace(tmp_path / "t.json", events), use_cache=False))
    expected = independent_stats(events)
    rows = stats.by_name(trace)
    assert [r.total_us for r in rows] == sorted((r.total_us for r in rows), reverse=True)
    assert {r.name for r in rows} == set(expected)
    grand = sum(t for _, t, _, _ in expected.values())
    for r in rows:
        count, total, lo, hi = expected[r.name]
        assert (r.count, r.min_us, r.max_us) == (count, lo, hi)
        assert r.total_us == pytest.approx(total) and r.avg_us == pytest.approx(total / count)
        assert r.share == pytest.approx(total / grand)


def test_range_selection(tmp_path):
    events = random_x_events(500, seed=2)
    trace = run_job(open_profile(write_trace(tmp_path / "t.json", events), use_cache=False))
    t0, t1 = 2_000_000, 5_000_000
    tid0 = next(t.id for t in trace.tracks if t.tid == 0)
    mask = stats.in_range(trace, t0, t1, tracks=[tid0])
    expected = [e for e in events if e["tid"] == 0 and round(e["ts"] * 1000) <= t1
                and round(e["ts"] * 1000) + round(e["dur"] * 1000) >= t0]
    assert int(mask.sum()) == len(expected)


def test_compare_sorts_by_impact(tmp_path):
    base = [{"ph": "X", "name": n, "pid": 1, "tid": 1, "ts": i * 100, "dur": d}
            for i, (n, d) in enumerate([("conv", 50), ("relu", 5), ("gone", 9)])]
    new = [{"ph": "X", "name": n, "pid": 1, "tid": 1, "ts": i * 100, "dur": d}
           for i, (n, d) in enumerate([("conv", 20), ("relu", 6), ("added", 1)])]
    a = run_job(open_profile(write_trace(tmp_path / "a.json", base), use_cache=False))
    b = run_job(open_profile(write_trace(tmp_path / "b.json", new), use_cache=False))
    result = compare(a, b)
    assert [r.name for r in result.ops] == ["conv", "gone", "added", "relu"]  # ties by name
    conv = result.ops[0]
    assert conv.delta_us == pytest.approx(-30) and conv.speedup == pytest.approx(2.5)
    assert conv.delta_pct == pytest.approx(-60)
    assert result.ops[2].delta_pct is None and bool(result)
    assert "conv" in str(result) and json.dumps(to_json(result))


def test_cache_hit_and_invalidation(tmp_path):
    path = write_trace(tmp_path / "t.json", random_x_events(200, seed=4))
    first = run_job(open_profile(path))
    assert cache.load(path) is not None
    again = run_job(open_profile(path))
    assert isinstance(again.start, np.memmap) and np.array_equal(again.start, first.start)
    assert again.slice_args(5) == first.slice_args(5) and again.names == first.names
    assert len(again.lod.levels) == len(first.lod.levels)
    write_trace(path, random_x_events(100, seed=5))
    os.utime(path, ns=(1, 1))  # a different mtime (and size): the cache must miss
    changed = run_job(open_profile(path))
    assert changed.size == 100


def test_cache_evicts_the_oldest_beyond_its_limit(tmp_path):
    paths = [write_trace(tmp_path / f"t{i}.json", random_x_events(50, seed=i)) for i in range(3)]
    folders = []
    for path in paths:
        run_job(open_profile(path))
        folders.append(cache.cache_root() / cache.source_key(path))
        os.utime(folders[-1], (len(folders), len(folders)))  # written in this order
    newest_two = sum(f.stat().st_size for folder in folders[1:] for f in folder.iterdir())
    cache.evict(cache.cache_root(), keep=folders[2], limit=newest_two)
    assert [f.is_dir() for f in folders] == [False, True, True]


def test_lod_keeps_the_longest_per_pixel_and_bounds_the_work(tmp_path):
    events = random_x_events(20000, seed=6, tracks=1)
    trace = run_job(open_profile(write_trace(tmp_path / "t.json", events), use_cache=False))
    span = trace.span_ns
    width = 800
    ns_per_px = span / width
    level = trace.lod.level_for(ns_per_px)
    row = int(np.flatnonzero(trace.lod.row_depth == 0)[0])
    start, end, rep, count = lod.visible(level, row, 0, span, ns_per_px)
    assert len(start) <= width + 1
    assert int(count.sum()) == int(np.sum(trace.depth == 0))  # every slice is in exactly one item
    longest = int(np.argmax(np.where(trace.depth == 0, trace.dur, -1)))
    assert longest in set(rep.tolist())
    # zoomed in, a frame sees the raw slices of that window
    t0, t1 = span // 2, span // 2 + span // 1000
    s2, e2, rep2, _ = lod.visible(trace.lod.level_for(1.0), row, t0, t1, 1.0)
    expected = np.flatnonzero((trace.depth == 0) & (trace.start <= t1) & (trace.start + trace.dur >= t0))
    assert sorted(rep2.tolist()) == sorted(expected.tolist())


@pytest.mark.parametrize("nested", [False, True])
def test_lod_every_level_and_float_window_matches_brute_force(tmp_path, nested):
    """Each level (stored, or sharing a finer one's arrays) holds every slice of a row exactly once,
    and a window given in fractional ns finds exactly the slices a brute force finds."""
    events = random_x_events(6000, seed=11, tracks=2)
    if nested:  # a parent per 10 events: rows are not in the slices' own order
        events += [{**e, "name": "outer", "ts": e["ts"] - 0.5, "dur": e["dur"] + 1.0} for e in events[::10]]
    trace = run_job(open_profile(write_trace(tmp_path / "t.json", events), use_cache=False))
    rows = len(trace.lod.row_track)
    for level in trace.lod.levels:
        for row in range(rows):
            a, b = int(level.bounds[row]), int(level.bounds[row + 1])
            track, depth = trace.lod.row_track[row], trace.lod.row_depth[row]
            assert int(level.count[a:b].sum()) == int(np.sum((trace.track == track) & (trace.depth == depth)))
    rng = np.random.default_rng(3)
    for _ in range(50):
        t0 = float(rng.uniform(-10, trace.span_ns))
        t1 = t0 + float(rng.uniform(0.3, trace.span_ns / 50))
        for row in range(rows):
            track, depth = trace.lod.row_track[row], trace.lod.row_depth[row]
            _, _, rep, _ = lod.visible(trace.lod.levels[0], row, t0, t1, 0.0)
            expected = np.flatnonzero((trace.track == track) & (trace.depth == depth)
                                      & (trace.start <= t1) & (trace.start + trace.dur >= t0))
            assert sorted(rep.tolist()) == expected.tolist()
    _, _, rep, _ = lod.visible(trace.lod.levels[0], 0, float("-inf"), float("inf"), 0.0)
    assert rep.size == int(trace.lod.levels[0].bounds[1])


def test_cache_without_levels_of_detail_gets_them_when_the_timeline_opens_it(tmp_path):
    """``studio profile stats`` stores the trace without levels of detail; the timeline's loaders
    build them from that cache (equal to those of a fresh parse), never return a trace without."""
    from studio.tools.profiler.loader import open_profile_offloaded

    path = write_trace(tmp_path / "t.json", random_x_events(3000, seed=5, tracks=2))
    plain = run_job(open_profile(path, lod=False))
    assert plain.lod is None
    stored = cache.load(path)
    assert stored is not None and stored.lod is None
    fresh = run_job(open_profile(path, use_cache=False))
    for loader in (open_profile(path), open_profile_offloaded(path)):
        trace = run_job(loader)
        assert trace.lod is not None
        assert len(trace.lod.levels) == len(fresh.lod.levels)
        for mine, theirs in zip(trace.lod.levels, fresh.lod.levels):
            assert mine.bucket_ns == theirs.bucket_ns
            assert np.array_equal(mine.start, theirs.start) and np.array_equal(mine.rep, theirs.rep)
            assert np.array_equal(mine.count, theirs.count) and np.array_equal(mine.bounds, theirs.bounds)


def test_the_worker_adds_levels_of_detail_to_a_stats_cache_without_parsing_again(tmp_path, monkeypatch):
    """A big trace first read by ``profile stats`` opens in the timeline from its cache: the worker
    only adds the levels (the reader must not run), and the entry then holds them for next time."""
    from studio.tools.profiler import loader

    path = write_trace(tmp_path / "t.json", random_x_events(3000, seed=6, tracks=2))
    run_job(open_profile(path, lod=False))
    fresh = run_job(open_profile(path, use_cache=False, store=False))

    def no_parse(*args, **kwargs):
        raise AssertionError("the trace was parsed again")

    monkeypatch.setattr(loader, "open_profile", no_parse)
    folder, temporary = run_job(loader.parse_to_cache(str(path)))
    assert not temporary
    stored = cache.load_folder(Path(folder))
    assert stored is not None and stored.lod is not None
    for mine, theirs in zip(stored.lod.levels, fresh.lod.levels, strict=True):
        assert mine.bucket_ns == theirs.bucket_ns
        assert np.array_equal(mine.rep, theirs.rep) and np.array_equal(mine.bounds, theirs.bounds)
    assert np.array_equal(stored.start, fresh.start) and stored.names == fresh.names
