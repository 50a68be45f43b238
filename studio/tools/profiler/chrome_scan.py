"""Reading a Chrome trace with the compiled scanner (:mod:`.trace_kernels`), on every core.

The event array is cut into one range per core at guessed event boundaries; each range is scanned
by a thread (the kernel runs without the GIL) into pieces of columns. A guess is proven by the range
before it: that range is scanned from a proven start, so the event boundary it stops at is a true
one, and it must be the next range's start; otherwise the rest is scanned again from where the
proven range stopped. Pieces are handed to the builder in file order: complete events as columns
(names, categories and tracks interned once per range), the delegated events (other phases, escaped
or non-ASCII names, string pids, numbers beyond the exact path) decoded by the typed decoder and
added by :func:`~.chrome_events.add_events`, as before. The first range's pieces (proven as they
come, in a bare array) are handed over while the threads still scan, all but the newest (its last
event may yet go back to the decoder), and let go. The complete events' args are not copied: the
slices point into the file (:mod:`.args_blob`), which is read when one is selected; only a file
whose size on disk is not what was read (it changes meanwhile) has them gathered into the builder.

What the scanner does not read it leaves to the decoder it replaces, so the result does not change:
- per event: see :mod:`.trace_kernels`;
- from a point on: invalid JSON or a file cut off mid-event. The last event read before it and the
  rest of the file go to the chunked decoder, which repairs a cut file (the events before the cut,
  with a warning) or says where the JSON is malformed, as it always did;
- per file: an object whose keys around ``traceEvents`` are unusual, an object cut off or invalid
  anywhere, text after a bare array. The whole file is then read as before.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import numpy as np

from studio.core.compiled import CompiledKernels
from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.tools.profiler import finish
from studio.tools.profiler.args_blob import SourceArgs
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.chrome_decode import (
    _EVENT_END, Event, _decode_loose, _release, iter_event_chunks, readable_errors,
)
from studio.tools.profiler.chrome_events import add_chunk, add_events

NO_SCAN_ENV = "STUDIO_TRACE_NO_SCAN"  # set (to 1) to read traces with the typed decoder only
SCAN_BYTES = 8 << 20  # bytes scanned per kernel call: the unit of progress and cancel
# Smaller files are left to the typed decoder: loading numba and its cached kernels takes ~0.5-1 s
# once per process, about what the decoder needs for 64-128 MB on two cores.
SCAN_MIN_BYTES = 64 << 20
Partial = Callable[[TraceBuilder, int, int, int], None]  # (builder, bytes covered, bytes read, total)
_TRACE_EVENTS = re.compile(rb'"traceEvents"\s*:\s*\[')
# The scanner's kernels (:mod:`.trace_kernels`), or None: numba missing or broken, or
# ``STUDIO_TRACE_NO_SCAN=1``. Imported on the first trace read, not with this module.
compiled = CompiledKernels("studio.tools.profiler.trace_kernels", NO_SCAN_ENV, "trace reading")


def warm_up() -> bool:
    """Load the kernels (numba, then their cached machine code) on a tiny trace, so the first real
    read does not pay for it; False where there is no scanner. Safe to call from any thread."""
    k = compiled()
    if k is None:
        return False
    d = np.frombuffer(b'[{"ph":"X","name":"a","ts":1,"dur":1,"args":{}}]', np.uint8)
    _scan_range(k, d, _Range(1, d.size), 1 << 10, threading.Event())
    finish_kernels = finish.compiled()  # what a big trace is finished with, loaded (compiled once) too
    if finish_kernels is not None:
        one, two = np.zeros(2, np.int64), np.arange(2, dtype=np.int64)
        finish_kernels.track_order(np.zeros(2, np.int32), one, one, 1)  # slices by track
        finish_kernels.track_order(np.zeros(2, np.int64), one, one, 1)  # the levels' rows
        finish_kernels.nesting_depth(one, one, np.zeros(2, np.int32))
        groups = finish_kernels.merge_groups(two, np.zeros(2, np.int32), 1024)
        finish_kernels.merge_level(two, two, two, two, np.zeros(2, np.int32), one, 1024, groups, 2)
        finish_kernels.self_time(one, one, np.zeros(2, np.int16), np.zeros(2, np.int32), np.zeros(1, bool), False)
        finish_kernels.name_totals(np.zeros(2, np.int32), one, np.zeros(2), np.ones(2, bool), 1)
    return True


@dataclass
class _Piece:
    columns: tuple  # start, dur, local track, local name, local cat, args file offset, args length
    rows: int
    spans: np.ndarray  # delegated events: start, end pairs
    delegated: int
    blob: np.ndarray | None  # the complete events' args, one after another (None: gathered when fed)
    blob_offsets: np.ndarray | None  # where each one starts in ``blob``
    strings: tuple  # the range's string table as it was after this piece (its arrays, and the count)
    tracks: tuple  # the same for its tracks


@dataclass
class _Range:
    begin: int
    end: int  # the scan stops at the first event boundary at or after this
    pieces: list = field(default_factory=list)
    status: int = -1
    pos: int = 0
    last_kind: int = 0
    last_start: int = -1
    scanned: int = 0
    fed: int = 0  # pieces handed to the builder (and let go)
    covered: int = 0  # bytes from ``begin`` whose events were handed to the builder
    let_go: int = -1  # where the feed's next release of mapped pages starts (-1: ``begin``)
    ends: list = field(default_factory=list)  # where each piece ends, from ``begin``
    args_base: int | None = None  # args read in place: where the file's offset 0 is in the builder's blob
    string_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # local -> builder id
    track_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))


class _Tables:
    """A range's hash tables (strings, tracks), grown by doubling when the kernel pauses."""

    def __init__(self) -> None:
        self.slots = np.full(1 << 12, -1, np.int32)
        self.str_off = np.zeros(self.slots.size // 2 + 2, np.int64)
        self.str_len = np.zeros_like(self.str_off, dtype=np.int32)
        self.str_kind = np.zeros_like(self.str_off, dtype=np.int8)
        self.str_hash = np.zeros_like(self.str_off, dtype=np.uint64)
        self.arena = np.zeros(1 << 16, np.uint8)
        self.tslots = np.full(1 << 8, -1, np.int32)
        self.trk_pid = np.zeros(self.tslots.size // 2 + 1, np.int64)
        self.trk_tid = np.zeros_like(self.trk_pid)

    def grow(self, k, state: np.ndarray) -> None:
        from studio.tools.profiler.trace_kernels import ARENA, NSTR, NTRK

        if state[ARENA] * 2 > self.arena.size:
            self.arena = np.concatenate([self.arena, np.zeros(self.arena.size, np.uint8)])
        if (state[NSTR] + 2) * 2 > self.slots.size:
            self.slots = np.full(self.slots.size * 2, -1, np.int32)
            size = self.slots.size // 2 + 2
            self.str_off, self.str_len, self.str_kind, self.str_hash = (
                np.concatenate([a, np.zeros(size - a.size, a.dtype)])
                for a in (self.str_off, self.str_len, self.str_kind, self.str_hash))
            k.rehash_strings(self.str_hash, int(state[NSTR]), self.slots)
        if (state[NTRK] + 1) * 2 > self.tslots.size:
            self.tslots = np.full(self.tslots.size * 2, -1, np.int32)
            size = self.tslots.size // 2 + 1
            self.trk_pid, self.trk_tid = (np.concatenate([a, np.zeros(size - a.size, a.dtype)])
                                          for a in (self.trk_pid, self.trk_tid))
            k.rehash_tracks(self.trk_pid, self.trk_tid, int(state[NTRK]), self.tslots)


def _scan_range(k, d: np.ndarray, result: _Range, piece_bytes: int, stop: threading.Event,
                done: np.ndarray | None = None, slot: int = 0, data=None, gather: bool = True) -> _Range:
    """Scan the events from ``result.begin`` to the first boundary at or after ``result.end`` (or the
    array's end) into ``result.pieces``; ``done[slot]`` follows the bytes scanned. ``data``: the
    mapping ``d`` views, whose scanned pages are let go as the scan moves on. ``gather``: copy each
    piece's args out now (the first range, handed over as it is read), else when it is fed."""
    begin, end = result.begin, result.end
    released = begin
    tables = _Tables()
    state = np.zeros(9, np.int64)
    state[k.POS] = begin
    stack = np.zeros(k.MAX_DEPTH, np.uint8)
    estimate = 64  # bytes per event, refined as pieces are read
    while not stop.is_set():
        pos = int(state[k.POS])
        target = min(pos + piece_bytes, end)
        cap = max(256, int((target - pos) / estimate * 1.25) + 64)
        outs = (np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int32), np.empty(cap, np.int32),
                np.empty(cap, np.int32), np.empty(cap, np.int64), np.empty(cap, np.int32))
        spans = np.empty(2 * cap, np.int64)
        state[k.NFAST] = state[k.NDELEG] = 0
        while True:
            k.scan(d, target, state, *outs, spans, tables.slots, tables.str_off, tables.str_len, tables.str_kind,
                   tables.str_hash, tables.arena, tables.tslots, tables.trk_pid, tables.trk_tid, stack)
            if state[k.STATUS] == k.PAUSE and state[k.NFAST] < cap and 2 * state[k.NDELEG] + 2 <= spans.size:
                tables.grow(k, state)  # a table was full, not the outputs: same piece, on
                continue
            break
        rows, delegated = int(state[k.NFAST]), int(state[k.NDELEG])
        if rows or delegated:
            columns = tuple(o[:rows] for o in outs)
            # A later range is fed only once the whole file is scanned: its args copied now would
            # all be held at once (half a 2.2 GB trace's args, ~500 MB); they are copied from the
            # file when fed instead.
            blob, blob_offsets = _gathered(k, d, columns, rows) if gather else (None, None)
            result.ends.append(int(state[k.POS]) - begin)
            result.pieces.append(_Piece(
                columns, rows, spans[:2 * delegated], delegated, blob, blob_offsets,
                (tables.str_off, tables.str_len, tables.str_kind, tables.arena, int(state[k.NSTR])),
                (tables.trk_pid, tables.trk_tid, int(state[k.NTRK]))))
            estimate = max(16, (int(state[k.POS]) - pos) / (rows + delegated))
        if data is not None:
            # Each scanned page stayed resident in this process: a 2.2 GB file counted 2.2 GB in
            # the worker's memory. Its args are copied out; what is read again later (strings,
            # events handed to the decoder) comes back from the page cache.
            released = _release(data, released, int(state[k.POS]))
        result.scanned = int(state[k.POS]) - begin
        if done is not None:
            done[slot] = result.scanned
        status = int(state[k.STATUS])
        if status == k.DONE and (target < end and state[k.POS] < len(d)):
            continue
        if status == k.PAUSE:
            continue
        result.status, result.pos = status, int(state[k.POS])
        if status == k.DONE and result.pos >= len(d):
            result.status = k.STOP  # ``[...,`` and nothing after: a cut file
        break
    result.last_kind, result.last_start = int(state[k.LAST_KIND]), int(state[k.LAST_START])
    return result


def _gathered(k, d: np.ndarray, columns: tuple, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The args of a piece's first ``rows`` complete events, one after another, and where each starts."""
    blob = np.empty(int(columns[6][:rows].sum(dtype=np.int64)), np.uint8)
    blob_offsets = np.empty(rows, np.int64)
    k.gather(d, columns[5], columns[6], rows, blob, 0, blob_offsets)
    return blob, blob_offsets


def _events_span(data, head_limit: int = 1 << 20) -> tuple[int, bool] | None:
    """(offset just after the event array's ``[``, is a bare array), or None: not for the scanner."""
    head = bytes(data[:4096])
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    offset = len(head) - len(stripped)
    if stripped[:1] == b"[":
        return offset + 1, True
    if stripped[:1] != b"{":
        return None
    from studio.tools.profiler.chrome_parallel import _is_top_level_key

    match = _TRACE_EVENTS.search(data, offset, min(len(data), offset + head_limit))
    if match is None or not _is_top_level_key(bytes(data[offset:match.start()])):
        return None
    return match.end(), False


def _plan(data, first: int, count: int, min_range: int) -> list[tuple[int, int]]:
    """Guessed ranges [(begin, end)]: the last ends at the end of the file."""
    span = len(data) - first
    count = max(1, min(count, span // max(1, min_range)))
    begins = [first]
    for i in range(1, count):
        match = _EVENT_END.search(data, max(first + span * i // count, begins[-1] + 1))
        if match is None:
            break
        begins.append(match.end())
    return list(zip(begins, begins[1:] + [len(data)]))


def scan_chrome_trace(path: Path, data, builder: TraceBuilder, cancel: CancelToken | None, *,
                      threads: int = 1, piece_bytes: int = SCAN_BYTES, min_range: int = 16 << 20,
                      tail_chunk: int = 2 << 20, on_partial: Partial | None = None) -> Generator[Progress, None, bool]:
    """Scan the trace in ``data`` (bytes or a mapping) into ``builder``; False (``builder``
    untouched) when the file is one to read with the typed decoder as a whole.

    ``on_partial(builder, covered, read, total)`` is called each time first-range pieces were
    handed over while the threads scan (bare arrays: an object's events are handed over at the end):
    ``builder`` holds the events of the file's first ``covered`` bytes, the threads have read
    ``read`` of ``total`` bytes. It may snapshot the builder, not change it."""
    k = compiled()
    where = _events_span(data) if k is not None and len(data) else None
    if where is None:
        return False
    first, bare = where
    d = np.frombuffer(data, np.uint8)
    # The complete events' args stay in the file and are read from it when a slice is selected
    # (see args_blob): gathering and writing them out was a third of a big read. A file that is
    # not the size read (it changes as it is read) has them copied, as before.
    source = SourceArgs.of(path, len(data))
    base = builder.add_args_source(source) if source is not None else None
    plan = [_Range(b, e, args_base=base) for b, e in _plan(data, first, threads, min_range)]
    stop = threading.Event()
    total = max(1, len(data))
    done = np.zeros(len(plan), np.int64)
    pool = ThreadPoolExecutor(len(plan), thread_name_prefix="trace-scan")
    futures = [pool.submit(_scan_range, k, d, r, piece_bytes, stop, done, i, data, i == 0 and base is None)
               for i, r in enumerate(plan)]
    try:
        while not all(f.done() for f in futures):
            if cancel is not None and cancel.cancelled:
                stop.set()
                cancel.raise_if_cancelled()
            time.sleep(0.02)
            read = int(done.sum())
            if bare:  # the first range starts where the events do: its pieces are proven as they come
                fed = plan[0].fed
                _feed(k, builder, data, plan[0], path, keep_last=True)
                if on_partial is not None and plan[0].fed > fed:
                    on_partial(builder, first + plan[0].covered, read, total)
            yield Progress(0.6 * read / total, f"scanning {path.name} on {len(plan)} cores "
                                               f"({read / 1e6:.0f} of {total / 1e6:.0f} MB)")
    finally:
        stop.set()  # a cancel, or an error here: the threads stop at their next piece
        pool.shutdown(wait=True)
    ranges = [f.result() for f in futures]
    stop.clear()
    if cancel is not None:
        cancel.raise_if_cancelled()
    proven: list[_Range] = []
    expected = first
    for result in ranges:
        if result.begin != expected:  # the guess was not a boundary: scan the rest from the proof
            result = _scan_range(k, d, _Range(expected, len(data), args_base=base), piece_bytes, stop, data=data)
        proven.append(result)
        if result.status != k.DONE:
            break
        expected = result.pos
    last = proven[-1]
    tail_start = None
    if not (last.status == k.ARRAY_END and _closes_well(data, first, last.pos, bare)):
        # Bad JSON, a cut, or text after the array: from the last event read on, the decoder's rules.
        owner = next((r for r in reversed(proven) if r.last_kind != k.NONE), None)
        if not bare or owner is None:  # nothing was handed over yet (objects are handed over at the end)
            return False
        tail_start = owner.last_start  # the last event read goes to the decoder with what follows
        kind = owner.last_kind
        for piece in reversed(owner.pieces):
            if piece is None:
                break
            if kind == k.FAST and piece.rows:
                piece.rows -= 1
                break
            if kind == k.DELEGATED and piece.delegated:
                piece.delegated -= 1
                break
    yield Progress(0.6, f"adding {path.name}'s events")
    for result in proven:
        _feed(k, builder, data, result, path)
    if tail_start is not None:
        for _done, events, note in iter_event_chunks(data, path, start=tail_start, chunk_bytes=tail_chunk,
                                                     max_cut_tries=None):
            add_chunk(builder, events, note, path, cancel)
    return True


def _closes_well(data, first: int, close: int, bare: bool) -> bool:
    """After the array's ``]`` at ``close``: only whitespace (bare), or the rest of a well-formed
    object whose other keys do not repeat ``traceEvents``."""
    rest = bytes(data[close + 1:close + 1 + (1 << 20) + 1])
    if len(rest) > 1 << 20:
        return False
    if bare:
        return not rest.strip(b" \t\r\n")
    head = bytes(data[:first - 1].lstrip(b"\xef\xbb\xbf"))
    if b"\\" in rest or b"traceEvents" in rest:
        return False
    try:
        return isinstance(msgspec.json.decode(head + b"[]" + rest), dict)
    except msgspec.DecodeError:
        return False


def _feed(k, builder: TraceBuilder, data, result: _Range, path: Path, keep_last: bool = False) -> None:
    """Add a proven range's pieces not yet added to ``builder``, in file order, and let them go;
    ``keep_last`` keeps the newest (its last event may still be handed back to the decoder)."""
    mv = memoryview(data)
    ready = len(result.pieces) - (1 if keep_last else 0)
    while result.fed < ready:
        piece = result.pieces[result.fed]
        result.pieces[result.fed] = None
        result.covered = result.ends[result.fed]
        result.fed += 1
        deferred = piece.blob is None and result.args_base is None
        _intern_new(k, builder, mv, result, piece)
        _feed_piece(k, builder, mv, result, piece, path)
        if deferred:  # its args were gathered here: the pages that read go again, as the scan's did
            result.let_go = _release(data, result.begin if result.let_go < 0 else result.let_go,
                                     result.begin + result.covered)


def _intern_new(k, builder: TraceBuilder, mv: memoryview, result: _Range, piece: _Piece) -> None:
    """Builder ids for the strings and tracks the range met up to ``piece`` and not yet mapped."""
    offs, lens, kinds, arena, count = piece.strings
    known = result.string_ids.size
    if count > known:
        # As Python lists and one bytes object (the new strings' stretch of the arena, where they
        # were appended in order): per-element numpy indexing was most of this time.
        offs_, lens_, kinds_ = offs[known:count].tolist(), lens[known:count].tolist(), kinds[known:count].tolist()
        held = [(a, a + n) for a, n in zip(offs_, lens_) if a >= 0]
        lo = held[0][0] if held else 0
        stretch = arena[lo:max((b for _a, b in held), default=lo)].tobytes()
        name_id, cat_id = builder.name_id, builder.cat_id
        ids = np.array([(name_id if kind == k.NAME_KIND else cat_id)(
            (stretch[at - lo:at - lo + size] if at >= 0 else bytes(mv[-1 - at:-1 - at + size])).decode("ascii"))
            for at, size, kind in zip(offs_, lens_, kinds_)], np.int32)
        result.string_ids = np.concatenate([result.string_ids, ids])
    pids, tids, count = piece.tracks
    known = result.track_ids.size
    if count > known:
        ids = np.array([builder.track_id(int(pids[i]), int(tids[i])) for i in range(known, count)], np.int32)
        result.track_ids = np.concatenate([result.track_ids, ids])


def _feed_piece(k, builder: TraceBuilder, mv: memoryview, result: _Range, piece: _Piece, path: Path) -> None:
    """One piece: its complete events as columns, then its delegated events through the decoder."""
    n = piece.rows
    if n:
        start, dur, track, name, cat, in_file, length = (c[:n] for c in piece.columns)
        if result.args_base is not None:  # the args stay in the file
            offsets = in_file + result.args_base
        else:
            if piece.blob is None:
                piece.blob, piece.blob_offsets = _gathered(k, np.frombuffer(mv, np.uint8), piece.columns, n)
            offsets = piece.blob_offsets[:n]  # fewer than scanned when the last was handed back
            offsets += builder.add_args_blob(memoryview(piece.blob[:int(offsets[-1] + length[-1])]))
        builder.open_state["read"] = builder.open_state.get("read", 0) + n
        builder.add_slices(start, dur, result.track_ids[track], result.string_ids[name], result.string_ids[cat],
                           offsets, length)
    if piece.delegated:
        add_events(builder, _decode_spans(mv, piece.spans[:2 * piece.delegated], path), path)


def _decode_spans(mv: memoryview, spans: np.ndarray, path: Path) -> list[Event]:
    """The delegated events, decoded by the typed decoder (one call); one by one when one of them
    needs the loose path or is not UTF-8, so the others keep their raw args and the message its
    byte offset."""
    pairs = spans.reshape(-1, 2).tolist()
    joined = b"[" + b",".join(mv[a:b] for a, b in pairs) + b"]"
    try:
        with readable_errors(path):
            return msgspec.json.decode(joined, type=list[Event])
    except (msgspec.ValidationError, msgspec.DecodeError, UserError):
        pass
    events: list[Event] = []
    for a, b in pairs:
        chunk = b"[" + bytes(mv[a:b]) + b"]"
        try:
            with readable_errors(path, a - 1, chunk):
                events.extend(msgspec.json.decode(chunk, type=list[Event]))
        except msgspec.ValidationError:
            events.extend(_decode_loose(chunk, path))
        except msgspec.DecodeError as exc:
            raise UserError(f"Trace JSON is malformed at byte {a:,}: {exc}", path,
                            "The file is not valid JSON; produce it again or check the copy is complete.") from exc
    return events
