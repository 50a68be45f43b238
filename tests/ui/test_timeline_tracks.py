"""Timeline tracks at cluster scale: a fuzzy track finder (Ctrl+P) and pinned tracks that stay in
a band under the ruler while everything else scrolls."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PySide6.QtCore import QPoint

from studio.core.jobs import run_job
from studio.tools.profiler.loader import open_profile
from studio.ui.panels.profiler.layout import HEADER_H, ROW_H
from studio.ui.panels.profiler.paint import BACKGROUND
from studio.ui.panels.profiler.timeline import GUTTER, RULER, TimelineView
from studio.ui.panels.profiler.track_finder import TrackFinder, fuzzy_score, rank_tracks

RANKS = 16
LANES = ("compute", "hccl group dp", "hccl group tp")


@pytest.fixture
def trace(tmp_path):
    """16 ranks, each a process with three lanes of 20 slices (a small cluster timeline)."""
    events = []
    for rank in range(RANKS):
        events.append({"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": f"rank{rank}"}})
        for tid, lane in enumerate(LANES, start=1):
            events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": lane}})
            for i in range(20):
                events.append({"ph": "X", "name": f"{lane.split()[-1]}_{i}", "pid": rank, "tid": tid,
                               "ts": i * 100.0, "dur": 80.0})
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(events))
    return run_job(open_profile(path))


def shown_view(qtbot, trace, size=(1000, 500)) -> TimelineView:
    """A shown timeline of ``trace`` at ``size``."""
    widget = TimelineView()
    qtbot.addWidget(widget)
    widget.resize(*size)
    widget.show()
    widget.set_trace(trace)
    return widget


@pytest.fixture
def view(qtbot, trace):
    return shown_view(qtbot, trace)


def _track(trace, label: str) -> int:
    return next(t for t in range(len(trace.tracks)) if trace.track_label(t) == label)


def test_fuzzy_finder_ranks_the_track_a_user_means_first(trace):
    assert fuzzy_score("r3dp", "rank3 / hccl group dp") > fuzzy_score("r3dp", "rank13 / hccl group dp")
    assert fuzzy_score("xyz", "rank3 / compute") is None
    assert trace.track_label(rank_tracks(trace, "rank3 dp")[0][0]) == "rank3 / hccl group dp"
    assert len(rank_tracks(trace, "group tp")) == RANKS  # one lane per rank


def test_pinned_lanes_stay_under_the_ruler_while_the_rest_scrolls(qtbot, view, trace):
    finder = TrackFinder(trace, [], view)
    pinned = []
    finder.pin.connect(pinned.extend)
    finder.query.setText("group dp")
    assert "16 of 48 tracks" in finder.count.text()
    finder.pin_all.click()
    view.set_pinned(pinned)
    assert sorted(trace.track_label(t) for t in view.pinned) == sorted(f"rank{r} / hccl group dp"
                                                                       for r in range(RANKS))
    assert view.pinned_h == HEADER_H + RANKS * ROW_H
    assert all(r.pinned for r in view.rows[:RANKS + 1]) and not any(r.pinned for r in view.rows[RANKS + 1:])
    assert sum(r.track in view.pinned for r in view.rows) == RANKS  # moved to the band, not copied
    view.scroll.setValue(view.scroll.maximum())  # scroll to the bottom: the band stays
    assert view.scroll.maximum() > 0
    band_row = view.rows[1]
    y = RULER + view.row_top(band_row) + ROW_H // 2
    assert view.row_top(band_row) == band_row.y
    x = int(view.x_of(int(trace.start[0]) + 40_000))  # inside the first slice of every lane (ns)
    picked = view.slice_at(QPoint(x, y))
    assert picked >= 0 and int(trace.track[picked]) == band_row.track
    image = view.grab().toImage()
    assert image.pixel(x, y) != BACKGROUND  # the pinned lane is painted in its band
    below = view.row_at_y(RULER + view.pinned_h + 2)
    assert below is not None and not below.pinned  # under the band: what scrolled there
    view.toggle_pinned(band_row.track)
    assert len(view.pinned) == RANKS - 1 and view.pinned_h == HEADER_H + (RANKS - 1) * ROW_H


def test_right_click_pins_and_the_finder_goes_to_a_track(qtbot, view, trace):
    track = _track(trace, "rank15 / compute")
    menu = view.track_menu(track)
    pin = next(a for a in menu.actions() if a.text().startswith("Pin "))
    pin.trigger()
    assert view.pinned == [track]
    assert any(a.text() == "Unpin all" for a in view.track_menu(track).actions())
    other = _track(trace, "rank12 / hccl group tp")
    view.go_to_track(other)
    row = next(r for r in view.rows if r.track == other and r.depth == 0)
    assert view.pinned_h <= view.row_top(row) <= view.height() - RULER - row.h
    assert view.row_at_y(RULER + view.row_top(row) + 2) is row
    view.set_trace(trace)  # the same trace shown again keeps its pins
    assert view.pinned == [track]
    assert np.all(np.asarray([r.y for r in view.rows]) == np.sort([r.y for r in view.rows]))


def test_markers_drop_at_the_mouse_and_list_their_gaps(qtbot, view, trace):
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QCursor

    from studio.ui.panels.profiler.markers import MARKER

    view.setFocus()
    x1, x2 = GUTTER + 200, GUTTER + 500
    times = []
    for x in (x2, x1):  # dropped out of order: listed in time order
        QCursor.setPos(view.mapToGlobal(QPoint(x, 200)))
        if view.mapFromGlobal(QCursor.pos()).x() != x:  # no pointer on this platform: place it by time
            view.add_marker(view.time_at(x))
        else:
            qtbot.keyClick(view, Qt.Key.Key_K)
        times.append(view.time_at(x))
    assert view.markers == sorted(int(round(t)) for t in times)
    labels = view.marker_labels()
    assert labels[0].startswith("M1 at ") and labels[1].startswith("M2 at ") and "(+" in labels[1]
    image = view.grab().toImage()
    assert image.pixelColor(int(view.x_of(view.markers[0])), 4) == MARKER  # its flag in the ruler
    menu = view.markers_menu()
    assert [a.text() for a in menu.actions() if a.menu()] == labels
    view.zoom(0.1)
    view.go_to_marker(1)
    assert abs((view.t0 + view.t1) / 2 - view.markers[1]) < 1
    view.remove_marker(0)
    assert len(view.markers) == 1 and view.marker_labels()[0].startswith("M1 at ")
    view.clear_markers()
    assert not view.markers and not view.markers_menu().actions()[0].isEnabled()


def test_shift_drag_over_rows_selects_an_area_of_those_tracks(qtbot, view, trace):
    from PySide6.QtCore import Qt

    from studio.tools.profiler.area import breakdown

    rows = [r for r in view.rows if r.kind == "slices"]
    first, last = rows[1], rows[4]  # rank0's dp lane down to rank1's compute lane
    got = []
    view.area_selected.connect(lambda t0, t1, tracks: got.append((t0, t1, tracks)))
    ya, yb = RULER + view.row_top(first) + 5, RULER + view.row_top(last) + 5
    qtbot.mousePress(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, QPoint(GUTTER + 50, ya))
    qtbot.mouseMove(view, QPoint(GUTTER + 400, yb))
    qtbot.mouseRelease(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier, QPoint(GUTTER + 400, yb))
    assert len(got) == 1
    t0, t1, tracks = got[0]
    assert tracks == [r.track for r in rows[1:5]]
    assert [trace.track_label(t) for t in tracks] == ["rank0 / hccl group dp", "rank0 / hccl group tp",
                                                      "rank1 / compute", "rank1 / hccl group dp"]
    split = breakdown(trace, t0, t1, tracks)  # the lanes run at the same moments: comm is overlapped
    assert split.computing_ns > 0 and split.free_ns > 0 and split.communication_not_overlapped_ns == 0
    assert split.computing_ns + split.communication_not_overlapped_ns + split.free_ns == t1 - t0
    lanes = breakdown(trace, t0, t1, tracks[:2])  # the HCCL lanes alone: all communication
    assert lanes.computing_ns == 0 and lanes.communication_not_overlapped_ns == split.computing_ns
    qtbot.keyClick(view, Qt.Key.Key_Escape)
    assert view.area_tracks == [] and view.range is None


def _run_trace(tmp_path):
    """A local run's shape: a long set-up, 2 warm-ups, then 4 measured iterations with their ops."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "run"}},
              {"ph": "X", "name": "session_initialization", "pid": 1, "tid": 1, "ts": 0, "dur": 50_000}]
    t = 60_000
    for i, name in enumerate(["warm-up 1", "warm-up 2", "iteration 1", "iteration 2", "iteration 3", "iteration 4"]):
        events.append({"ph": "X", "name": name, "pid": 1, "tid": 1, "ts": t, "dur": 900})
        events += [{"ph": "X", "name": f"Conv_{k}", "pid": 1, "tid": 2, "ts": t + 100 * k + 10, "dur": 80}
                   for k in range(8)]
        t += 1000 + (20_000 if i == 1 else 0)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(events))
    return path


