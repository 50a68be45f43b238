"""Collects events from any reader and turns them into a sorted, nested :class:`Trace`.

Readers add slices either in bulk (numpy columns, the fast path for big Chrome traces) or one at a
time (B/E pairs, CSV rows, database rows). :meth:`TraceBuilder.build` then makes times relative,
sorts slices by (track, start, longest first), computes nesting depth with a vectorised sweep,
binds flow arrows to the slices at their ends, and names tracks from the metadata it was given
(``process_name`` / ``thread_name``, never pid arithmetic).
"""

from __future__ import annotations

import mmap
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from studio.tools.profiler import finish
from studio.tools.profiler.args_blob import SEGMENT, ArgsBlob, SourceArgs
from studio.tools.profiler.model import Counter, Table, Trace, Track


SPILL_BYTES = 256 << 20
# With a named spill file (``spill_path``) the args go to it in small batches: the file is what the
# cache links rather than copies, so holding them in memory first saves nothing.
NAMED_SPILL_BYTES = 16 << 20


class MappedArgs(mmap.mmap):
    """A read-only mapping of an args file that remembers the file's ``path``, so the cache can link
    that file rather than copy its bytes (a 10M-event trace carries ~1 GB of args)."""

    path: str | None = None


def map_args(handle, path: Path | None) -> MappedArgs:
    """Map open file ``handle`` (read-only), remembering ``path`` (None: unnamed, not to link)."""
    handle.flush()
    blob = MappedArgs(handle.fileno(), 0, access=mmap.ACCESS_READ)
    blob.path = str(path) if path is not None else None
    return blob


