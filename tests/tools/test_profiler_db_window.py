"""Profiling databases read by time window: results equal a direct query of the real exports,
nothing written beside the user's file, and a clear message for a locked, cut or damaged database
or a disk that fills while the query cache is written."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from studio.core.errors import UserError
from studio.core.jobs import run_job
from studio.tools.profiler import db_cache
from studio.tools.profiler.db_reader import read_database
from studio.tools.profiler.db_window import open_window

from db_grow import grown_db

PT_DB = "cluster_pytorch/msinsight_db_2rank_level2/level2/rank{r}_ascend_pt/ASCEND_PROFILER_OUTPUT/" \
        "ascend_pytorch_profiler_{r}.db"


@pytest.fixture(params=["pt0", "pt1", "msprof"])
def real_db(request, ascend_fixtures, tmp_path):
    """A copy of a real export alone in a folder of its own."""
    if request.param == "msprof":
        source = ascend_fixtures / "msprof" / "msprof_0.db"
    else:
        source = ascend_fixtures / "real" / PT_DB.format(r=request.param[-1])
    if not source.is_file():
        pytest.skip(f"real database not found at {source}")
    folder = tmp_path / "user"
    folder.mkdir()
    target = folder / source.name
    shutil.copyfile(source, target)
    return target


def listing(folder):
    return sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir())


def direct_events(path) -> dict[tuple[str, str], list[tuple[int, int, str]]]:
    """Every slice of the database by (process, thread), read here with plain queries and dicts."""
    db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
    strings = dict(db.execute("select id, value from STRING_IDS")) if "STRING_IDS" in tables else {}
    names = {}
    if "COMPUTE_TASK_INFO" in tables:
        names.update({gid: strings.get(n, str(n)) for gid, n in db.execute(
            "select globalTaskId, name from COMPUTE_TASK_INFO")})
    if "COMMUNICATION_TASK_INFO" in tables:
        for gid, n in db.execute("select globalTaskId, name from COMMUNICATION_TASK_INFO order by rowid"):
            names.setdefault(gid, strings.get(n, str(n)))
    lo, hi = db.execute("select startTimeNs, endTimeNs from SESSION_TIME_INFO").fetchone()
    margin = max(3600 * 10**9, hi - lo)
    out: dict = {}

    def add(key, start, end, name):
        if end < lo - margin or start > hi + margin:
            return  # another clock's event: not on the timeline
        out.setdefault(key, []).append((int(start), int(end), str(name)))

    if "TASK" in tables:
        for start, end, dev, stream, gid, kind, task in db.execute(
                "select startNs, endNs, deviceId, streamId, globalTaskId, taskType, taskId from TASK"):
            add((f"device {dev}", f"Stream {stream}"), start, end,
                names.get(gid, strings.get(kind, f"task {task}")))
    for table, pid, column in (("CANN_API", "cann", "name"), ("MSTX_EVENTS", "mstx", "message")):
        if table in tables:
            for start, end, tid, name in db.execute(f"select startNs, endNs, globalTid, {column} from {table}"):
                add((pid, f"Thread {tid % 2**32}"), start, end, strings.get(name, name))
    db.close()
    return out


def windows(lo: int, hi: int, parts: int = 7) -> list[tuple[int, int]]:
    step = max(1, (hi - lo) // parts)
    edges = [lo + i * step for i in range(parts)] + [hi + 1]
    cuts = list(zip(edges, edges[1:]))
    return cuts + [(lo + step // 3, lo + 2 * step + step // 5), (lo - 10**9, lo + 1)]


def test_window_events_equal_a_direct_query(real_db):
    expected = direct_events(real_db)
    window = open_window(real_db)
    lanes = {lane.track: lane for lane in window.lanes}
    assert set(lanes) == set(expected)
    lo = min(e[0] for ev in expected.values() for e in ev)
    hi = max(e[1] for ev in expected.values() for e in ev)
    checked = 0
    for t0, t1 in windows(lo, hi):
        for key, events in expected.items():
            want = sorted(e for e in events if e[0] < t1 and (e[1] > t0 or e[0] >= t0))
            got = sorted((s, e, window.name_of(n)) for s, e, n, *_ in window.lane_events(lanes[key], t0, t1))
            assert got == want, (key, t0, t1)
            checked += len(want)
    assert checked >= sum(len(e) for e in expected.values())  # every event was in some window
    window.close()


def test_window_trace_equals_todays_reader(real_db):
    full = run_job(read_database(real_db))
    window = open_window(real_db)

    def rows(trace, t0, t1):
        return sorted((int(trace.origin_ns + s), int(d), trace.names[n], trace.cats[c], trace.track_label(t))
                      for s, d, n, c, t in zip(trace.start, trace.dur, trace.name, trace.cat, trace.track)
                      if trace.origin_ns + s < t1 and (trace.origin_ns + s + d > t0 or trace.origin_ns + s >= t0))

    for t0, t1 in windows(window.t_first, window.t_last, 5):
        part = window.window_trace(t0, t1, pixels=10**9)  # a pixel per ns: every event, none summarised
        assert rows(part, t0, t1) == rows(full, t0, t1)
        assert part.origin_ns == window.t_first  # one time axis for every window
    counters = {(c.process, c.name): (c.times + part.origin_ns).tolist() + c.values.tolist() for c in part.counters}
    assert counters == {(c.process, c.name): (c.times + full.origin_ns).tolist() + c.values.tolist()
                        for c in full.counters}
    window.close()


def test_summaries_count_every_event_of_their_buckets(real_db):
    expected = direct_events(real_db)
    window = open_window(real_db)
    assert window.levels >= 2
    for lane in window.lanes:
        events = expected[lane.track]
        for level in range(1, window.levels + 1):
            width = db_cache.level_width(level)
            buckets: dict[int, list] = {}
            for start, end, name in events:
                buckets.setdefault(start // width, []).append((start, end, name))
            got = {row[0]: row for row in window.lane_summaries(lane, level, lane.first, lane.last + 1)}
            assert set(got) == set(buckets), (lane.track, level)
            for bucket, members in buckets.items():
                _b, n, start, end, busy, longest, name = got[bucket]
                assert n == len(members)
                assert (start, end) == (min(m[0] for m in members), max(m[1] for m in members))
                assert busy == sum(m[1] - m[0] for m in members)
                assert longest == max(m[1] - m[0] for m in members)
                assert window.name_of(name) in {m[2] for m in members if m[1] - m[0] == longest}
    window.close()


def test_name_statistics_equal_a_direct_query(real_db):
    expected: dict[str, list] = {}
    for events in direct_events(real_db).values():
        for start, end, name in events:
            row = expected.setdefault(name, [0, 0, end - start, end - start])
            row[0] += 1
            row[1] += end - start
            row[2], row[3] = min(row[2], end - start), max(row[3], end - start)
    window = open_window(real_db)
    got = {s.name: [s.count, round(s.total_us * 1e3), round(s.min_us * 1e3), round(s.max_us * 1e3)]
           for s in window.name_stats()}
    assert got == expected
    window.close()


def test_wide_window_trace_is_bounded_by_pixels(real_db, monkeypatch):
    from studio.tools.profiler import db_window

    monkeypatch.setattr(db_window, "EXACT_LANE_EVENTS", 0)  # the real exports are small: summarise every lane
    expected = direct_events(real_db)
    window = open_window(real_db)
    wide = window.window_trace(pixels=40)
    assert set(wide.cats[c] for c in wide.cat) == {"summary"}
    for lane in window.lanes:
        label = wide.track_label(next(i for i, t in enumerate(wide.tracks)
                                      if (t.pid, t.tid) == lane.track))
        mine = [i for i in range(wide.size) if wide.track_label(int(wide.track[i])) == label]
        assert len(mine) <= 2 * 40 + 1  # at most two buckets per pixel
        # every event of the lane is counted by exactly one summary
        assert sum(wide.slice_args(i)["events"] for i in mine) == len(expected[lane.track])
    window.close()


def test_nothing_is_written_beside_the_database(real_db):
    folder = real_db.parent
    before = listing(folder)
    data = real_db.read_bytes()
    window = open_window(real_db)
    window.window_trace(pixels=300)
    window.close()
    open_window(real_db).close()  # the second open takes the cache
    assert listing(folder) == before
    assert real_db.read_bytes() == data
    assert list(db_cache.cache_folder().glob("*.sqlite")) == [db_cache.cache_path(real_db)]


def test_a_changed_database_is_not_served_from_its_old_cache(real_db, tmp_path):
    first = db_cache.ensure(real_db)
    os.utime(real_db, ns=(1, 1))
    assert db_cache.cache_path(real_db) != first
    assert db_cache.ensure(real_db).is_file()


def test_a_cache_without_its_complete_mark_is_rebuilt(real_db):
    final = db_cache.cache_path(real_db)
    final.parent.mkdir(parents=True, exist_ok=True)
    half = sqlite3.connect(final)
    half.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")
    half.execute("INSERT INTO meta VALUES ('version', ?)", (str(db_cache.CACHE_VERSION),))
    half.commit()
    half.close()
    stale = final.with_name(final.name + ".part-999999999")
    stale.write_bytes(b"half")
    os.utime(stale, (1, 1))  # a build that stopped long ago
    window = open_window(real_db)
    assert window.events > 0
    assert not stale.exists()


def _rollback_copy(real_db, tmp_path):
    """The database in rollback-journal mode (the lock test needs a writer's lock SQLite honours)."""
    target = tmp_path / "journal" / real_db.name
    target.parent.mkdir()
    shutil.copyfile(real_db, target)
    db = sqlite3.connect(target)
    db.execute("PRAGMA journal_mode=DELETE")
    db.close()
    return target


def test_a_locked_database_says_so_and_is_left_alone(real_db, tmp_path):
    target = _rollback_copy(real_db, tmp_path)
    data = target.read_bytes()
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sqlite3, sys, time
        db = sqlite3.connect({str(target)!r}, isolation_level=None)
        db.execute("BEGIN EXCLUSIVE")
        db.execute("UPDATE STRING_IDS SET value = value")
        print("locked", flush=True)
        sys.stdin.readline()
        db.execute("ROLLBACK")
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "locked"
        with pytest.raises(UserError) as caught:
            open_window(target)
        assert "locked by another process" in caught.value.what
        assert caught.value.where == str(target)
        assert "wait" in caught.value.fix.lower()
        assert not db_cache.cache_path(target).exists()
    finally:
        writer.communicate("\n", timeout=30)
    assert target.read_bytes() == data
    assert open_window(target).events > 0  # once the writer is done it opens


def test_a_database_cut_short_is_named_as_such(real_db):
    data = real_db.read_bytes()
    real_db.write_bytes(data[: len(data) // 2])
    before = listing(real_db.parent)
    with pytest.raises(UserError) as caught:
        open_window(real_db)
    assert "cut short" in caught.value.what and caught.value.where == str(real_db)
    assert "Export it again" in caught.value.fix
    assert listing(real_db.parent) == before
    assert not any(db_cache.cache_folder().glob("*")) if db_cache.cache_folder().exists() else True


def test_a_damaged_database_is_named_as_such(real_db):
    data = bytearray(real_db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for offset in range(page, len(data), page):  # every page after the first: its b-tree header
        data[offset:offset + 16] = b"\xa5" * 16
    real_db.write_bytes(bytes(data))
    with pytest.raises(UserError) as caught:
        open_window(real_db)
    assert "damaged" in caught.value.what or "cannot be read" in caught.value.what
    assert caught.value.where == str(real_db)
    assert not list(db_cache.cache_folder().glob("*.sqlite"))  # no cache of a damaged file is trusted
    assert not list(db_cache.cache_folder().glob("*.part-*"))


def test_a_disk_that_fills_while_the_cache_is_written(real_db, tmp_path):
    """The cache build runs with a file-size limit far below the cache's size (the kernel refuses
    the write as on a full disk): a clear message, no part file, no cache trusted later."""
    home = os.environ["STUDIO_HOME"]
    script = textwrap.dedent(f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (48 * 1024, 48 * 1024))
        from studio.core.errors import UserError
        from studio.tools.profiler.db_window import open_window
        try:
            open_window({str(real_db)!r})
        except UserError as exc:
            print("USERERROR", exc.what, "|", exc.where, "|", exc.fix)
            sys.exit(3)
        print("OPENED")
    """)
    data = real_db.read_bytes()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "STUDIO_HOME": home, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 3, done.stdout + done.stderr
    assert "query cache" in done.stdout and "Free space" in done.stdout
    assert str(db_cache.cache_folder()) in done.stdout
    assert not list(db_cache.cache_folder().glob("*.part-*"))
    assert not db_cache.cache_path(real_db).exists()
    assert real_db.read_bytes() == data
    assert open_window(real_db).events > 0  # with room, the same open builds it


def test_the_least_recently_opened_caches_go_first(real_db, tmp_path):
    other = tmp_path / "other" / real_db.name
    other.parent.mkdir()
    shutil.copyfile(real_db, other)
    old, new = db_cache.ensure(real_db), db_cache.ensure(other)
    os.utime(old, (1, 1))  # opened long ago
    db_cache.evict(limit=new.stat().st_size + old.stat().st_size // 2)
    assert new.is_file() and not old.exists()
    assert open_window(real_db).events > 0  # built again when opened


def test_a_cancelled_cache_build_leaves_nothing(real_db):
    from studio.core.errors import Cancelled
    from studio.core.jobs import CancelToken

    cancel = CancelToken()
    steps = []

    def progress(text):  # the user cancels while the slices are copied
        steps.append(text)
        if len(steps) == 1:
            cancel.cancel()

    with pytest.raises(Cancelled):
        db_cache.ensure(real_db, progress, cancel)
    assert not list(db_cache.cache_folder().glob("*"))  # no part file, no cache
    assert db_cache.ensure(real_db).is_file()


def test_a_cache_build_cancelled_from_another_thread_stops(real_profiles, tmp_path):
    """The job's cancel comes from the window's thread while SQLite is inside a statement."""
    import threading
    import time

    from studio.core.errors import Cancelled
    from studio.core.jobs import CancelToken

    big = tmp_path / "ascend_pytorch_profiler_0.db"
    grown_db(real_profiles, big, 40_000_000)
    cancel, outcome = CancelToken(), {}

    def build():
        try:
            db_cache.ensure(big, None, cancel)
            outcome["done"] = True
        except Cancelled:
            outcome["cancelled"] = time.perf_counter()

    worker = threading.Thread(target=build)
    worker.start()
    deadline = time.time() + 30
    while not list(db_cache.cache_folder().glob("*.part-*")) and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    asked = time.perf_counter()
    cancel.cancel()
    worker.join(60)
    assert "cancelled" in outcome, outcome
    assert outcome["cancelled"] - asked < 2.0  # the statement in progress was interrupted
    assert not list(db_cache.cache_folder().glob("*"))


def test_the_cache_is_built_and_read_in_key_order(real_db, monkeypatch):
    """Every summary level is one pass over the level below in key order, and every window
    query a search of the key: no statement sorts (a sort over millions of slices was most of a
    cold open) and the export's TASK table is read in table order, not through its time index."""
    from studio.tools.profiler import db_window

    monkeypatch.setattr(db_window, "EXACT_LANE_EVENTS", 0)  # the real exports are small: summarise every lane
    window = open_window(real_db)
    db = sqlite3.connect(str(window.cache))
    asked = []
    window._db.set_trace_callback(asked.append)  # the window queries, with their values
    window.window_trace(pixels=40)
    window.window_trace(window.t_first, window.t_first + 10**7, pixels=10**9)
    window.overview_level = window.levels + 1  # the levels below the overview: from lod and lod_names
    window.window_trace(pixels=40)
    queries = [s for s in asked if s.lstrip().startswith("SELECT") and ("slices" in s or "lod" in s
                                                                        or "overview" in s)]
    assert all(any(f"FROM {table}" in s for s in queries) for table in ("slices WHERE", "lod d", "overview d"))
    builds = [s for level in range(1, window.levels + 1) for s in db_cache.level_statements(level)]
    builds.append(db_cache.overview_statement().replace("?", "1"))
    for statement in builds + queries:
        plan = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {statement}")]
        assert not any("TEMP B-TREE" in step for step in plan), (statement, plan)
        if statement in queries:  # a window reads its keys' range, never the whole table
            assert all(step.startswith("SEARCH") for step in plan), (statement, plan)
    db.execute(f"ATTACH DATABASE 'file:{real_db}?mode=ro&immutable=1' AS src")
    if "TASK" in {r[0] for r in db.execute("SELECT name FROM src.sqlite_master WHERE type='table'")}:
        plan = [row[3] for row in db.execute("EXPLAIN QUERY PLAN SELECT x.startNs FROM src.TASK x NOT INDEXED")]
        assert plan == ["SCAN x"]
    db.close()
    window.close()


def test_grown_database_windows_equal_a_direct_query_at_bucket_edges(real_profiles, tmp_path):
    """A database big enough for several summary levels, asked window by window with edges on
    and beside the cache's buckets: the events and summaries equal plain sqlite3 queries."""
    big = tmp_path / "ascend_pytorch_profiler_0.db"
    grown_db(real_profiles, big, 6_000_000)
    expected = direct_events(big)
    window = open_window(big)
    assert window.levels >= 3
    lanes = {lane.track: lane for lane in window.lanes}
    width = db_cache.BASE_NS
    base = (window.t_first // width + 5) * width
    edges = [(base, base + width), (base - 1, base + 1), (base + 1, base + 3 * width - 1),
             (base - 7 * width, base + 40 * width + 1), (window.t_first, window.t_last + 1)]
    for t0, t1 in edges:
        for key, events in expected.items():
            want = sorted(e for e in events if e[0] < t1 and (e[1] > t0 or e[0] >= t0))
            got = sorted((s, e, window.name_of(n)) for s, e, n, *_ in window.lane_events(lanes[key], t0, t1))
            assert got == want, (key, t0, t1)
    built = window.overview_level
    assert built <= window.levels  # the coarse levels are read from the overview
    for lane in window.lanes:
        starts = np.array([e[0] for e in expected[lane.track]], np.int64)
        ends = np.array([e[1] for e in expected[lane.track]], np.int64)
        for level in range(1, window.levels + 1):
            size = db_cache.level_width(level)
            t0, t1 = base + size // 2, base + 9 * size + 3
            # each bucket's events (all of them, also those outside the window), and its span
            buckets, where = np.unique(starts // size, return_inverse=True)
            count = np.bincount(where)
            busy = np.bincount(where, ends - starts).astype(np.int64)
            first = np.full(buckets.size, np.iinfo(np.int64).max)
            last = np.full(buckets.size, np.iinfo(np.int64).min)
            np.minimum.at(first, where, starts)
            np.maximum.at(last, where, ends)
            shown = (first < t1) & ((last > t0) | (first >= t0))  # the bucket's span overlaps the window
            want = list(zip(buckets[shown].tolist(), count[shown].tolist(), first[shown].tolist(),
                            last[shown].tolist(), busy[shown].tolist()))
            for overview in (window.levels + 1, built):  # the pyramid's tables, then the overview as built
                window.overview_level = overview
                got = [r[:5] for r in window.lane_summaries(lane, level, t0, t1)]
                assert got == want, (lane.track, level, overview)
    window.close()


def test_a_window_reads_its_usage_counters_from_the_cache(real_db, monkeypatch):
    """The counters come from the query cache, stored when it was built: equal to the full
    reader's, and the user's file is not opened again for them."""
    from studio.tools.profiler import db_source

    full = run_job(read_database(real_db))
    window = open_window(real_db)

    def no_reopen(*_args, **_kwargs):
        raise AssertionError("the user's database was opened again")

    monkeypatch.setattr(db_source, "connect", no_reopen)
    monkeypatch.setattr(sqlite3, "connect", no_reopen)
    part = window.window_trace(pixels=300)
    assert full.counters
    got = {(c.process, c.name, c.pid, c.source): (c.times + part.origin_ns).tolist() + c.values.tolist()
           for c in part.counters}
    assert got == {(c.process, c.name, c.pid, c.source): (c.times + full.origin_ns).tolist() + c.values.tolist()
                   for c in full.counters}
    window.close()