def test_a_profile_opens_on_its_first_measured_iteration_and_f_shows_everything(qtbot, make_panel, tmp_path):
    from PySide6.QtCore import Qt

    from studio.core import formats
    from studio.ui.panels.profiler import ProfilerPanel

    panel = make_panel(ProfilerPanel)
    panel.open_file(formats.detect(_run_trace(tmp_path)))
    qtbot.waitUntil(lambda: len(panel.profiles) == 1, timeout=10000)
    view, trace = panel.timeline, panel.profiles[0].trace
    first = next(i for i in range(trace.size) if trace.slice_name(i) == "iteration 1")
    start, end = int(trace.start[first]), int(trace.start[first] + trace.dur[first])
    assert view.t0 <= start and end <= view.t1 and (view.t1 - view.t0) < 1.1 * (end - start)
    assert "showing iteration 1 of 4" in panel.info.text()
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_F)
    assert view.t1 - view.t0 >= trace.span_ns  # F: the whole profile


def test_an_area_shows_its_tracks_split_above_the_range_table(qtbot, make_panel, tmp_path):
    from studio.core import formats
    from studio.ui.panels.profiler import ProfilerPanel

    panel = make_panel(ProfilerPanel)
    panel.open_file(formats.detect(_run_trace(tmp_path)))
    qtbot.waitUntil(lambda: len(panel.profiles) == 1, timeout=10000)
    trace = panel.profiles[0].trace
    ops = next(t for t in range(len(trace.tracks)) if any(trace.slice_name(i).startswith("Conv")
                                                          for i in np.flatnonzero(np.asarray(trace.track) == t)))
    t0, t1 = int(trace.start.min()) + 60_000_000, int(trace.start.min()) + 62_000_000
    panel.timeline.area_selected.emit(t0, t1, [ops])
    qtbot.waitUntil(lambda: panel.range_table.note.isVisible(), timeout=10000)
    note = panel.range_table.note.text()
    assert note.startswith("1 track(s)") and "computing" in note and "free" in note
    names = [panel.range_table.model.index(r, 0).data() for r in range(panel.range_table.model.rowCount())]
    assert names and all(name.startswith("Conv") for name in names)  # only the chosen track's slices