class TraceBuilder:
    """Accumulates events; call :meth:`build` once at the end."""

    def __init__(self) -> None:
        self._names: dict[str, int] = {}
        self._cats: dict[str, int] = {"": 0}
        self._track_keys: dict[tuple, int] = {}
        self._track_meta: list[dict[str, Any]] = []
        self.process_names: dict[Any, str] = {}
        self.process_sort: dict[Any, float] = {}
        self.process_labels: dict[Any, str] = {}
        self.thread_names: dict[tuple, str] = {}
        self.thread_sort: dict[tuple, float] = {}
        self._chunks: list[tuple[np.ndarray, ...]] = []
        self._one: list[list[int]] = [[], [], [], [], [], [], []]  # start, dur, track, name, cat, off, len
        self._blob_parts: list[bytes] = []
        self._blob_size = 0
        self._blob_pending = 0  # bytes in _blob_parts not yet spilled
        self._spill = None  # temporary file the args go to once they pass SPILL_BYTES
        # Where that file is made instead of an anonymous one: a range decoder spills straight into
        # the file it hands to the parent, so a big range's args are written once, never copied.
        self.spill_path: Path | None = None
        self._spill_named: Path | None = None  # the spill file's path when it is ``spill_path``
        self._sources: list[SourceArgs] = []  # trace files whose args are read in place (see args_blob)
        self._instants: list[tuple[int, int, int]] = []
        self._counters: dict[tuple, tuple[list[int], list[float]]] = {}
        self.counter_sources: dict[Any, str] = {}  # pid -> where its counters were read
        self._flows: dict[tuple, list] = {}
        self.tables: dict[str, Table] = {}
        self.facts: dict[str, str] = {}
        self.open_state: dict = {}  # readers' state across chunks (open B/E and async stacks)

    @property
    def slice_count(self) -> int:
        """Slices added so far."""
        return len(self._one[0]) + sum(int(chunk[0].shape[0]) for chunk in self._chunks)

    # ------------------------------------------------------------ interning
    def name_id(self, name: str) -> int:
        """Intern a slice name."""
        index = self._names.get(name)
        if index is None:
            index = self._names[name] = len(self._names)
        return index

    def cat_id(self, cat: str) -> int:
        """Intern a category."""
        index = self._cats.get(cat)
        if index is None:
            index = self._cats[cat] = len(self._cats)
        return index

    def track_id(self, pid: Any, tid: Any, *, kind: str = "thread") -> int:
        """The track for (pid, tid); async lanes pass ``kind="async"`` and a lane name as tid."""
        key = (kind, pid, tid)
        index = self._track_keys.get(key)
        if index is None:
            index = self._track_keys[key] = len(self._track_meta)
            self._track_meta.append({"pid": pid, "tid": tid, "kind": kind})
        return index

    # ------------------------------------------------------------ events
    def add_args(self, raw: bytes | None) -> tuple[int, int]:
        """Store raw JSON ``args`` bytes; returns (offset, length)."""
        if not raw:
            return 0, 0
        offset = self._blob_size
        self._append_blob(raw)
        return offset, len(raw)

    def add_slice(self, start_ns: int, dur_ns: int, track: int, name: str, cat: str = "",
                  args: bytes | None = None) -> None:
        """One complete slice (absolute or relative ns; made relative in :meth:`build`)."""
        off, length = self.add_args(args)
        for column, value in zip(self._one, (start_ns, max(0, dur_ns), track, self.name_id(name),
                                             self.cat_id(cat), off, length)):
            column.append(value)

    def add_slices(self, start: np.ndarray, dur: np.ndarray, track: np.ndarray, name: np.ndarray,
                   cat: np.ndarray, args_off: np.ndarray, args_len: np.ndarray) -> None:
        """Many slices at once; name/cat are ids from :meth:`name_id`/:meth:`cat_id`,
        args offsets from :meth:`add_args` (or a blob added with :meth:`add_args_blob`).
        The builder owns the arrays from then on (it may change them in place)."""
        self._chunks.append((start.astype(np.int64, copy=False), np.maximum(dur, 0).astype(np.int64, copy=False),
                             track.astype(np.int32, copy=False), name.astype(np.int32, copy=False),
                             cat.astype(np.int32, copy=False), args_off.astype(np.int64, copy=False),
                             args_len.astype(np.int32, copy=False)))

    def add_args_source(self, source: SourceArgs) -> int:
        """Read args from the file ``source`` in place rather than copy them; returns the offset
        that file's offset 0 is at (see :mod:`.args_blob`)."""
        self._sources.append(source)
        return len(self._sources) * SEGMENT

    def add_args_blob(self, blob: bytes) -> int:
        """Append a ready-made blob of many args; returns the offset its own offsets start from."""
        offset = self._blob_size
        self._append_blob(blob)
        return offset

    def add_args_file(self, path) -> int:
        """Append the args blob stored in file ``path`` (a decoded range); returns its base offset.
        Big files are copied by the kernel straight into the spill file."""
        size = os.path.getsize(path)
        offset = self._blob_size
        if self._spill is None and self._blob_pending + size < SPILL_BYTES:
            with open(path, "rb") as handle:
                self._append_blob(handle.read())
            return offset
        if self._spill is None and offset == 0:
            # The first big file becomes the spill file itself (opened, then unlinked: the open
            # handle keeps its pages): the first range's args are not copied at all.
            self._spill = open(path, "r+b")  # noqa: SIM115 - closed when the blob is mapped
            os.unlink(path)
            self._spill.seek(0, os.SEEK_END)
            self._blob_size = size
            return offset
        if self._spill is None:
            self._spill = tempfile.TemporaryFile(prefix="studio-args-")
        self._spill.writelines(self._blob_parts)
        self._blob_parts, self._blob_pending = [], 0
        self._spill.flush()
        with open(path, "rb") as source:
            _copy_file(source, self._spill, size)
        self._spill.seek(0, os.SEEK_END)
        self._blob_size += size
        return offset

    def _append_blob(self, data: bytes) -> None:
        self._blob_parts.append(data)
        self._blob_size += len(data)
        self._blob_pending += len(data)
        limit = SPILL_BYTES if self.spill_path is None else NAMED_SPILL_BYTES
        if self._blob_pending >= limit:  # big traces: args go to disk as they come
            if self._spill is None:
                self._spill = (open(self.spill_path, "w+b") if self.spill_path is not None  # noqa: SIM115
                               else tempfile.TemporaryFile(prefix="studio-args-"))
                self._spill_named = self.spill_path
            self._spill.writelines(self._blob_parts)
            self._blob_parts, self._blob_pending = [], 0

    def add_instant(self, time_ns: int, track: int, name: str) -> None:
        """An instant event (``ph: i/I``)."""
        self._instants.append((time_ns, track, self.name_id(name)))

    def add_counter(self, pid: Any, name: str, time_ns: int, value: float) -> None:
        """One sample of counter ``name`` in process ``pid``."""
        series = self._counters.setdefault((pid, name), ([], []))
        series[0].append(time_ns)
        series[1].append(float(value))

    def name_counter_sources(self, source: str) -> None:
        """Say that the counters read so far without a source came from ``source``."""
        for pid, _ in self._counters:
            self.counter_sources.setdefault(pid, source)

    def add_flow_point(self, key: tuple, phase: str, time_ns: int, track: int, enclosing: bool) -> None:
        """One end of a flow arrow (``s`` start, ``t`` step, ``f`` finish), bound to slices later."""
        self._flows.setdefault(key, []).append((phase, time_ns, track, enclosing))

    # ------------------------------------------------------------ build
    def build(self, source: str = "") -> Trace:
        """Sort, nest and name everything; the builder should not be used afterwards."""
        start, dur, track, name, cat, off, length = self._columns()
        times = [start[:1]] if start.size else []
        if self._instants:
            times.append(np.array([min(t for t, _, _ in self._instants)], np.int64))
        for series_times, _ in self._counters.values():
            if series_times:
                times.append(np.array([min(series_times)], np.int64))
        origin = int(min(int(t.min()) for t in times if t.size)) if times else 0
        if start.size:
            origin = min(origin, int(start.min()))
        # In place when the column is ours (30M slices: 240 MB not allocated twice).
        start = np.subtract(start, origin, out=start if start.flags.writeable and start.flags.owndata else None)

        order = sort_order(track, start, dur)
        del times
        start, dur, off = _in_order((start, dur, off), order)
        track, name, cat, length = _in_order((track, name, cat, length), order)
        del order
        depth = _nesting_depth(start, dur, track)
        tracks = self._tracks()
        trace = Trace(
            start=start, dur=dur, track=track, depth=depth, name=name, cat=cat,
            args_off=off, args_len=length, args_blob=self._args_blob(),
            names=list(self._names), cats=list(self._cats), tracks=tracks,
            counters=self._build_counters(origin), tables=self.tables, facts=self.facts,
            origin_ns=origin, source=source,
        )
        if self._instants:
            inst = np.array(self._instants, dtype=np.int64)
            trace.instant_time = inst[:, 0] - origin
            trace.instant_track = inst[:, 1].astype(np.int32)
            trace.instant_name = inst[:, 2].astype(np.int32)
        trace.flow_src, trace.flow_dst = self._bind_flows(trace, origin)
        return trace

    def snapshot(self, source: str = "") -> Trace:
        """A Trace of what was added so far, the builder left as it was (it reads on).

        Columns and tables are copied, so :meth:`build` on the copy cannot touch what the builder
        still holds; the args are the spill file mapped as far as it is written (it is only ever
        appended to) or the pieces in memory joined. Slices still open (a B without its E yet) are
        not in it."""
        copy = TraceBuilder()
        copy._names, copy._cats = dict(self._names), dict(self._cats)
        copy._track_keys, copy._track_meta = dict(self._track_keys), [dict(m) for m in self._track_meta]
        for key in ("process_names", "process_sort", "process_labels", "thread_names", "thread_sort",
                    "counter_sources", "tables", "facts"):
            setattr(copy, key, dict(getattr(self, key)))
        chunks = list(self._chunks)
        if self._one[0]:
            dtypes = (np.int64, np.int64, np.int32, np.int32, np.int32, np.int64, np.int32)
            chunks.append(tuple(np.array(col, dtype=dt) for col, dt in zip(self._one, dtypes)))
        if chunks:  # concatenated: always a copy, the builder's own chunks untouched
            copy._chunks = [tuple(np.concatenate([c[i] for c in chunks]) for i in range(7))]
        copy._instants = list(self._instants)
        copy._counters = {key: (list(t), list(v)) for key, (t, v) in self._counters.items()}
        copy._flows = {key: list(points) for key, points in self._flows.items()}
        trace = copy.build(source=source)
        trace.args_blob = self._blob_so_far()
        return trace

    def _blob_so_far(self):
        """Every args byte added so far, without letting the builder's own go."""
        if self._spill is None:
            return self._with_sources(b"".join(self._blob_parts))
        self._spill.writelines(self._blob_parts)  # what would be spilled at the next threshold anyway
        self._blob_parts, self._blob_pending = [], 0
        return self._with_sources(map_args(self._spill, self._spill_named))

    def _args_blob(self):
        """All args bytes: joined in memory, or, for big traces, the temporary file they were
        spilled to, memory-mapped (a 10M-event trace carries ~1 GB of args); with the files read
        in place, if any."""
        parts, self._blob_parts = self._blob_parts, []
        if self._spill is None:
            return self._with_sources(b"".join(parts))
        handle, self._spill = self._spill, None
        with handle:  # unlinked already, or named (the cache links it); the mapping keeps its pages
            handle.writelines(parts)
            return self._with_sources(map_args(handle, self._spill_named))

    def _with_sources(self, own):
        return ArgsBlob(own, self._sources) if self._sources else own

    def write_args(self, path) -> None:
        """Write all args bytes to file ``path`` without mapping them (the kernel copies a spill
        file), then forget them; for readers that hand their columns to another process."""
        if self._sources:
            raise ValueError("args read in place from a trace file cannot be written out")
        parts, self._blob_parts = self._blob_parts, []
        if self._spill is not None and self.spill_path is not None and Path(path) == Path(self.spill_path):
            with self._spill as handle:  # the spill file is the file asked for: finish it in place
                handle.seek(0, os.SEEK_END)
                handle.writelines(parts)
            self._spill = None
            return
        with open(path, "wb") as out:
            if self._spill is not None:
                handle, self._spill = self._spill, None
                with handle:
                    handle.writelines(parts)
                    handle.flush()
                    size = handle.seek(0, os.SEEK_END)
                    _copy_file(handle, out, size)
                parts = []
            out.writelines(parts)

    def _columns(self) -> tuple[np.ndarray, ...]:
        chunks = list(self._chunks)
        if self._one[0]:
            dtypes = (np.int64, np.int64, np.int32, np.int32, np.int32, np.int64, np.int32)
            chunks.append(tuple(np.array(col, dtype=dt) for col, dt in zip(self._one, dtypes)))
        if not chunks:
            dtypes = (np.int64, np.int64, np.int32, np.int32, np.int32, np.int64, np.int32)
            return tuple(np.zeros(0, dt) for dt in dtypes)
        self._chunks = []
        if len(chunks) == 1:
            return chunks[0]
        columns = []
        for i in range(7):  # column by column, letting each chunk's piece go once copied
            columns.append(np.concatenate([c[i] for c in chunks]))
            chunks = [tuple(None if j == i else part for j, part in enumerate(c)) for c in chunks]
        return tuple(columns)

    def _tracks(self) -> list[Track]:
        tracks = []
        for index, meta in enumerate(self._track_meta):
            pid, tid, kind = meta["pid"], meta["tid"], meta["kind"]
            process = self.process_names.get(pid) or (str(pid) if isinstance(pid, str) else f"Process {pid}")
            if kind == "async":
                thread = str(tid)
                sort = 1e9
            else:
                thread = self.thread_names.get((pid, tid)) or (str(tid) if isinstance(tid, str) else f"Thread {tid}")
                sort = self.thread_sort.get((pid, tid), _numeric(tid))
            tracks.append(Track(index, process, thread, pid, tid, self.process_sort.get(pid, _numeric(pid)),
                                sort, self.process_labels.get(pid, "")))
        return tracks

    def _build_counters(self, origin: int) -> list[Counter]:
        counters = []
        for (pid, name), (times, values) in self._counters.items():
            t = np.array(times, dtype=np.int64) - origin
            v = np.array(values, dtype=np.float64)
            order = np.argsort(t, kind="stable")
            process = self.process_names.get(pid) or f"Process {pid}"
            counters.append(Counter(process, name, t[order], v[order], pid,
                                    self.process_sort.get(pid, _numeric(pid)), self.counter_sources.get(pid, "")))
        counters.sort(key=lambda c: (c.process_sort, c.process, c.name))
        sources: dict[str, int] = {}
        for counter in counters:
            sources[counter.source] = sources.get(counter.source, 0) + 1
        if counters and "counters source" not in self.facts:  # users must see which file drew each track
            self.facts["counters source"] = "; ".join(f"{src or 'the timeline'} ({n} series)"
                                                      for src, n in sources.items())
        return counters

    def _bind_flows(self, trace: Trace, origin: int) -> tuple[np.ndarray, np.ndarray]:
        src, dst = [], []
        if not self._flows or not trace.size:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        bounds = np.searchsorted(trace.track, np.arange(len(trace.tracks) + 1))
        for points in self._flows.values():
            bound = [_slice_at(trace, bounds, t - origin, track, enclosing) for _, t, track, enclosing in points]
            bound = [b for b in bound if b >= 0]
            for a, b in zip(bound, bound[1:]):
                if a != b:
                    src.append(a)
                    dst.append(b)
        return np.array(src, np.int64), np.array(dst, np.int64)


