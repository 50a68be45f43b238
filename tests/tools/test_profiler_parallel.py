"""A trace cut into ranges decoded by several processes equals the one-process result, event for event.

The ranges are made small (a few kB) so that B/E pairs, async begin/end, flows, counters and
metadata cross range borders many times; the real PyTorch-on-NPU timeline is cut the same way.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.tools.profiler import chrome_parallel
from studio.tools.profiler.chrome_reader import read_chrome_trace


def canonical(trace) -> dict:
    """Everything a view shows, independent of interning order and of ties in the slice order."""
    def track_key(t: int) -> tuple:
        track = trace.tracks[t]
        return (track.process, track.name, str(track.pid), str(track.tid), track.process_sort, track.sort, track.labels)

    slices = sorted(
        (track_key(int(trace.track[i])), int(trace.start[i]), int(trace.dur[i]), int(trace.depth[i]),
         trace.names[int(trace.name[i])], trace.cats[int(trace.cat[i])],
         bytes(trace.args_blob[int(trace.args_off[i]):int(trace.args_off[i]) + int(trace.args_len[i])]))
        for i in range(trace.size))
    key_of = {i: (track_key(int(trace.track[i])), int(trace.start[i]), int(trace.dur[i]),
                  trace.names[int(trace.name[i])]) for i in range(trace.size)}
    return {
        "slices": slices,
        "instants": sorted((track_key(int(k)), int(t), trace.names[int(n)])
                           for t, k, n in zip(trace.instant_time, trace.instant_track, trace.instant_name)),
        "counters": sorted((c.process, c.name, c.times.tolist(), c.values.tolist()) for c in trace.counters),
        "flows": sorted((key_of[int(a)], key_of[int(b)]) for a, b in zip(trace.flow_src, trace.flow_dst)),
        "facts": trace.facts, "origin": trace.origin_ns,
    }


def read(path: Path, ranges: int, chunk_bytes: int = 2048):
    """The typed decoder in ``ranges`` processes (the compiled scanner has tests of its own)."""
    return run_job(read_chrome_trace(path, ranges=ranges, chunk_bytes=chunk_bytes, scan=False))


def crossing_trace(path: Path, n: int = 3000, seed: int = 1, wrap: bool = False) -> Path:
    """Nested B/E pairs, async spans, flows and counters whose ends are thousands of events apart."""
    rng = random.Random(seed)
    events: list[dict] = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Host"}}]
    open_b: dict[int, list[float]] = {0: [], 1: []}
    clock = 0.0
    for i in range(n):
        clock += rng.randint(1, 50) / 10
        tid = rng.randrange(2)
        roll = rng.random()
        if roll < 0.1 and len(open_b[tid]) < 6:
            open_b[tid].append(clock)
            events.append({"ph": "B", "name": f"outer{i % 7}", "pid": 1, "tid": tid, "ts": clock,
                           "args": {"i": i, "shapes": [{"float": [8, 64]}, {"float": [64]}]}})
        elif roll < 0.2 and open_b[tid]:
            open_b[tid].pop()
            events.append({"ph": "E", "pid": 1, "tid": tid, "ts": clock})
        elif roll < 0.23:
            events.append({"ph": "b", "cat": "async", "id": i % 5, "name": "req", "pid": 1, "tid": 0, "ts": clock})
        elif roll < 0.26:
            events.append({"ph": "e", "cat": "async", "id": i % 5, "name": "req", "pid": 1, "tid": 0, "ts": clock})
        elif roll < 0.29:
            events.append({"ph": "s" if i % 2 else "f", "cat": "flow", "id": i % 3, "name": "f", "pid": 1,
                           "tid": tid, "ts": clock, "bp": "e"})
        elif roll < 0.31:
            events.append({"ph": "C", "name": "mem", "pid": 1, "ts": clock, "args": {"used": i}})
        elif roll < 0.32:
            events.append({"ph": "i", "name": "mark", "pid": 1, "tid": tid, "ts": clock, "s": "t"})
        elif roll < 0.33:
            events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": f"T{i}"}})
        else:
            events.append({"ph": "X", "name": 'op},{"x' + str(i % 11), "pid": 1, "tid": tid, "ts": clock,
                           "dur": rng.randint(1, 30) / 10, "cat": "k", "args": {"n": i, "s": "a},{\"b"}})
    body = ",\n".join(json.dumps(e) for e in events)
    path.write_text('{"traceEvents": [' + body + ']}' if wrap else "[" + body + "]\n")
    return path


@pytest.mark.parametrize("wrap", [False, True], ids=["bare-array", "object-form"])
def test_ranges_equal_one_process_with_events_crossing_borders(tmp_path, wrap):
    path = crossing_trace(tmp_path / "cross.json", wrap=wrap)
    plan = chrome_parallel.plan_ranges(path.read_bytes(), 6, min_range=2048)
    assert plan is not None and len(plan) == 6, "the trace must really be cut"
    one = read(path, ranges=1)
    many = read(path, ranges=6)
    assert one.size > 1000 and len(one.flow_src) > 10 and one.counters and one.instant_time.size
    assert canonical(many) == canonical(one)


def test_cut_inside_nested_args_falls_back_to_one_process(tmp_path, monkeypatch):
    """A guessed cut inside args is caught by the decode and the file is read in one piece."""
    path = crossing_trace(tmp_path / "cross.json")
    real_find = chrome_parallel._find_boundary

    def bad_boundary(data, at, limit):  # a cut just after the first nested {"float": [8, 64]}
        pos = bytes(data).index(b'{"float": [8, 64]}', at) + len(b'{"float": [8, 64]}')
        return pos, pos + 2

    monkeypatch.setattr(chrome_parallel, "_find_boundary", bad_boundary)
    many = read(path, ranges=3)
    monkeypatch.setattr(chrome_parallel, "_find_boundary", real_find)
    assert canonical(many) == canonical(read(path, ranges=1))


def test_real_pytorch_npu_timeline_in_ranges(ascend_fixtures):
    path = ascend_fixtures / "pytorch_npu" / "trace_view.json"
    one = read(path, ranges=1, chunk_bytes=64 << 10)
    many = read(path, ranges=4, chunk_bytes=64 << 10)
    assert one.size > 1000
    assert canonical(many) == canonical(one)


def test_real_msprof_metadata_in_ranges(ascend_fixtures):
    """msprof's metadata events (names, sort indices, labels) cut into 3 ranges of ~700 bytes."""
    path = ascend_fixtures / "msprof" / "trace_view_tiny.json"
    one, many = (run_job(read_chrome_trace(path, build=False, ranges=r, chunk_bytes=256)) for r in (1, 3))
    assert one.thread_names and one.process_labels
    for key in ("process_names", "process_sort", "process_labels", "thread_names", "thread_sort"):
        assert getattr(many, key) == getattr(one, key), key


def test_truncated_array_keeps_its_repair_note(tmp_path):
    path = crossing_trace(tmp_path / "cross.json")
    data = path.read_bytes()
    path.write_bytes(data[:len(data) - 500])
    one = read(path, ranges=1)
    many = read(path, ranges=4)
    assert "truncated" in one.facts["warning"]
    assert canonical(many) == canonical(one)
    assert np.array_equal(np.sort(many.start), np.sort(one.start))


def test_args_spilled_to_disk_in_ranges_and_in_the_merge(tmp_path, monkeypatch):
    """Big traces keep args in files (copied by the kernel between the ranges and the merge)."""
    from studio.tools.profiler import builder

    path = crossing_trace(tmp_path / "cross.json")
    one = canonical(read(path, ranges=1))
    monkeypatch.setattr(builder, "SPILL_BYTES", 1000)
    many = read(path, ranges=4)
    assert not isinstance(many.args_blob, bytes), "the args went through the spill file"
    assert canonical(many) == one
