"""A profiling database read by time window and level of detail, never whole.

:class:`DbWindow` answers from the query cache (:mod:`.db_cache`): the events of a lane in
[t0, t1) when the window is narrow enough to show them, else one summary per bucket of the
coarsest level no wider than a pixel (how many events, their busy time, the longest one's name).
What a query costs depends on the pixels and lanes shown, not on the size of the database.

Times are the database's own nanoseconds; a window trace (:meth:`DbWindow.window_trace`) is made
relative to the session's first event, the same origin for every window, so the timeline can
swap one window's trace for the next without its view moving.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from studio.core.jobs import Progress
from studio.tools.profiler import db_cache, db_counters
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.db_cache import HCCL_CAT, KIND_API, KIND_MSTX, KIND_TASK
from studio.tools.profiler.db_reader import lane_track
from studio.tools.profiler.lod import build_lod
from studio.tools.profiler.model import Trace, add_warning
from studio.tools.profiler.stats import NameStat

EXACT_LANE_EVENTS = 4096  # a lane with no more events than this is always shown event by event
BUCKET_PX = 4  # a summary bucket is at most this many pixels wide (at least half a pixel: <= 2 per px)
SUMMARY_CAT = "summary"
_SUMMARY_ARGS = ('{"events": %d, "busy (us)": %.3f, "longest (us)": %.3f, "longest event": %s, '
                 '"summary of": "one time bucket of the database\'s query cache"}')


@dataclass
class Lane:
    """One timeline row group: a device stream, a host thread's CANN calls, an msproftx thread."""

    id: int
    kind: int
    a: int
    b: int
    n: int
    maxdur: int
    first: int | None
    last: int | None

    @property
    def track(self) -> tuple[str, str]:
        """(process, thread) as the full reader names them."""
        if self.kind == KIND_TASK:
            return f"device {self.a}", f"Stream {self.b}"
        return ("cann" if self.kind == KIND_API else "mstx"), f"Thread {self.a}"