def _copy_file(source, target, size: int) -> None:
    """Copy ``size`` bytes from the start of open file ``source`` to ``target``'s position, in the
    kernel where it can (no pages of either file become resident here)."""
    source.seek(0)
    target.flush()
    copied = 0
    while copied < size:
        try:
            sent = os.copy_file_range(source.fileno(), target.fileno(), size - copied)
        except (AttributeError, OSError):  # no copy_file_range here: through Python
            source.seek(copied)
            shutil.copyfileobj(source, target, 16 << 20)
            target.flush()
            return
        if sent == 0:
            break
        copied += sent
    target.seek(0, os.SEEK_END)


def sort_order(major: np.ndarray, start: np.ndarray, dur: np.ndarray | None = None) -> np.ndarray:
    """Order by (major, start, longest first). One int64 key sort when it fits (start < 2^43 ns,
    ~2.4 hours, and major < 2^20) and no two slices share (major, start); else a full lexsort."""
    if not start.size:
        return np.zeros(0, np.int64)
    k = finish.kernels_for(start.size)
    # The counting sort keeps four arrays per key: only when the keys are no more than the slices.
    if k is not None and major.min() >= 0 and major.max() < max(1 << 16, start.size):
        return _track_order(k, major, start, dur)
    if start.min() >= 0 and start.max() < (1 << 43) and major.max() < (1 << 20) and major.min() >= 0:
        # In place, one 8-byte temporary at a time: on 30M slices each is 240 MB.
        key = major.astype(np.int64)
        key <<= 43
        key |= start
        order = np.argsort(key, kind="stable")
        if dur is None:
            return order
        key = key[order]
        if not _has_ties(key):
            return order
        del key
    if dur is None:
        return np.lexsort((start, major))
    return np.lexsort((-dur, start, major))


