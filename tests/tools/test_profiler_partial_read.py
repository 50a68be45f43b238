"""Partial traces of a read in progress: a builder's snapshot and a file's first stretch."""

from __future__ import annotations

import json

import numpy as np

from studio.tools.profiler import builder as builder_module
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.partial_read import first_stretch


def _add(builder, events):
    for e in events:
        builder.add_slice(e["ts"], e["dur"], builder.track_id(1, e["tid"]), e["name"], args=json.dumps(e["args"]).encode())


def _events(n):
    rng = np.random.default_rng(3)
    return [{"ts": int(t), "dur": int(rng.integers(1, 50)), "tid": int(i % 3), "name": f"op{i % 7}",
             "args": {"i": i, "pad": "x" * int(rng.integers(0, 40))}} for i, t in enumerate(np.cumsum(rng.integers(1, 90, n)))]


def test_a_snapshot_is_what_was_added_so_far_and_the_builder_reads_on(monkeypatch):
    monkeypatch.setattr(builder_module, "SPILL_BYTES", 2000)  # the args go to the spill file part way
    events = _events(3000)
    growing = TraceBuilder()
    _add(growing, events[:1200])
    snap = growing.snapshot("x")
    _add(growing, events[1200:])
    whole = growing.build("x")
    for trace, part in ((snap, events[:1200]), (whole, events)):
        assert trace.size == len(part)
        order = np.lexsort((-np.array([e["dur"] for e in part]), [e["ts"] for e in part], [e["tid"] for e in part]))
        expected = [part[i] for i in order]  # sorted by lane, start, longest first, independently
        assert [int(trace.start[i]) + trace.origin_ns for i in range(trace.size)] == [e["ts"] for e in expected]
        assert [trace.names[int(trace.name[i])] for i in range(trace.size)] == [e["name"] for e in expected]
        assert all(json.loads(json.dumps(trace.slice_args(i))) == expected[i]["args"] for i in (0, trace.size // 2, -1))


def test_the_first_stretch_is_the_events_that_end_before_it(tmp_path):
    events = [{"ph": "X", "name": f"op{i % 5}", "pid": 1, "tid": i % 2, "ts": i * 10, "dur": 5,
               "args": {"nested": {"i": i}, "after": 1}} for i in range(5000)]
    path = tmp_path / "t.json"
    text = json.dumps({"traceEvents": events, "otherData": {}})
    path.write_text(text)
    limit = 50_000
    read = first_stretch(path, limit)
    whole = len(text.encode())
    ends = [text.index(json.dumps(e)) + len(json.dumps(e)) for e in events[:2000]]
    inside = sum(end < limit - 2 for end in ends)  # whole events within the stretch (a "," after each)
    assert read is not None and read.total == whole
    assert inside - 1 <= read.trace.size <= inside
    assert sorted(int(s) + read.trace.origin_ns for s in read.trace.start) == [i * 10_000 for i in range(read.trace.size)]  # µs -> ns
    assert "partial" in read.trace.warnings[0]
    assert first_stretch(path, whole + 1) is None  # nothing partial about a file read at once


def test_no_snapshot_is_taken_when_the_scan_ends_before_it_would_be_ready():
    from studio.tools.profiler.partial_read import scan_ends_first

    # 80 % read in 2 s: 0.5 s of scan left
    assert scan_ends_first(1.6, 800, 1000, 2.0)  # a 1.6 s snapshot would delay the whole trace
    assert not scan_ends_first(0.3, 800, 1000, 2.0)  # a 0.3 s one is shown before the scan ends
    assert not scan_ends_first(1.6, 200, 1000, 2.0)  # 8 s left: worth showing
    assert not scan_ends_first(0.0, 800, 1000, 2.0)  # no estimate yet: the first snapshot is taken
