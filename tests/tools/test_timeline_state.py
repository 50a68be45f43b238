"""The timeline's model is Qt-free: what it shows (window, rows, pins, selection, colours) is read
and changed without a widget, and the frame's row look-ups agree with a plain scan of the rows."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.tools.profiler.loader import open_profile

RANKS, LANES, SLICES = 6, 2, 10


@pytest.fixture
def trace(tmp_path):
    """Six ranks of two lanes of ten 80 µs slices, 100 µs apart."""
    events = []
    for rank in range(RANKS):
        events.append({"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": f"rank{rank}"}})
        for tid in range(1, LANES + 1):
            for i in range(SLICES):
                events.append({"ph": "X", "name": f"op{tid}_{i}", "pid": rank, "tid": tid, "ts": i * 100.0,
                               "dur": 80.0})
    path = tmp_path / "ranks.json"
    path.write_text(json.dumps(events))
    return run_job(open_profile(path))


def test_the_timeline_model_imports_no_qt():
    code = ("import sys; import studio.ui.panels.profiler.timeline_state, studio.ui.panels.profiler.row_index; "
            "print(sorted(m for m in sys.modules if m.startswith('PySide6')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_pins_lay_their_rows_out_first_and_a_frame_finds_the_rows_a_scan_finds(trace):
    from studio.ui.panels.profiler.timeline_state import TimelineState

    state = TimelineState()
    state.load(trace)
    pinned = [t for t in range(len(trace.tracks)) if trace.track_label(t).startswith(("rank4", "rank1"))][:3]
    state.set_pinned(pinned + pinned[:1])  # a track pinned twice is pinned once
    rows = state.layout.rows
    band = [r for r in rows if r.pinned]
    assert [r.track for r in band if r.kind == "slices"] == pinned
    assert state.layout.pinned_h == max(r.y + r.h for r in band) and rows[:len(band)] == band
    viewport = 120
    for scroll in range(0, state.layout.content_height(), 5):
        plain = [r for r in rows if not r.pinned and r.y - scroll >= state.layout.pinned_h
                 and r.y - scroll < viewport] + [r for r in band if r.y < viewport]
        assert [id(r) for r in state.layout.visible(scroll, viewport)] == [id(r) for r in plain], scroll


def test_window_fit_and_another_trace(trace, tmp_path):
    from studio.ui.panels.profiler.timeline_state import TimelineState

    state = TimelineState()
    state.load(trace)
    state.set_window(1_000, 1_040)  # narrower than 100 ns: widened around its middle
    assert (state.t0, state.t1) == (970.0, 1070.0)
    end = max(int(s) + int(d) for s, d in zip(np.asarray(trace.start), np.asarray(trace.dur)))
    assert state.fit_span() == (0, end - int(np.asarray(trace.start).min()))
    state.selected = 3
    assert state.fit_span() == (int(trace.start[3]), int(trace.start[3]) + int(trace.dur[3]))
    state.set_pinned([0])
    state.markers.append(5)
    state.load(trace)  # the same trace again: the pins and markers stay, the selection goes
    assert state.pinned == [0] and state.markers == [5] and state.selected == -1
    (tmp_path / "other").mkdir()
    other = tmp_path / "other" / "one.json"
    other.write_text(json.dumps([{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0.0, "dur": 5.0}]))
    state.load(run_job(open_profile(other)))
    assert state.pinned == [] and state.markers == []
