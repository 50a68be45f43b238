"""A big trace is on screen while it is read: the first stretch at once, fuller traces swapped in
with the view kept, statistics and Summary marked partial until the read completes.

The trace is small in bytes (6 MB); the read is made to take several steps by forcing a small
first stretch and small scanner pieces, as a trace of gigabytes takes them with the defaults."""

from __future__ import annotations

import numpy as np
import pytest

from studio.core import formats
from studio.core.jobs import run_job
from studio.tools.profiler.chrome_reader import read_chrome_trace
from studio.tools.profiler.chrome_scan import compiled
from studio.ui.panels.profiler import ProfilerPanel

pytestmark = pytest.mark.skipif(compiled() is None, reason="the growing read comes from the compiled scanner")


def _key(trace, i):
    """A slice as the user sees it: its lane, wall-clock start, duration and name."""
    track = trace.tracks[int(trace.track[i])]
    return (track.process, track.name, int(trace.start[i]) + trace.origin_ns, int(trace.dur[i]),
            trace.names[int(trace.name[i])])


def test_a_big_trace_shows_while_it_is_read_and_ends_as_a_one_shot_read(qtbot, make_panel, tmp_path):
    from profiler_tracegen import generate

    path = generate(tmp_path / "big.json", 30_000)  # ~6.3 MB, events of ~210 bytes
    panel = make_panel(ProfilerPanel, size=(1100, 600))
    panel.read_options = {"prefix_bytes": 512 << 10, "piece_bytes": 16 << 10, "ranges": 2}
    view = panel.timeline
    shown, acted = [], {}

    def act(loaded):  # after the panel's own slot: what the user does on the first frame
        shown.append((loaded, view.trace is loaded.trace, panel.reading_band.isVisible(),
                       panel.reading_band.text(), panel.stats_tab.counted.text()))
        if acted or loaded.complete:
            return
        trace = loaded.trace
        assert trace.size < 30_000
        assert "conv2d" in view.describe(0).lower() or trace.names[int(trace.name[0])] in view.describe(0)
        pick = 100
        view.set_window(int(trace.start[50]), int(trace.start[400]))
        view.select_slice(pick, centre=False)
        view.range = (int(trace.start[120]), int(trace.start[200]))
        view.set_pinned([trace.tracks[3].id])
        view.add_marker(int(trace.start[150]))
        panel.find.setText("Conv2D")
        acted.update(key=_key(trace, pick), window=(view.t0 + trace.origin_ns, view.t1 + trace.origin_ns),
                     range=(view.range[0] + trace.origin_ns, view.range[1] + trace.origin_ns),
                     pinned=(trace.tracks[3].process, trace.tracks[3].name),
                     marker=int(trace.start[150]) + trace.origin_ns)

    panel.rank_lanes_ready.connect(act)
    panel.open_file(formats.detect(path))
    qtbot.waitUntil(lambda: bool(panel.state.profiles) and panel.state.profiles[0].complete, timeout=120_000)

    # the first frame is the first stretch, long before the whole file: partial and marked so
    first, on_screen, band_shown, band, counted = shown[0]
    assert not first.complete and on_screen and band_shown
    assert band.startswith("reading: ") and "events shown" in band
    assert counted.startswith("Per op: PARTIAL")
    assert first.trace.warnings and "partial" in first.trace.warnings[0]
    # several steps: the first stretch, at least one fuller snapshot from the scanner, the whole
    sizes = [loaded.trace.size for loaded, *_ in shown]
    assert len(sizes) >= 2 and sizes == sorted(sizes) and sizes[0] < sizes[-1] < 30_000, sizes
    assert all(on for _, on, *_ in shown)  # each was swapped in on screen

    # the whole trace equals a one-shot read with the typed decoder
    loaded = panel.state.profiles[0]
    final = loaded.trace
    assert len(panel.state.profiles) == 1 and panel.profile_box.count() == 1 and view.trace is final
    one_shot = run_job(read_chrome_trace(path, scan=False))
    for column in ("start", "dur", "track", "depth", "name", "cat", "args_len"):
        assert np.array_equal(np.asarray(getattr(final, column)), np.asarray(getattr(one_shot, column))), column
    assert final.names == one_shot.names and final.origin_ns == one_shot.origin_ns
    assert final.slice_args(29_999) == one_shot.slice_args(29_999)
    counts = {}
    for name_id in np.asarray(one_shot.name):  # an independent tally of the Statistics tab's counts
        counts[one_shot.names[name_id]] = counts.get(one_shot.names[name_id], 0) + 1
    assert {s.name: s.count for s in loaded.by_name} == counts

    # the view the user set on the first frame is kept on the whole trace
    origin = final.origin_ns
    assert (view.t0 + origin, view.t1 + origin) == pytest.approx(acted["window"], abs=2)
    assert (view.range[0] + origin, view.range[1] + origin) == acted["range"]
    assert view.selected >= 0 and _key(final, view.selected) == acted["key"]
    assert [(final.tracks[t].process, final.tracks[t].name) for t in view.pinned] == [acted["pinned"]]
    assert [m + origin for m in view.markers] == [acted["marker"]]
    expected = np.flatnonzero(np.char.find(np.asarray(final.names)[np.asarray(final.name)].astype(str), "Conv2D") >= 0)
    qtbot.waitUntil(lambda: view.highlighted.size == expected.size, timeout=10_000)
    assert int(view.highlighted.max()) < final.size

    # the partial marks are gone
    qtbot.waitUntil(lambda: not panel.stats_tab.counted.text().startswith("Per op: PARTIAL"), timeout=5000)
    assert not panel.reading_band.isVisible()
    assert not any("partial" in w for w in final.warnings)
    assert all(row[0] != "Partial" for row in panel.summary.model.rows)