def _track_order(k, major: np.ndarray, start: np.ndarray, dur: np.ndarray | None) -> np.ndarray:
    """:func:`sort_order` by a counting sort on ``major`` (compiled); a group out of (start, longest
    first) order, rare in real traces, is then ordered by numpy's stable lexsort, as a whole sort would."""
    by = dur if dur is not None else np.zeros(start.size, np.int64)
    order, bounds, in_order = k.track_order(np.ascontiguousarray(major), np.ascontiguousarray(start),
                                            np.ascontiguousarray(by), int(major.max()) + 1)
    for group in np.flatnonzero(~in_order):
        a, b = int(bounds[group]), int(bounds[group + 1])
        rows = order[a:b]
        order[a:b] = rows[np.lexsort((-by[rows], start[rows]))]
    return order


def _in_order(columns: tuple[np.ndarray, ...], order: np.ndarray) -> list[np.ndarray]:
    """``columns`` (of one dtype and length) taken in ``order``, one at a time, each into the memory
    of the one before: one extra column is alive at once (30M slices: 240 MB), and only the first
    is new memory, whose first touch is what a big take mostly costs. The columns must be the
    caller's to overwrite."""
    out, spare = [], None
    for column in columns:
        if spare is None or not (column.flags.writeable and column.flags.owndata):
            spare = np.empty_like(column)
        np.take(column, order, out=spare, mode="clip")  # "clip": indices are valid; "raise" buffers
        out.append(spare)
        spare = column if column.flags.writeable and column.flags.owndata else None
    return out


