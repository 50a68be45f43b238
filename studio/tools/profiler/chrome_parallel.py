"""Decoding one big Chrome trace on every core: ranges of events decoded by forked processes, merged.

The event array (bare, or the ``traceEvents`` of the object form) is cut at top-level event
boundaries into one range per core. Each range is decoded by a forked child exactly as the
single-process reader decodes a file (:func:`~studio.tools.profiler.chrome_events.add_events`
into a builder of its own), which writes its columns, args and small state to a scratch folder.
The parent then merges the ranges in file order, which keeps everything that crosses a border
right: an ``E`` (or async ``e``) whose begin lies in an earlier range was kept aside as an orphan
and now pops the stack carried over from the earlier ranges; begins still open at a range's end
go onto that stack; flow points are appended per flow id in order; metadata is applied in order.

A cut is only a guess until proven: a range decodes only if its start is at the top level (the
first is, by construction) and then so is its end, because JSON parsing is deterministic. When
any range fails (a guessed cut fell inside nested args, the file is malformed or truncated in the
middle) nothing has been merged, and the caller reads the file in one process as before, which
gives its usual messages and repairs.
"""

from __future__ import annotations

import gc
import mmap
import os
import pickle
import re
import tempfile
import time
from collections.abc import Generator
from pathlib import Path

import msgspec
import numpy as np

from studio.core.jobs import CancelToken, Progress
from studio.core.processes import pid_alive
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.cache import SCRATCH_PREFIX as _SCRATCH_PREFIX
from studio.tools.profiler.chrome_decode import CHUNK_BYTES, DECODE_BYTES, Event, Misaligned, _EVENT_END, iter_event_chunks

_TRACE_EVENTS = re.compile(rb'"traceEvents"\s*:\s*\[')
_OBJECT_TAIL = re.compile(rb"\]\s*\}\s*\Z")
_COLUMNS = 7
WINDOW_BYTES = 16 << 10  # how far past a guessed cut the plausibility check decodes
# Ranges up to this many slices are sorted by their decoder (see _presort); bigger ones are left to
# the parent, so a 30M-event trace's decoders do not each hold an order and a column copy more.
PRESORT_MAX = 8_000_000


