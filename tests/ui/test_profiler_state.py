"""The Profiler panel's state without Qt: opened profiles, labels, find matches, pending requests,
and the rows its tables show, on real trace files read by the real loader."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.ui.panels.profiler import state as st
from studio.ui.panels.profiler.loading import load_job


def write_trace(path: Path, names: list[str], model: str | None = None) -> Path:
    """A Chrome trace with one slice per name, 10 µs each, 5 µs apart, on one device track."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Device"}}]
    for i, name in enumerate(names):
        events.append({"ph": "X", "name": name, "pid": 1, "tid": 1, "ts": 15.0 * i, "dur": 10.0,
                       "cat": "Op", "args": {"i": i, "shape": [1, 3]}})
    path.write_text(json.dumps({"traceEvents": events, **({"model": model} if model else {})}))
    return path


@pytest.fixture
def two(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = load(write_trace(tmp_path / "a" / "run.json", ["Conv", "Relu", "conv_tail", "Relu"]))
    second = load(write_trace(tmp_path / "b" / "run.json", ["MatMul"]))
    return first, second


def load(path: Path) -> st.Loaded:
    return run_job(load_job(path, None))


def test_labels_stay_unique_and_routes_are_remembered(two):
    first, second = two
    assert first.label == second.label  # both are "run.json" files: the state tells them apart
    state = st.ProfilerState()
    assert state.route(first.path) is None
    assert state.add(first) == [first.label]
    labels = state.add(second)
    assert labels == [first.label, f"{first.label} (2)"] and second.label == labels[1]
    assert state.route(second.path) == 1 and state.route(first.path) == 0
    assert state.routed == [first.path, second.path]
    assert state.choose(5) is None and state.current is None
    assert state.choose(1) is second and state.current is second


def test_pending_range_and_compare_wait_for_their_profiles(two):
    first, second = two
    state = st.ProfilerState()
    state.pending_range = (second.path, 10, 20)
    state.pending_compare = (first.path.resolve(), second.path.resolve())
    state.add(first)
    assert state.take_pending_range(first.path) is None and state.pending_range is None  # another profile's
    state.pending_range = (second.path, 10, 20)
    assert state.compare_ready() is None and state.pending_compare is not None  # one of two is open
    state.add(second)
    assert state.take_pending_range(second.path) == (second.path, 10, 20)
    assert state.compare_ready() == (0, 1) and state.pending_compare is None


def test_find_steps_through_matches_in_time_order_and_wraps(two):
    trace = two[0].trace
    found = run_job(st.find_job(trace, "conv", None))
    assert [trace.slice_name(int(i)) for i in found] == ["Conv", "conv_tail"]
    assert list(np.asarray(trace.start)[found]) == sorted(np.asarray(trace.start)[found])
    state = st.ProfilerState()
    assert state.step_match(1) is None
    state.set_matches(found)
    assert state.step_match(1) == found[0] and state.match_text() == "1 / 2"
    assert state.step_match(1) == found[1]
    assert state.step_match(1) == found[0]  # wraps
    assert state.step_match(-1) == found[1] and state.match_text() == "2 / 2"
    state.clear_matches()
    assert state.matches.size == 0 and state.match_at == -1
    assert st.find_slices(trace, "nothing").size == 0


def test_table_rows_and_overlay(two):
    loaded = two[0]
    trace = loaded.trace
    relu = [row for row in loaded.ready["op"] if row[0] == "Relu"][0]
    assert relu[1] == 2 and relu[2] == pytest.approx(20.0)  # count, total µs
    rows = dict(map(tuple, st.slice_rows(trace, int(trace.slices_named("Relu")[0]))))
    assert rows["Name"] == "Relu" and rows["Duration"] == "10.00 µs" and rows["args.shape"] == "[1, 3]"
    in_range = run_job(st.range_job(trace, 0, 26_000, None))  # the first two slices (ns)
    assert sorted(row[0] for row in st.range_rows(in_range)) == ["Conv", "Relu"]
    facts = dict(map(tuple, st.summary_rows(loaded)))
    assert facts["Slices"] == "4" and facts["Source"] == str(loaded.path.resolve())
    assert st.info_text(trace).startswith("4 slices · ")
    assert st.typed_rows([["a", "3", "2.5", "1e3"]]) == [["a", 3, 2.5, 1000.0]]
    shares = st.overlay_values(loaded)
    assert sum(shares.values()) == pytest.approx(100.0) and set(shares) == {"Conv", "Relu", "conv_tail"}
    assert st.graph_name(None, "x_nchwc") == (None, "x_nchwc")  # no model known: the name as it is
