"""The Profiler panel reads a profiling database by the window shown: the whole session opens as
per-bucket summaries, and zooming in reads the events of the new window (checked against a direct
query of the real export)."""

from __future__ import annotations

import shutil
import sqlite3

import numpy as np
import pytest

from studio.core import formats
from studio.ui.panels.profiler.panel import ProfilerPanel

PT_DB = "cluster_pytorch/msinsight_db_2rank_level2/level2/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/" \
        "ascend_pytorch_profiler_0.db"


@pytest.fixture
def panel(make_panel):
    return make_panel(ProfilerPanel, size=(1100, 600))


@pytest.fixture
def real_db(ascend_fixtures, tmp_path):
    source = ascend_fixtures / "real" / PT_DB
    if not source.is_file():
        pytest.skip(f"real database not found at {source}")
    target = tmp_path / "user" / source.name
    target.parent.mkdir()
    shutil.copyfile(source, target)
    return target


def direct_count(path, a: int, b: int) -> int:
    """Slices of TASK and CANN_API overlapping [a, b), counted by SQLite directly."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    total = sum(db.execute(f"select count(*) from {t} where startNs < ? and (endNs > ? or startNs >= ?)",
                           (b, a, a)).fetchone()[0] for t in ("TASK", "CANN_API"))
    db.close()
    return total


def test_database_opens_by_window_and_zoom_reads_the_new_window(qtbot, panel, real_db, monkeypatch):
    from studio.tools.profiler import db_window

    monkeypatch.setattr(db_window, "EXACT_LANE_EVENTS", 0)  # the real export is small: summarise every lane
    before = sorted(p.name for p in real_db.parent.iterdir())
    panel.open_file(formats.detect(real_db))
    qtbot.waitUntil(lambda: len(panel.profiles) == 1 and panel.profiles[0].complete, timeout=20000)
    loaded = panel.profiles[0]
    assert loaded.trace.facts["read by"].startswith("time window")
    assert loaded.by_name and loaded.by_name[0].count > 0  # statistics of the whole database
    assert "summary" in loaded.trace.cats  # the whole session: per-bucket summaries
    assert loaded.trace.size < direct_count(real_db, 0, 2**62)
    view = panel.timeline
    trace = loaded.trace
    # zoom on a 0.5 ms stretch in the middle of the busiest part of the session
    mid = float(trace.start[len(trace.start) // 2])
    view.set_window(mid, mid + 5e5)
    qtbot.waitUntil(lambda: panel.state.current.trace is not trace and panel.db_follow.settled(), timeout=20000)
    shown = panel.state.current.trace
    a, b = shown.origin_ns + int(view.t0), shown.origin_ns + int(view.t1)
    rel = shown.start + shown.dur
    inside = ((shown.start + shown.origin_ns < b) & ((rel + shown.origin_ns > a) | (shown.start + shown.origin_ns >= a)))
    assert "summary" not in {shown.cats[c] for c in shown.cat[inside]}  # zoomed in: events, not summaries
    assert 0 < int(inside.sum()) == direct_count(real_db, a, b)
    assert (view.t0, view.t1) == pytest.approx((mid, mid + 5e5))  # the view stayed where the user put it
    assert sorted(p.name for p in real_db.parent.iterdir()) == before


def test_a_database_shown_by_window_is_compared_whole(qtbot, panel, real_db, tmp_path, monkeypatch):
    from studio.core.jobs import CancelToken, run_job
    from studio.tools.profiler import db_window
    from studio.tools.profiler.compare import compare
    from studio.tools.profiler.db_reader import read_database
    from studio.ui.panels.profiler.state import compare_job

    monkeypatch.setattr(db_window, "EXACT_LANE_EVENTS", 0)  # the window shows summaries only
    other = tmp_path / "other" / real_db.name
    other.parent.mkdir()
    shutil.copyfile(real_db, other)
    for path in (real_db, other):
        panel.open_file(formats.detect(path))
    qtbot.waitUntil(lambda: len(panel.profiles) == 2 and all(p.complete for p in panel.profiles), timeout=20000)
    base, new = panel.profiles
    result, _rows, _labels = run_job(compare_job(base, new, False, CancelToken()))
    whole = compare(run_job(read_database(real_db)), run_job(read_database(other)))
    assert result.base_total_us == pytest.approx(whole.base_total_us)
    assert {r.name for r in result.ops} == {r.name for r in whole.ops}
    assert result.base_total_us != pytest.approx(compare(base.trace, new.trace).base_total_us)


def test_a_sampled_first_look_shows_while_the_cache_is_built(qtbot, panel, real_db, monkeypatch):
    import threading

    from studio.tools.profiler import db_cache

    release, build = threading.Event(), db_cache.ensure

    def slow_build(source, progress=None, cancel=None):  # a big file: the cache takes a while
        assert release.wait(30)
        return build(source, progress, cancel)

    monkeypatch.setattr(db_cache, "ensure", slow_build)
    panel.open_file(formats.detect(real_db))
    qtbot.waitUntil(lambda: len(panel.profiles) == 1, timeout=20000)
    first = panel.profiles[0]
    assert not first.complete and first.trace.facts["read by"].startswith("sampled preview")
    assert panel.reading_band.isVisible() and "sampled preview" in panel.reading_band.text()
    db = sqlite3.connect(f"file:{real_db}?mode=ro", uri=True)
    tasks = set(db.execute("select startNs, endNs from TASK"))
    db.close()
    shown = {(int(first.trace.origin_ns + s), int(first.trace.origin_ns + s + d))
             for s, d in zip(first.trace.start, first.trace.dur)}
    assert shown and shown <= tasks  # real tasks of the file, a sample of them
    release.set()
    qtbot.waitUntil(lambda: panel.profiles[0].complete, timeout=20000)
    assert panel.profiles[0].trace.facts["read by"].startswith("time window")
    assert not panel.reading_band.isVisible()


def test_database_only_ranks_lanes_follow_the_zoom(qtbot, panel, real_profiles, monkeypatch):
    """Every rank's lanes of the real 2-rank db export: the whole session as summaries first, then
    the events of the window the user zooms to, for both ranks (counted by SQLite directly)."""
    from studio.tools.profiler import db_window

    folder = real_profiles / "cluster_pytorch/msinsight_db_2rank_level2/level2"
    if not folder.is_dir():
        pytest.skip(f"real db export not found at {folder}")
    monkeypatch.setattr(db_window, "EXACT_LANE_EVENTS", 0)  # the real export is small: summarise every lane
    panel.reader.open_rank_timelines(folder)
    qtbot.waitUntil(lambda: len(panel.profiles) == 1 and panel.profiles[0].complete, timeout=30000)
    loaded = panel.profiles[0]
    assert loaded.label.endswith("(all ranks, by window)") and loaded.path == folder
    assert {loaded.trace.cats[c] for c in loaded.trace.cat} == {"summary"}
    assert loaded.by_name and sum(s.count for s in loaded.by_name) == sum(
        direct_count(folder / f"rank{r}_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_{r}.db", 0, 2**62)
        for r in (0, 1))
    view, trace = panel.timeline, loaded.trace
    mid = float(np.median(trace.start))
    view.set_window(mid, mid + 5e5)
    qtbot.waitUntil(lambda: panel.state.current.trace is not trace and panel.db_follow.settled(), timeout=20000)
    shown = panel.state.current.trace
    assert shown.origin_ns == trace.origin_ns  # one clock for every window: the view did not move
    assert (view.t0, view.t1) == pytest.approx((mid, mid + 5e5))
    a, b = shown.origin_ns + int(view.t0), shown.origin_ns + int(view.t1)
    starts = shown.start + shown.origin_ns
    inside = (starts < b) & ((starts + shown.dur > a) | (starts >= a))
    assert "summary" not in {shown.cats[c] for c in shown.cat[inside]}  # zoomed in: events, not summaries
    for r in (0, 1):
        mine = inside & np.isin(shown.track, [t.id for t in shown.tracks if t.process.startswith(f"rank {r} · ")])
        path = folder / f"rank{r}_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_{r}.db"
        assert int(mine.sum()) == direct_count(path, a, b)
    assert int(inside.sum()) > 0