def cores() -> int:
    """How many processes may decode at once here."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def plan_ranges(data: bytes | mmap.mmap, ranges: int, min_range: int = CHUNK_BYTES
                ) -> list[tuple[int, int | None]] | None:
    """[(start, end)] ranges of top-level events, ``end`` None for "to the end of a bare array";
    None when the file is not worth (or not fit for) cutting."""
    head = bytes(data[:4096])
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    offset = len(head) - len(stripped)
    if stripped[:1] == b"[":
        first, last_end = offset + 1, None
    elif stripped[:1] == b"{":
        match = _TRACE_EVENTS.search(data, offset, min(len(data), offset + (1 << 20)))
        if match is None or not _is_top_level_key(bytes(data[offset:match.start()])):
            return None
        tail = bytes(data[-4096:])
        closing = _OBJECT_TAIL.search(tail)
        if closing is None:  # other keys after the events, or truncated: one piece, as before
            return None
        first, last_end = match.end(), len(data) - len(tail) + closing.start()
    else:
        return None
    span = (len(data) if last_end is None else last_end) - first
    count = min(ranges, span // max(1, min_range))
    if count < 2:
        return None
    starts, ends = [first], []
    for k in range(1, count):
        boundary = _find_boundary(data, max(first + span * k // count, starts[-1] + 1),
                                  len(data) if last_end is None else last_end)
        if boundary is None:
            break
        ends.append(boundary[0])
        starts.append(boundary[1])
    ends.append(last_end)
    return list(zip(starts, ends)) if len(starts) > 1 else None


def _is_top_level_key(prefix: bytes) -> bool:
    """True when ``prefix`` (from the object's ``{`` up to a key) is the start of a flat-enough object."""
    try:
        msgspec.json.decode(prefix + b'"_":0}')
        return True
    except msgspec.DecodeError:
        return False


def _find_boundary(data: bytes | mmap.mmap, at: int, limit: int) -> tuple[int, int] | None:
    """(end of one event, start of the next) at or after ``at``, checked by decoding a window after it."""
    for _ in range(256):
        match = _EVENT_END.search(data, at, limit)
        if match is None:
            return None
        nxt = match.end()
        probe = nxt + WINDOW_BYTES
        for _ in range(8):
            window_end = _EVENT_END.search(data, probe, limit)
            if window_end is None:
                break
            try:
                msgspec.json.decode(b"[" + data[nxt:window_end.start() + 1] + b"]")
                return match.start() + 1, nxt
            except msgspec.DecodeError:
                probe = window_end.end()
        at = match.end()
    return None


def read_ranges(path: Path, data: bytes | mmap.mmap, plan: list[tuple[int, int | None]], builder: TraceBuilder,
                cancel: CancelToken | None, chunk_bytes: int = DECODE_BYTES) -> Generator[Progress, None, bool]:
    """Decode the ranges of ``plan`` in forked children and merge them into ``builder``, in order.

    Returns False (``builder`` untouched) when any range could not be decoded on its own.
    """
    total = max(1, len(data))
    done = np.frombuffer(mmap.mmap(-1, 8 * len(plan)), dtype=np.int64)  # shared with the children
    scratch = _scratch_dir()
    if scratch is not None:
        _sweep(Path(scratch))
    with tempfile.TemporaryDirectory(prefix=f"{_SCRATCH_PREFIX}{os.getpid()}-", dir=scratch) as folder:
        children: dict[int, int] = {}
        status: dict[int, int] = {}
        try:
            for k, (start, end) in enumerate(plan):
                pid = os.fork()
                if pid == 0:  # the child never returns from here
                    _range_child(path, k, start, end, chunk_bytes, Path(folder), done)
                children[pid] = k
            while len(status) < len(children):
                if cancel is not None:
                    cancel.raise_if_cancelled()
                for pid, k in children.items():
                    if k not in status:
                        finished, code = os.waitpid(pid, os.WNOHANG)
                        if finished:
                            status[k] = os.waitstatus_to_exitcode(code)
                time.sleep(0.05)
                read = int(done.sum())
                yield Progress(0.8 * read / total, f"decoding {path.name} on {len(plan)} cores "
                                                   f"({read / 1e6:.0f} of {total / 1e6:.0f} MB)")
        finally:
            for pid, k in children.items():
                if k not in status:
                    _kill(pid)
        if any(code != 0 for code in status.values()):
            return False
        for k in range(len(plan)):
            if cancel is not None:
                cancel.raise_if_cancelled()
            yield Progress(0.8, f"merging part {k + 1} of {len(plan)}")
            _merge(builder, Path(folder), k)
    return True


def _scratch_dir() -> str | None:
    """Scratch space for the ranges' columns: beside the cache (same disk), else the system's."""
    from studio.tools.profiler.cache import cache_root

    try:
        root = cache_root()
        root.mkdir(parents=True, exist_ok=True)
        return str(root)
    except OSError:
        return None


def _sweep(root: Path) -> None:
    """Delete the scratch folders of readers that were killed (a cancelled worker leaves its
    folder behind: columns and args of a big trace are gigabytes)."""
    import shutil

    for folder in root.glob(f"{_SCRATCH_PREFIX}*"):
        owner = folder.name[len(_SCRATCH_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not pid_alive(int(owner)):
            shutil.rmtree(folder, ignore_errors=True)


def _kill(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass


def _range_child(path: Path, k: int, start: int, end: int | None, chunk_bytes: int, folder: Path,
                 done: np.ndarray) -> None:
    """Forked child: decode one range into files; the exit code tells the parent how it went."""
    code = 1
    try:
        from studio.tools.profiler.chrome_decode import map_or_read
        from studio.tools.profiler.chrome_events import add_events

        gc.disable()
        parent = os.getppid()
        data = map_or_read(path)
        builder = TraceBuilder()
        builder.spill_path = folder / f"r{k}_args.bin"  # what _write_range hands over: written once
        builder.open_state["orphans"] = []
        for consumed, events, note in iter_event_chunks(data, path, start, end, chunk_bytes):
            if os.getppid() != parent:  # the parent was killed (cancel): stop at once
                os._exit(3)
            if note:
                builder.facts["warning"] = note
            add_events(builder, events, path)
            del events
            done[k] = consumed - start
        _presort(builder)
        _write_range(builder, folder, k)
        code = 0
    except Misaligned:
        code = 2
    except BaseException:  # noqa: BLE001 - the parent reads the file again in one process
        code = 1
    finally:
        os._exit(code)


def _presort(builder: TraceBuilder) -> None:
    """Order the range's slices by (track, start) here, on this range's core: the parent's sort of
    all ranges then meets a few long sorted runs, which its stable sort merges in about linear
    time (on 10M events the parent's sort took 2.3 s on one core while the others idled). Stable,
    so slices with equal (track, start) keep their file order and the final order is unchanged."""
    from studio.tools.profiler.builder import sort_order

    columns = list(builder._columns())
    builder._one = [[] for _ in builder._one]  # now inside ``columns``: not to be added twice
    if 1 < columns[0].shape[0] <= PRESORT_MAX:
        order = sort_order(columns[2], columns[0])
        for i in range(len(columns)):  # one column at a time: each old one goes as its copy is made
            columns[i] = columns[i][order]
        del order
    builder._chunks = [tuple(columns)]


def _write_range(builder: TraceBuilder, folder: Path, k: int) -> None:
    for i, column in enumerate(builder._columns()):
        np.save(folder / f"r{k}_{i}.npy", column)
    builder.write_args(folder / f"r{k}_args.bin")  # copied by the kernel, never mapped here
    state = {
        "names": list(builder._names), "cats": list(builder._cats), "tracks": builder._track_meta,
        "process_names": builder.process_names, "process_sort": builder.process_sort,
        "process_labels": builder.process_labels, "thread_names": builder.thread_names,
        "thread_sort": builder.thread_sort, "instants": builder._instants, "counters": builder._counters,
        "flows": builder._flows, "facts": builder.facts, "open": builder.open_state,
    }
    with (folder / f"r{k}.pkl").open("wb") as handle:
        pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)


def _merge(builder: TraceBuilder, folder: Path, k: int) -> None:
    """Add range ``k`` to ``builder`` as if its events had followed the earlier ranges' events."""
    from studio.tools.profiler.chrome_events import one_ts_ns

    with (folder / f"r{k}.pkl").open("rb") as handle:
        state = pickle.load(handle)
    track = np.array([builder.track_id(t["pid"], t["tid"], kind=t["kind"]) for t in state["tracks"]] or [0], np.int32)
    name = np.array([builder.name_id(n) for n in state["names"]] or [0], np.int32)
    cat = np.array([builder.cat_id(c) for c in state["cats"]] or [0], np.int32)
    for key in ("process_names", "process_sort", "process_labels", "thread_names", "thread_sort"):
        getattr(builder, key).update(state[key])
    builder.facts.update(state["facts"])

    base = builder.add_args_file(folder / f"r{k}_args.bin")
    # Mapped, not read: the columns are copied once, when the builder joins all ranges.
    start, dur, tracks, names, cats, off, length = (np.load(folder / f"r{k}_{i}.npy", mmap_mode="r")
                                                    for i in range(_COLUMNS))
    if start.size:
        builder.add_slices(start, dur, track[tracks], name[names], cat[cats], off + base, length)

    builder._instants.extend((t, int(track[tr]), int(name[nm])) for t, tr, nm in state["instants"])
    for key, (times, values) in state["counters"].items():
        series = builder._counters.setdefault(key, ([], []))
        series[0].extend(times)
        series[1].extend(values)
    for key, points in state["flows"].items():
        builder._flows.setdefault(key, []).extend((ph, t, int(track[tr]), enc) for ph, t, tr, enc in points)

    carried = builder.open_state
    open_b: dict[int, list[Event]] = carried.setdefault("B", {})
    open_async: dict[tuple, list[Event]] = carried.setdefault("b", {})
    local = state["open"]
    for kind, local_track, key, end in local.get("orphans", []):  # ends whose begin came earlier
        stack = open_b.get(int(track[local_track])) if kind == "E" else open_async.get(key)
        if not stack:
            continue
        begin = stack.pop()
        ts, start_ns = one_ts_ns(end.ts), one_ts_ns(begin.ts)
        label = (begin.name or end.name) if kind == "E" else begin.name
        builder.add_slice(start_ns, ts - start_ns, int(track[local_track]), label, begin.cat, bytes(begin.args) or None)
    for local_track, stack in local.get("B", {}).items():  # begins still open go on top
        open_b.setdefault(int(track[local_track]), []).extend(stack)
    for key, stack in local.get("b", {}).items():
        open_async.setdefault(key, []).extend(stack)
    if "last_ns" in local:
        carried["last_ns"] = max(carried.get("last_ns", local["last_ns"]), local["last_ns"])
    for count in ("ignored", "no_ts", "read"):
        if local.get(count):
            carried[count] = carried.get(count, 0) + local[count]