class DbWindow:
    """Window queries over one database's cache (open with :func:`open_window`)."""

    def __init__(self, source: Path, cache: Path):
        self.source = Path(source)
        self.cache = Path(cache)
        self._db = sqlite3.connect(db_cache.reader_uri(self.cache), uri=True, check_same_thread=False)
        self.meta = dict(self._db.execute("SELECT key, value FROM meta"))
        self.levels = int(self.meta.get("levels", "1"))
        self.overview_level = int(self.meta.get("overview_level", self.levels + 1))
        self.strings = dict(self._db.execute("SELECT id, value FROM strings"))
        self.api_types = dict(self._db.execute("SELECT id, name FROM api_types"))
        self.lanes = [Lane(*row) for row in self._db.execute(
            "SELECT id, kind, a, b, n, maxdur, first, last FROM lanes ORDER BY kind, a, b")]
        starts = [lane.first for lane in self.lanes if lane.first is not None]
        ends = [lane.last for lane in self.lanes if lane.last is not None]
        self.t_first = min(starts) if starts else 0
        self.t_last = max(ends) if ends else 0
        self._counters: list | None = None  # the usage counters, read once (sampled: small tables)

    def close(self) -> None:
        """Let the cache file go."""
        self._db.close()

    @property
    def events(self) -> int:
        """How many slices the database holds (in the collection window)."""
        return sum(lane.n for lane in self.lanes)

    # ------------------------------------------------------------------ names
    def name_of(self, value) -> str:
        """A slice's name as the full reader gives it (an id into STRING_IDS, or "task N")."""
        if isinstance(value, int):
            return f"task {-1 - value}" if value < 0 else str(self.strings.get(value, value))
        return str(self.strings.get(value, value))

    def cat_of(self, kind: int, value) -> str:
        """A slice's category by its lane's kind."""
        if kind == KIND_MSTX:
            return "mstx"
        if kind == KIND_API:
            return str(self.api_types.get(value, value))
        return "HCCL" if value == HCCL_CAT else str(self.strings.get(value, ""))

    # ------------------------------------------------------------------ queries
    def lane_events(self, lane: Lane, t0: int, t1: int) -> list[tuple]:
        """(start, end, name, cat, a) of every event of ``lane`` overlapping [t0, t1), by start (``a``:
        a task's id, an API call's connection id)."""
        return self._db.execute(
            'SELECT start, start + dur, name, cat, a FROM slices WHERE lane = ? AND bucket BETWEEN ? AND ? '
            'AND start >= ? AND start < ? AND (start + dur > ? OR start >= ?) ORDER BY bucket, start, ref',
            (lane.id, (t0 - lane.maxdur) // db_cache.BASE_NS, (t1 - 1) // db_cache.BASE_NS, t0 - lane.maxdur, t1,
             t0, t0)).fetchall()

    def lane_summaries(self, lane: Lane, level: int, t0: int, t1: int) -> list[tuple]:
        """(bucket, n, start, end, busy, longest, name) of ``lane``'s buckets at ``level`` whose
        events start in [t0 - the lane's longest event, t1) and overlap [t0, t1)."""
        width = db_cache.level_width(level)
        lo, hi = (t0 - lane.maxdur) // width, (t1 - 1) // width
        # the coarse levels from the overview: one b-tree, read front to back lane after lane
        source, names = (("overview d", "d.longest, d.name") if level >= self.overview_level else
                         ("lod d JOIN lod_names g USING (level, lane, up, bucket)", "g.longest, g.name"))
        return self._db.execute(
            f'SELECT d.bucket, d.n, d.start, d."end", d.busy, {names} FROM {source} WHERE d.level = ? AND d.lane = ? '
            'AND d.up BETWEEN ? AND ? AND d.bucket BETWEEN ? AND ? AND d.start < ? AND (d."end" > ? OR d.start >= ?) '
            'ORDER BY d.up, d.bucket',  # noqa: S608 - fixed table names
            (level, lane.id, lo // db_cache.FACTOR, hi // db_cache.FACTOR, lo, hi, t1, t0, t0)).fetchall()

    def level_for(self, ns_per_px: float) -> int:
        """The coarsest summary level whose buckets are no wider than a pixel (0: events)."""
        level = 0
        for k in range(1, self.levels + 1):
            if db_cache.level_width(k) <= ns_per_px:
                level = k
        return level

    def name_stats(self) -> list[NameStat]:
        """Per name over the whole database: count, total, mean, shortest, longest (µs); the share
        is of the summed time (self time is not separated from nested calls here)."""
        merged: dict[str, list] = {}
        for name, _kind, n, total, low, high in self._db.execute("SELECT * FROM name_stats"):
            row = merged.setdefault(self.name_of(name), [0, 0, low, high])
            row[0] += n
            row[1] += total
            row[2], row[3] = min(row[2], low), max(row[3], high)
        grand = float(sum(r[1] for r in merged.values())) or 1.0
        out = [NameStat(name, n, t / 1e3, t / n / 1e3, lo / 1e3, hi / 1e3, t / grand, t / 1e3)
               for name, (n, t, lo, hi) in merged.items()]
        out.sort(key=lambda s: (-s.total_us, s.name))
        return out

    # ------------------------------------------------------------------ traces
    def window_trace(self, t0: int | None = None, t1: int | None = None, pixels: int = 2000) -> Trace:
        """A trace of [t0, t1) (the database's ns; default: everything) for a timeline ``pixels``
        wide: events where they are few enough to draw, one summary slice per bucket elsewhere."""
        t0 = self.t_first if t0 is None else int(t0)
        t1 = self.t_last + 1 if t1 is None else int(t1)
        level = self.level_for(BUCKET_PX * (t1 - t0) / max(1, pixels))
        builder = TraceBuilder()
        columns = _Columns(builder)
        summarised = exact = 0
        tracks = [lane_track(builder, *lane.track) for lane in self.lanes]  # every lane, so rows never jump
        for lane, track in zip(self.lanes, tracks):
            if level == 0 or lane.n <= EXACT_LANE_EVENTS:
                rows = self.lane_events(lane, t0, t1)
                cats = {v: columns.cat(self.cat_of(lane.kind, v)) for v in {r[3] for r in rows}}
                columns.add(track, [r[0] for r in rows], [r[1] for r in rows],
                            [columns.name(r[2], self.name_of) for r in rows], [cats[r[3]] for r in rows],
                            [_args(lane.kind, lane.b, r[4]) for r in rows])
                exact += len(rows)
                continue
            rows = self.lane_summaries(lane, level, t0, t1)
            # a summary ends where the next begins: overlapping summaries would nest as calls do
            ends = [min(r[3], nxt[2]) for r, nxt in zip(rows, rows[1:])] + [r[3] for r in rows[-1:]]
            summary = columns.cat(SUMMARY_CAT)
            columns.add(track, [r[2] for r in rows], [max(e, r[2] + 1) for r, e in zip(rows, ends)],
                        [columns.name(r[6], self.name_of) for r in rows], [summary] * len(rows),
                        [(_SUMMARY_ARGS % (r[1], r[4] / 1e3, r[5] / 1e3, columns.quoted(r[6], self.name_of))).encode()
                         for r in rows])
            summarised += sum(r[1] for r in rows)
        columns.close()
        builder.facts.update(self.facts())
        builder.facts["window"] = (f"{(t0 - self.t_first) / 1e6:,.3f} – {(t1 - self.t_first) / 1e6:,.3f} ms: "
                                   f"{exact:,} events drawn one by one, {summarised:,} in per-bucket summaries")
        trace = builder.build(source=str(self.source))
        _rebase(trace, self.t_first)
        trace.counters = self.counters()
        trace.lod = build_lod(trace.start, trace.dur, trace.track, trace.depth)
        return trace

    def counters(self) -> list:
        """The database's usage counters (HBM, LLC, NPU memory, host CPU ...) on the windows' time
        axis, read from the cache (where the build stored them, read from the file as the full
        reader reads them)."""
        if self._counters is None:
            self._counters = db_counters.load(self._db, self.t_first)
        return self._counters

    def facts(self) -> dict[str, str]:
        """What the Summary tab says of the database read by window."""
        facts = {"read by": "time window from Studio's query cache (the database is never loaded whole)",
                 "events": f"{self.events:,}", "lanes": str(len(self.lanes)),
                 "size": f"{self.source.stat().st_size / 2**20:,.1f} MiB", "query cache": str(self.cache)}
        if "session_start" in self.meta:
            facts["collection length"] = \
                f"{(int(self.meta['session_end']) - int(self.meta['session_start'])) / 1e9:.3f} s"
        outside = int(self.meta.get("outside", "0"))
        if outside:
            add_warning(facts, f"{outside} event(s) lie far outside the collection window (another clock) and are "
                               f"left off the timeline")
        return facts


def open_window(source: Path, progress=None, cancel=None) -> DbWindow:
    """The window reader of ``source``, its cache built first when there is none (``cancel``: a
    CancelToken that stops the build)."""
    return DbWindow(source, db_cache.ensure(source, progress, cancel))


def _args(kind: int, stream, ref) -> bytes:
    """A slice's details: a task's stream and id, an API call's connection id."""
    if kind == KIND_TASK:
        return b'{"Stream ID": %d, "Task ID": %d}' % (stream, ref) if stream is not None and ref is not None else b""
    if kind == KIND_API:
        return b'{"connection_id": %d}' % ref if ref is not None else b""
    return b""


class _Columns:
    """Slices gathered per lane as columns and handed to the builder at once (a window of tens of
    thousands of slices: a call per slice was most of the query's time)."""

    def __init__(self, builder: TraceBuilder):
        self.builder = builder
        self.names: dict = {}
        self.json: dict = {}
        self.parts: list[tuple] = []

    def name(self, value, text_of) -> int:
        """The builder's id of the name stored as ``value`` (decoded once per window)."""
        found = self.names.get(value)
        if found is None:
            found = self.names[value] = self.builder.name_id(text_of(value))
        return found

    def quoted(self, value, text_of) -> str:
        """The name stored as ``value`` as a JSON string (quoted once per window: thousands of
        summaries share a few hundred names)."""
        found = self.json.get(value)
        if found is None:
            found = self.json[value] = json.dumps(text_of(value))
        return found

    def cat(self, text: str) -> int:
        """The builder's id of category ``text``."""
        return self.builder.cat_id(text)

    def add(self, track: int, starts: list, ends: list, names: list, cats: list, args: list[bytes]) -> None:
        """One lane's slices: times in ns, name and category ids, raw JSON args (b"" for none)."""
        if not starts:
            return
        lengths = np.array([len(a) for a in args], np.int64)
        base = self.builder.add_args_blob(b"".join(args))
        offsets = base + np.concatenate(([0], np.cumsum(lengths)[:-1]))
        start = np.array(starts, np.int64)
        self.parts.append((start, np.array(ends, np.int64) - start, np.full(len(start), track, np.int32),
                           np.array(names, np.int32), np.array(cats, np.int32), offsets, lengths.astype(np.int32)))

    def close(self) -> None:
        """Hand every lane's columns to the builder."""
        for part in self.parts:
            self.builder.add_slices(*part)


def _rebase(trace: Trace, origin: int) -> None:
    """Make ``trace``'s times relative to ``origin`` (the database's first event), whatever its own
    first slice: every window of one database then shares one time axis."""
    shift = trace.origin_ns - origin
    if shift:
        trace.start = trace.start + shift
        trace.instant_time = trace.instant_time + shift
        for counter in trace.counters:
            counter.times = counter.times + shift
    trace.origin_ns = origin


def is_window(trace: Trace) -> bool:
    """True for a trace of one window of a database (summaries and part of its events), or of a
    multi-rank folder's lanes with ranks read by window."""
    return trace.facts.get("read by", "").startswith("time window") or "read by window" in trace.facts


def whole_trace(trace: Trace) -> Generator[Progress, None, Trace]:
    """``trace``, or the whole database (or every rank of the folder) when it is one window of
    it: what a comparison needs (a window's summaries would be compared as ops)."""
    if not is_window(trace):
        return trace
    if "read by window" in trace.facts:
        from studio.tools.profiler.cluster.timeline import open_rank_timelines

        return (yield from open_rank_timelines(Path(trace.source)))
    from studio.tools.profiler.db_reader import read_database

    return (yield from read_database(Path(trace.source)))


def window_of(trace: Trace, t0: float, t1: float) -> tuple[int, int]:
    """A timeline's window (ns relative to ``trace.origin_ns``) in the database's own ns."""
    return int(trace.origin_ns + np.floor(t0)), int(trace.origin_ns + np.ceil(t1))
