"""A database's first frame from its query cache reads what it shows, whatever the database's size.

Once the caches of a big set no longer fit the page cache, each page SQLite reads for a frame is a
disk read: the whole-session frame must touch a few pages (the overview's run of rows, names,
lanes), not a b-tree walk per lane that grows with the cache. SQLite reads one page per read call,
so the read calls of this thread while a frame is read count the pages it touches.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from studio.tools.profiler import db_cache
from studio.tools.profiler.db_window import open_window

from db_grow import grown_db

PIXELS = 1600
MAX_READS = 40  # read calls (pages, SQLite's header) a whole-session frame may make


def read_calls() -> int:
    """The read system calls this thread has made so far (Linux; SQLite reads in the calling
    thread, and another thread's reads are not counted)."""
    with open("/proc/thread-self/io") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("syscr"))


def frame_reads(path: Path) -> tuple[int, object]:
    """The read calls of opening ``path`` by window (its cache built) and its whole-session frame."""
    before = read_calls()
    window = open_window(path)
    window.window_trace(pixels=PIXELS)
    window.close()
    return read_calls() - before, window


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts reads in /proc/thread-self/io")
def test_a_first_frame_reads_a_few_pages_whatever_the_size(real_profiles, tmp_path):
    sizes = {}
    for size in (3_000_000, 48_000_000):
        path = tmp_path / str(size) / "ascend_pytorch_profiler_0.db"
        path.parent.mkdir()
        grown_db(real_profiles, path, size)
        open_window(path).close()  # the cache built (and every module the frame needs imported)
        frame_reads(path)
        sizes[size] = frame_reads(path)
    (small, _), (big, window) = sizes[3_000_000], sizes[48_000_000]
    assert window.cache.stat().st_size > 8 * 2**20  # a cache many times SQLite's own page cache
    assert big <= MAX_READS, f"a whole-session frame made {big} reads of a {window.cache.stat().st_size:,} B cache"
    print(f"read calls of a whole-session frame: {small} (3 MB database), {big} (48 MB)")
    assert big <= small + 4, (small, big)  # 16 times the events: no more pages


def test_a_whole_session_frame_asks_only_the_overview(real_profiles, tmp_path, monkeypatch):
    """Every summarised lane of the first frame is one search of the overview's key (no join of
    two b-trees a row at a time), and the overview's rows equal the pyramid's, their longest
    event and its name checked against the slices themselves."""
    from studio.tools.profiler import db_window

    path = tmp_path / "ascend_pytorch_profiler_0.db"
    grown_db(real_profiles, path, 12_000_000)
    monkeypatch.setattr(db_window, "EXACT_LANE_EVENTS", 0)  # summarise every lane
    window = open_window(path)
    assert window.overview_level <= window.level_for(db_window.BUCKET_PX * (window.t_last - window.t_first) / PIXELS)
    asked = []
    window._db.set_trace_callback(asked.append)
    window.window_trace(pixels=PIXELS)
    window._db.set_trace_callback(None)
    reads = [s for s in asked if s.lstrip().startswith("SELECT") and "FROM counters" not in s]
    assert len(reads) == len(window.lanes)
    assert all("FROM overview d WHERE" in s and "lod" not in s and "slices" not in s for s in reads), reads
    db = window._db
    for lane in window.lanes:
        rows = db.execute("SELECT start, start + dur, dur, name FROM slices WHERE lane = ?", (lane.id,)).fetchall()
        starts, ends, durs = (np.array([r[k] for r in rows], np.int64) for k in range(3))
        names = [r[3] for r in rows]
        for level in range(window.overview_level, window.levels + 1):
            t0, t1 = window.t_first, window.t_last + 1
            got = window.lane_summaries(lane, level, t0, t1)
            overview_level = window.overview_level
            window.overview_level = window.levels + 1  # the same buckets from lod and lod_names
            assert window.lane_summaries(lane, level, t0, t1) == got
            window.overview_level = overview_level
            buckets, where = np.unique(starts // db_cache.level_width(level), return_inverse=True)
            longest = np.zeros(buckets.size, np.int64)
            np.maximum.at(longest, where, durs)
            assert [r[0] for r in got] == buckets.tolist()
            assert [r[5] for r in got] == longest.tolist()
            for (bucket, *_rest, name), k in zip(got, range(buckets.size)):
                assert name in {names[i] for i in np.flatnonzero((where == k) & (durs == longest[k]))}, bucket
    window.close()
