"""Every rank's lanes of a database-only multi-rank folder read by window: the coarse first read
counts exactly what the full reader decodes (events and busy time per bucket, checked with numpy
over the full reader's lanes), a zoomed window holds the full reader's events one by one, and a
cancel while a rank's query cache is built leaves no cache that a later open would trust."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from studio.core.errors import Cancelled
from studio.core.jobs import CancelToken, run_job
from studio.tools.profiler import db_cache, db_window
from studio.tools.profiler.cluster.progressive import open_rank_timelines_progressive
from studio.tools.profiler.cluster.rank_windows import FIRST_PIXELS, window_source
from studio.tools.profiler.cluster.timeline import open_rank_timelines

from db_grow import grown_db

DB = "cluster_pytorch/msinsight_db_2rank_level2/level2"


def by_window(folder, cancel=None, show=None):
    windows: list = []
    trace = run_job(open_rank_timelines_progressive(folder, show or (lambda *_: None), cancel, workers=1,
                                                    windows=windows))
    return trace, windows


def lanes(trace) -> dict[str, np.ndarray]:
    """Slice indices per lane label (process · thread)."""
    out: dict[str, list] = {}
    for i, t in enumerate(trace.track.tolist()):
        track = trace.tracks[t]
        out.setdefault(f"{track.process} / {track.name}", []).append(i)
    return {k: np.array(v) for k, v in out.items()}


def test_db_only_ranks_are_read_by_window_and_count_what_the_full_reader_decodes(real_profiles, monkeypatch):
    folder = real_profiles / DB
    if not folder.is_dir():
        pytest.skip(f"real db export not found at {folder}")
    monkeypatch.setattr(db_window, "EXACT_LANE_EVENTS", 0)  # the real ranks are small: summarise every lane
    assert all(window_source(folder / f"rank{r}_ascend_pt") for r in (0, 1))
    trace, windows = by_window(folder)
    full = run_job(open_rank_timelines(folder, workers=1))
    (reader,) = windows
    assert sorted(reader.windows) == [0, 1]
    assert set(trace.cats[c] for c in trace.cat) == {db_window.SUMMARY_CAT}  # nothing decoded whole
    mine, theirs = lanes(trace), lanes(full)
    assert set(mine) == {k for k in theirs if not k.split(" · ")[1].startswith("step")}
    for index, window in reader.windows.items():
        level = window.level_for(db_window.BUCKET_PX * (window.t_last + 1 - window.t_first) / FIRST_PIXELS)
        assert level >= 1
        width = db_cache.level_width(level)
        for label, rows in mine.items():
            if not label.startswith(f"{reader.labels[index]} · "):
                continue
            # the full reader's lane, bucketed here on the database's own clock
            starts = full.start[theirs[label]] + full.origin_ns
            buckets, where = np.unique(starts // width, return_inverse=True)
            count = np.bincount(where)
            busy = np.bincount(where, full.dur[theirs[label]]).astype(np.int64)
            args = [trace.slice_args(int(i)) for i in rows]
            got_buckets = (trace.start[rows] + trace.origin_ns) // width
            assert got_buckets.tolist() == buckets.tolist(), label
            assert [a["events"] for a in args] == count.tolist(), label
            assert [round(a["busy (us)"] * 1e3) for a in args] == busy.tolist(), label


def test_a_zoomed_window_holds_the_full_readers_events(real_profiles):
    folder = real_profiles / DB
    if not folder.is_dir():
        pytest.skip(f"real db export not found at {folder}")
    _trace, (reader,) = by_window(folder)
    full = run_job(open_rank_timelines(folder, workers=1))
    t0 = full.origin_ns + int(np.median(full.start))  # where the ranks are busy
    t1 = t0 + 3_000_000
    zoomed = reader.window_trace(t0, t1, pixels=10**9)  # a pixel per ns: every event, none summarised
    assert zoomed.origin_ns == reader.origin  # one clock for every window

    def rows(trace):
        names = {f"{t.process} / {t.name}" for t in zoomed.tracks}
        return sorted((f"{trace.tracks[int(k)].process} / {trace.tracks[int(k)].name}", int(trace.origin_ns + s), int(d),
                       trace.names[int(n)]) for s, d, k, n in zip(trace.start, trace.dur, trace.track, trace.name)
                      if f"{trace.tracks[int(k)].process} / {trace.tracks[int(k)].name}" in names
                      and trace.origin_ns + s < t1 and (trace.origin_ns + s + d > t0 or trace.origin_ns + s >= t0))

    want = rows(full)
    assert len(want) > 100
    assert rows(zoomed) == want


def test_a_cancel_while_a_ranks_cache_builds_leaves_no_cache(real_profiles, tmp_path):
    source = real_profiles / DB
    if not source.is_dir():
        pytest.skip(f"real db export not found at {source}")
    folder = tmp_path / "ranks"
    shutil.copytree(source, folder)
    big = folder / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"
    grown_db(real_profiles, big, 8_000_000)
    cancel = CancelToken()
    shown = []

    def show(trace, done, total):  # the step summaries are shown, then the user cancels
        shown.append(done)
        cancel.cancel()

    with pytest.raises(Cancelled):
        by_window(folder, cancel, show)
    assert shown == [0]
    caches = db_cache.cache_folder()
    assert not caches.exists() or not list(caches.glob("*.sqlite")) and not list(caches.glob("*.part-*"))
    trace, (reader,) = by_window(folder)  # opened again: built whole, and trusted from then on
    assert all(db_cache.is_complete(w.cache) for w in reader.windows.values())
    assert trace.size > 0


def test_a_comparison_reads_the_ranks_whole(real_profiles, monkeypatch):
    """The lanes read by window hold summaries: what a comparison is given is every rank decoded."""
    from studio.tools.profiler.db_window import is_window, whole_trace

    folder = real_profiles / DB
    if not folder.is_dir():
        pytest.skip(f"real db export not found at {folder}")
    monkeypatch.setattr(db_window, "EXACT_LANE_EVENTS", 0)
    trace, _windows = by_window(folder)
    assert is_window(trace)
    whole = run_job(whole_trace(trace))
    full = run_job(open_rank_timelines(folder, workers=1))
    assert not is_window(whole) and db_window.SUMMARY_CAT not in whole.cats
    assert whole.size == full.size and sorted(whole.start + whole.origin_ns) == sorted(full.start + full.origin_ns)
