"""What a timeline frame looks up: the rows on screen (found by bisection over thousands of rows)
and the flows' end points (looked up as arrays), each checked against the plain definition
computed here, row by row and flow by flow."""

from __future__ import annotations

import json

import numpy as np
import pytest

from studio.core.jobs import run_job
from studio.tools.profiler.loader import open_profile
from studio.ui.panels.profiler.timeline import GUTTER, RULER, TimelineView

from test_timeline_tracks import shown_view

RANKS, LANES, SLICES = 12, 3, 30


@pytest.fixture
def trace(tmp_path):
    """12 ranks x 3 lanes (two levels deep on lane 1) and flows from each rank's lane 1 to the next
    rank's lane 2, some of them long."""
    events = []
    for rank in range(RANKS):
        events.append({"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": f"rank{rank}"}})
        for tid in range(1, LANES + 1):
            events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": f"lane{tid}"}})
            for i in range(SLICES):
                events.append({"ph": "X", "name": f"op{tid}_{i}", "pid": rank, "tid": tid, "ts": i * 100.0, "dur": 80.0})
                if tid == 1:
                    events.append({"ph": "X", "name": f"inner_{i}", "pid": rank, "tid": tid, "ts": i * 100.0 + 10,
                                   "dur": 40.0})
        events.append({"ph": "C", "name": "memory", "pid": rank, "tid": 0, "ts": 0.0, "args": {"MB": rank + 1.0}})
    flow = 0
    for rank in range(RANKS - 1):
        for i in range(0, SLICES, 3):
            later = min(SLICES - 1, i + (15 if i % 2 else 1))  # some flows span most of the trace
            events.append({"ph": "s", "id": flow, "name": "send", "cat": "comm", "pid": rank, "tid": 1,
                           "ts": i * 100.0 + 20})
            events.append({"ph": "f", "id": flow, "name": "send", "cat": "comm", "pid": rank + 1, "tid": 2,
                           "ts": later * 100.0 + 20, "bp": "e"})
            flow += 1
    path = tmp_path / "flows.json"
    path.write_text(json.dumps(events))
    loaded = run_job(open_profile(path))
    assert loaded.flow_src.size > 50
    return loaded


@pytest.fixture
def view(qtbot, trace):
    return shown_view(qtbot, trace, (900, 400))


def _plain_visible(view) -> list:
    """The rows on screen by their definition: every row looked at."""
    bottom = view.height() - RULER
    scrolling = [r for r in view.rows if not r.pinned and not view.hidden_by_band(r)
                 and view.row_top(r) + r.h > 0 and view.row_top(r) < bottom]
    return scrolling + [r for r in view.rows if r.pinned and r.y < bottom]


def test_rows_on_screen_are_the_rows_the_definition_names_at_every_scroll(view, trace):
    assert len(view.rows) > 50 and view.scroll.maximum() > 0
    for pinned in ([], [3, 17, 5]):
        view.set_pinned(pinned)
        for value in range(0, view.scroll.maximum() + 1, 7):
            view.scroll.setValue(value)
            assert [id(r) for r in view.visible_rows()] == [id(r) for r in _plain_visible(view)], (pinned, value)


class _Recorder:
    """Stands in for the QPainter: keeps the lines drawn."""

    def __init__(self) -> None:
        self.lines: list[tuple[int, int, int, int]] = []

    def setPen(self, _pen) -> None:
        pass

    def drawLine(self, *args) -> None:
        self.lines.append(tuple(int(v) for v in args))


def _plain_flows(view, trace) -> list[tuple[int, int, int, int]]:
    """Each flow in the window as a line (start, then end point), computed flow by flow."""
    lines = []
    starts, durs = np.asarray(trace.start), np.asarray(trace.dur)
    for a, b in zip(trace.flow_src.tolist(), trace.flow_dst.tolist()):
        ta, tb = starts[a] + durs[a], starts[b]
        if max(ta, tb) < view.t0 or min(ta, tb) > view.t1:
            continue
        ra = view.state.layout.row_of.get((int(trace.track[a]), int(trace.depth[a])))
        rb = view.state.layout.row_of.get((int(trace.track[b]), int(trace.depth[b])))
        if ra is None or rb is None or view.hidden_by_band(ra) or view.hidden_by_band(rb):
            continue
        lines.append((int(view.x_of(ta)), RULER + view.row_top(ra) + ra.h // 2,
                      int(view.x_of(tb)), RULER + view.row_top(rb) + rb.h // 2))
    return lines


@pytest.mark.parametrize("window", [None, (200, 900), (1500, 1600), (2900, 3100)])
def test_flows_drawn_are_the_flows_in_the_window_with_their_rows(view, trace, window):
    if window is not None:
        view.set_window(window[0] * 1000, window[1] * 1000)
    cases = [([], 0), ([], 120)] + [([4, 10], s) for s in range(0, 400, 2)]  # rows at the band's edge
    for pinned, scroll in cases:
        view.set_pinned(pinned)
        view.scroll.setValue(scroll)
        painter = _Recorder()
        view.frame_painter.overlays.paint_flows(painter)
        drawn = painter.lines[0::2]  # each flow: its line, then its arrow head
        assert sorted(drawn) == sorted(_plain_flows(view, trace)), (window, pinned, scroll)
        for (x1, y1, x2, y2), head in zip(drawn, painter.lines[1::2]):
            assert head[:2] == (x2, y2) and head[2] == x2 - 5


def test_a_collapsed_process_hides_its_flows(view, trace):
    view.toggle_process(view.rows[0].process)
    painter = _Recorder()
    view.frame_painter.overlays.paint_flows(painter)
    assert sorted(painter.lines[0::2]) == sorted(_plain_flows(view, trace))
    assert len(painter.lines) // 2 < len(_plain_flows(view, trace)) + 1


def test_a_callback_waits_for_the_next_painted_frame(qtbot, view):
    called = []
    view.after_next_paint(lambda: called.append(view.last_frame_ms))
    assert called == []
    qtbot.waitUntil(lambda: len(called) == 1, timeout=3000)
    view.grab()
    assert len(called) == 1  # once, not on every frame
    assert view.x_of(view.t0) == GUTTER


def test_rows_laid_out_by_the_job_are_the_view_s_own_layout(qtbot, trace):
    from studio.ui.panels.profiler.layout import build_rows
    from studio.ui.panels.profiler.loading import default_rows

    given = default_rows(trace)
    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(900, 400)
    view.set_trace(trace, rows=given)
    assert view.rows is given and given == build_rows(trace, set(), [])
    view.toggle_process(given[0].process)  # collapsed: laid out here, then the job's rows again
    assert view.rows is not given and view.rows == build_rows(trace, {given[0].process}, [])
    view.toggle_process(given[0].process)
    assert view.rows is given
    view.set_pinned([2])
    assert view.rows[0].pinned and view.rows == build_rows(trace, set(), [2])