def _tally(trace) -> dict[str, tuple[int, float]]:
    """Each name's count and total µs over ``trace``, counted with numpy (not Studio's statistics)."""
    names = np.asarray(trace.name)
    counts = np.bincount(names, minlength=len(trace.names))
    totals = np.bincount(names, weights=np.asarray(trace.dur, dtype=np.float64), minlength=len(trace.names)) / 1e3
    return {trace.names[i]: (int(counts[i]), float(totals[i])) for i in np.flatnonzero(counts)}


def test_partial_statistics_are_computed_by_the_reading_worker_and_end_equal_to_a_full_decode(
        qtbot, make_panel, tmp_path, monkeypatch):
    import os
    import threading

    from profiler_tracegen import generate

    from studio.tools.profiler import stats

    path = generate(tmp_path / "big.json", 30_000)
    calls = []  # (thread, slices) of every per-op statistics pass in this (the window's) process
    op_rows = stats.op_rows

    def spy(trace, *args, **kwargs):
        calls.append((threading.get_ident(), trace.size))
        return op_rows(trace, *args, **kwargs)

    monkeypatch.setattr(stats, "op_rows", spy)
    panel = make_panel(ProfilerPanel, size=(1100, 600))
    panel.read_options = {"prefix_bytes": 512 << 10, "piece_bytes": 16 << 10, "ranges": 2}
    shown = []
    panel.rank_lanes_ready.connect(lambda loaded: shown.append((loaded, panel.stats_tab.counted.text())))
    panel.open_file(formats.detect(path))
    qtbot.waitUntil(lambda: bool(panel.state.profiles) and panel.state.profiles[0].complete, timeout=120_000)
    qtbot.waitUntil(lambda: not panel.stats_tab.counted.text().startswith("Per op: PARTIAL"), timeout=5000)

    partial = [(loaded, counted) for loaded, counted in shown if not loaded.complete]
    assert len(partial) >= 2, [loaded.trace.size for loaded, _ in shown]  # the first stretch and a snapshot
    first = partial[0][0].trace.size
    # this process computed the statistics of the first stretch only (read here), never on the GUI
    # thread; every fuller snapshot's and the whole trace's came from the worker that read them
    assert calls and {size for _, size in calls} == {first}, calls
    assert threading.main_thread().ident not in {thread for thread, _ in calls}
    for loaded, counted in partial[1:] + [(panel.state.profiles[0], "")]:
        assert loaded.computed_in and loaded.computed_in.split(":")[0] != str(os.getpid())
    # each partial one was marked so, and its figures are right for what was read so far
    for loaded, counted in partial:
        assert counted.startswith("Per op: PARTIAL") and loaded.counted.startswith("PARTIAL")
        got = {s.name: (s.count, s.total_us) for s in loaded.by_name}
        assert got.keys() == _tally(loaded.trace).keys()
        for name, (count, total) in _tally(loaded.trace).items():
            assert got[name][0] == count and got[name][1] == pytest.approx(total, rel=1e-9, abs=1e-6)
    # the final ones are not marked, and equal a one-shot decode's, tallied independently
    final = panel.state.profiles[0]
    assert "PARTIAL" not in final.counted and "PARTIAL" not in panel.stats_tab.counted.text()
    expected = _tally(run_job(read_chrome_trace(path, scan=False)))
    got = {s.name: (s.count, s.total_us) for s in final.by_name}
    assert got.keys() == expected.keys() and sum(c for c, _ in got.values()) == 30_000
    for name, (count, total) in expected.items():
        assert got[name][0] == count and got[name][1] == pytest.approx(total, rel=1e-9, abs=1e-6)
    assert panel.stats_tab.table.model.rowCount() == len(expected)