def _has_ties(sorted_key: np.ndarray, step: int = 1 << 22) -> bool:
    """True when two neighbours of ``sorted_key`` are equal (checked in pieces: no full-size diff)."""
    for a in range(0, sorted_key.size - 1, step):
        piece = sorted_key[a:a + step + 1]
        if np.any(piece[1:] == piece[:-1]):
            return True
    return False


def _numeric(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _nesting_depth(start: np.ndarray, dur: np.ndarray, track: np.ndarray) -> np.ndarray:
    """Depth of each slice within its track (input sorted by track, start, longest first).

    For properly nested slices, the depth of slice i is the number of earlier slices still open at
    its start: (its index in the track) minus (how many slices of the track ended by then).
    """
    depth = np.zeros(start.shape[0], dtype=np.int16)
    if not start.size:
        return depth
    k = finish.kernels_for(start.size)
    if k is not None:
        return k.nesting_depth(np.ascontiguousarray(start), np.ascontiguousarray(dur), np.ascontiguousarray(track))
    end = start + dur
    cuts = np.flatnonzero(np.diff(track)) + 1
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, start.size]):
        ends = np.sort(end[a:b])
        ended = np.searchsorted(ends, start[a:b], side="right")
        local = np.arange(b - a) - ended
        np.clip(local, 0, 32000, out=local)
        depth[a:b] = local
    return depth


def _slice_at(trace: Trace, bounds: np.ndarray, time: int, track: int, enclosing: bool) -> int:
    """The slice a flow end binds to: the deepest slice enclosing ``time`` on ``track``, or
    (for ends not bound to an enclosing slice) the next slice starting at or after it."""
    a, b = int(bounds[track]), int(bounds[track + 1])
    if a == b:
        return -1
    starts = trace.start[a:b]
    i = int(np.searchsorted(starts, time, side="right")) - 1
    best, best_depth = -1, -1
    # Walk back over the few slices that could enclose it (bounded: nesting is shallow).
    for j in range(i, max(-1, i - 64), -1):
        k = a + j
        if trace.start[k] <= time <= trace.start[k] + trace.dur[k] and trace.depth[k] > best_depth:
            best, best_depth = k, int(trace.depth[k])
        if trace.depth[k] == 0 and best >= 0:
            break
    if best >= 0:
        return best
    if not enclosing and i + 1 < b - a:
        return a + i + 1
    return a + max(i, 0) if i >= 0 and trace.start[a + i] + trace.dur[a + i] >= time - 1000 else -1
