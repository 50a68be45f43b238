"""Chrome trace reading: every phase, both top-level forms, string timestamps, broken files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from profiler_helpers import random_x_events, write_trace
from refusal_helpers import refusal

from studio.core.jobs import run_job
from studio.tools.profiler.loader import open_profile


def load(path: Path):
    return run_job(open_profile(path, use_cache=False))


def test_all_phases(tmp_path):
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Host"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 5, "args": {"name": "main"}},
        {"ph": "M", "name": "process_sort_index", "pid": 1, "tid": 0, "args": {"sort_index": 3}},
        {"ph": "X", "name": "outer", "pid": 1, "tid": 5, "ts": 10, "dur": 100, "args": {"k": "v"}},
        {"ph": "X", "name": "inner", "pid": 1, "tid": 5, "ts": 20, "dur": 30},
        {"ph": "B", "name": "be", "pid": 1, "tid": 5, "ts": 40},
        {"ph": "E", "pid": 1, "tid": 5, "ts": 45},
        {"ph": "i", "name": "tick", "pid": 1, "tid": 5, "ts": 60, "s": "t"},
        {"ph": "C", "name": "mem", "pid": 1, "tid": 0, "ts": 10, "args": {"MB": 5}},
        {"ph": "C", "name": "mem", "pid": 1, "tid": 0, "ts": 90, "args": {"MB": 7}},
        {"ph": "s", "name": "flow", "cat": "f", "id": 9, "pid": 1, "tid": 5, "ts": 25},
        {"ph": "X", "name": "kernel", "pid": 2, "tid": 0, "ts": 200, "dur": 10},
        {"ph": "f", "name": "flow", "cat": "f", "id": 9, "pid": 2, "tid": 0, "ts": 201, "bp": "e"},
        {"ph": "b", "name": "req", "cat": "net", "id": 3, "pid": 1, "tid": 5, "ts": 0},
        {"ph": "e", "name": "req", "cat": "net", "id": 3, "pid": 1, "tid": 5, "ts": 300},
        {"ph": "Z", "name": "unknown phase", "pid": 1, "tid": 5, "ts": 1},
    ]
    trace = load(write_trace(tmp_path / "t.json", events))
    names = [trace.slice_name(i) for i in range(trace.size)]
    assert sorted(names) == ["be", "inner", "kernel", "outer", "req"]
    outer, inner, be = (names.index(n) for n in ("outer", "inner", "be"))
    assert trace.depth[outer] == 0 and trace.depth[inner] == 1 and trace.depth[be] == 2  # inside inner (20-50)
    assert trace.dur[be] == 5_000 and trace.start[outer] == 10_000  # ns, relative to the first event (0)
    assert trace.slice_args(outer) == {"k": "v"}
    host = trace.tracks[int(trace.track[outer])]
    assert (host.process, host.name, host.process_sort) == ("Host", "main", 3.0)
    assert trace.instant_time.tolist() == [60_000]
    assert [c.name for c in trace.counters] == ["mem (MB)"]
    assert trace.counters[0].values.tolist() == [5.0, 7.0]
    # the flow binds the enclosing host slice (inner, deepest at ts 25) to the kernel
    assert trace.flow_src.tolist() == [inner] and trace.flow_dst.tolist() == [names.index("kernel")]
    assert "ignored events" in trace.facts


def test_object_form_and_string_timestamps_are_exact(tmp_path):
    events = [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": "1736408883694795.840", "dur": 1.5},
              {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": "1736408883694797.341", "dur": 0.25}]
    trace = load(write_trace(tmp_path / "t.json", events, wrap=True))
    assert trace.origin_ns == 1736408883694795840
    assert trace.start.tolist() == [0, 1501] and trace.dur.tolist() == [1500, 250]


def test_truncated_array_keeps_complete_events(tmp_path):
    text = json.dumps(random_x_events(50))
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) * 2 // 3])
    trace = load(path)
    assert 20 < trace.size < 50
    assert "truncated" in trace.facts["warning"]


@pytest.mark.parametrize("content, message", [
    (b"", "empty"),
    (b"[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1", "truncated"),
    (b'{"traceEvents": [{"ph": "X", ]}', "malformed"),
])
def test_broken_files_give_clear_errors(tmp_path, content, message):
    error = refusal(load, tmp_path / "bad.json", content)
    assert message in str(error).lower() and "fix:" in str(error)


def test_odd_field_types_take_the_loose_path(tmp_path):
    events = [{"ph": "X", "name": 42, "pid": 1.0, "tid": None, "ts": 5, "dur": 2}, "not an event"]
    trace = load(write_trace(tmp_path / "t.json", events))
    assert trace.size == 1 and trace.slice_name(0) == "42"


def test_any_id_keeps_its_own_track(tmp_path):
    """Ids beyond int64, floats and strings each keep a track of their own, never merged or
    truncated (numpy would make 1.5 into 1 and overflow on 2**70)."""
    ids = [2**70, -(2**70), 1.5, 1, "gpu0", 2**63 - 1]
    events = [{"ph": "X", "name": f"e{i}", "pid": pid, "tid": 7, "ts": i * 10, "dur": 2}
              for i, pid in enumerate(ids)]
    trace = load(write_trace(tmp_path / "t.json", events))
    assert trace.size == len(ids)
    pids = [trace.tracks[int(trace.track[i])].pid for i in range(trace.size)]
    assert sorted(map(str, pids)) == sorted(map(str, ids))


def test_nesting_matches_a_stack_walk(tmp_path):
    # Random properly nested slices; depth must equal what a simple stack gives.
    rng = np.random.default_rng(3)
    events, t = [], 0.0

    def emit(start, end, level):
        events.append({"ph": "X", "name": f"d{level}", "pid": 1, "tid": 1, "ts": start, "dur": end - start})
        cursor = start
        while level < 4 and cursor < end - 4 and rng.random() < 0.7:
            a = cursor + float(rng.integers(0, 3))
            b = min(end, a + float(rng.integers(1, 8)))
            if b <= a:
                break
            emit(a, b, level + 1)
            cursor = b
    for _ in range(40):
        emit(t, t + 30, 0)
        t += 35
    trace = load(write_trace(tmp_path / "n.json", events))
    assert [int(d) for d in trace.depth] == [int(trace.slice_name(i)[1:]) for i in range(trace.size)]


def test_chunked_reading_matches_a_whole_read(tmp_path, monkeypatch):
    from studio.tools.profiler import builder as builder_module
    from studio.tools.profiler import chrome_decode

    events = random_x_events(600, seed=9)
    for i, e in enumerate(events[::7]):  # args that look like event boundaries, in objects and strings
        e["args"] = {"nested": [{"a": i}, {"b": "}, {"}], "text": "}},{\"ph\":\"X\"}"}
    events.insert(100, {"ph": "B", "name": "open", "pid": 7, "tid": 0, "ts": 1.0})
    events.insert(500, {"ph": "E", "pid": 7, "tid": 0, "ts": 2000.0})
    path = write_trace(tmp_path / "t.json", events)
    whole = load(path)
    monkeypatch.setattr(chrome_decode, "CHUNK_BYTES", 1500)  # ~10 events a chunk, memory-mapped
    monkeypatch.setattr(builder_module, "SPILL_BYTES", 100)  # args spilled to a mapped file
    chunked = load(path)
    assert chunked.size == whole.size == 601
    assert np.array_equal(chunked.start, whole.start) and np.array_equal(chunked.depth, whole.depth)
    assert [chunked.slice_name(i) for i in range(50)] == [whole.slice_name(i) for i in range(50)]
    assert all(chunked.slice_args(i) == whole.slice_args(i) for i in range(0, 601, 13))
    text = path.read_text()
    path.write_text(text[: len(text) - 900])  # cut inside the last chunk
    cut = load(path)
    assert whole.size - 10 < cut.size < whole.size and "truncated" in cut.facts["warning"]
