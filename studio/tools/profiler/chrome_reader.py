"""Chrome Trace Event Format reader (chrome://tracing, msprof timelines, PyTorch trace_view.json).

Fast path: one typed ``msgspec`` decode that keeps only the fields a timeline needs and leaves
``args`` as raw bytes (measured ~4x faster than dicts on 1M events), then the complete (``X``)
events — the bulk of any real trace — go to numpy columns without a per-event Python branch.
The rare other phases (B/E, i/I, C, M, s/t/f, b/e/n) take a small per-event loop.

Accepted: an object with ``traceEvents`` or a bare array; an array cut off mid-way (the partial
last event is dropped, as catapult and Perfetto do); ``ts`` as a number or a string of
microseconds (msprof writes ``"1736408883694795.840"``, converted exactly to nanoseconds).
"""

from __future__ import annotations

import gc
import itertools
import json
import mmap
import re
from collections.abc import Generator, Iterator
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from studio.errors import UserError
from studio.jobs import CancelToken, Progress
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.model import Trace


class Event(msgspec.Struct, gc=False):
    """The fields of one trace event that Studio reads; everything else is skipped by the decoder."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float | str = 0.0
    dur: float | str | None = None
    id: int | str | None = None
    bp: str = ""
    s: str = ""
    args: msgspec.Raw = msgspec.Raw(b"")


class Document(msgspec.Struct):
    """The object form: ``{"traceEvents": [...], "displayTimeUnit": "ms", ...}``."""

    traceEvents: list[Event] = []  # noqa: N815 - the format's own key  # noqa: RUF012
    displayTimeUnit: str = ""  # noqa: N815


def read_chrome_trace(path: Path, cancel: CancelToken | None = None,
                      builder: TraceBuilder | None = None, *, build: bool = True
                      ) -> Generator[Progress, None, Trace | TraceBuilder]:
    """Read a Chrome trace JSON file into a Trace (or into ``builder`` when ``build`` is False,
    so msprof slices can be merged into one trace).

    A bare array is decoded in chunks of about ``CHUNK_BYTES`` cut between top-level events, so
    decoded objects never pile up (memory stays near the file size plus the columns), progress is
    real, and cancel works between chunks.
    """
    path = Path(path)
    yield Progress(None, f"reading {path.name}")
    try:
        data = _map_or_read(path)
    except OSError as exc:
        raise UserError(f"Cannot read trace: {exc.strerror}", path, "Check the file exists and is readable.") from exc
    builder = builder if builder is not None else TraceBuilder()
    gc_was_enabled = gc.isenabled()
    gc.disable()  # millions of small objects: the collector would rescan them for nothing
    try:
        for done, events, note in iter_event_chunks(data, path):
            if cancel:
                cancel.raise_if_cancelled()
            if note:
                builder.facts["warning"] = note
            add_events(builder, events, path)
            del events
            yield Progress(0.8 * done / max(1, len(data)), f"decoding {path.name} ({done / 1e6:.0f} of {len(data) / 1e6:.0f} MB)")
        finish_events(builder)
    finally:
        if gc_was_enabled:
            gc.enable()
    if isinstance(data, mmap.mmap):
        data.close()
    del data
    if not build:
        return builder
    yield Progress(0.85, "sorting and nesting slices")
    return builder.build(source=str(path))


CHUNK_BYTES = 16 << 20
_EVENT_END = re.compile(rb"\}\s*,")


def _map_or_read(path: Path) -> bytes | mmap.mmap:
    """Big files are memory-mapped (pages read once and let go as chunks are done); small read."""
    size = path.stat().st_size
    if size <= CHUNK_BYTES:
        return path.read_bytes()
    with path.open("rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


def _release(data: bytes | mmap.mmap, end: int) -> None:
    """Drop the mapped pages before ``end`` from this process (they stay in the page cache)."""
    if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        end -= end % mmap.PAGESIZE
        if end > 0:
            data.madvise(mmap.MADV_DONTNEED, 0, end)


def iter_event_chunks(data: bytes | mmap.mmap, path: Path) -> Iterator[tuple[int, list[Event], str]]:
    """Yield (bytes consumed, events, repair note) chunk by chunk; an object is one chunk."""
    head = bytes(data[:4096])
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    offset = len(head) - len(stripped)
    if not stripped or stripped[:1] != b"[" or len(data) - offset <= CHUNK_BYTES:
        events, note = decode_events(bytes(data) if isinstance(data, mmap.mmap) else data, path)
        yield len(data), events, note
        return
    pos = offset + 1
    while pos < len(data):
        target = pos + CHUNK_BYTES
        if target >= len(data):
            events, note = decode_events(b"[" + data[pos:], path)
            yield len(data), events, note
            return
        # Cut after an event at the top level: a cut inside args (or a string) leaves the chunk
        # unbalanced, the decode fails, and the next candidate is tried.
        search = target
        while True:
            match = _EVENT_END.search(data, search)
            if match is None:
                events, note = decode_events(b"[" + data[pos:], path)
                yield len(data), events, note
                return
            cut = match.start() + 1
            try:
                events = _unwrap(msgspec.json.decode(b"[" + data[pos:cut] + b"]", type=list[Event]))
            except msgspec.ValidationError:
                events = _decode_loose(b"[" + data[pos:cut] + b"]", path)
            except msgspec.DecodeError:
                search = match.end()
                continue
            break
        yield cut, events, ""
        pos = match.end()
        _release(data, pos)


def decode_events(data: bytes, path: Path) -> tuple[list[Event], str]:
    """Decode the events; returns them and a note when the file had to be repaired."""
    stripped = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped:
        raise UserError("Trace file is empty", path, "Record the trace again; the writer may have crashed.")
    if stripped[:1] not in (b"[", b"{"):
        raise UserError(f"Not a Chrome trace: it starts with {stripped[:20]!r}", path,
                        "Open a JSON trace (an array of events or an object with traceEvents).")
    is_array = stripped[:1] == b"["
    kind = list[Event] if is_array else Document
    try:
        return _unwrap(msgspec.json.decode(stripped, type=kind)), ""
    except msgspec.ValidationError:
        return _decode_loose(stripped, path), ""
    except msgspec.DecodeError as exc:
        if "truncated" not in str(exc) and not _looks_cut(stripped):
            raise UserError(f"Trace JSON is malformed: {exc}", path,
                            "The file is not valid JSON; produce it again or check the copy is complete.") from exc
        repaired = _repair_truncated(stripped, kind)
        if repaired is None:
            raise UserError("Trace is truncated and no complete event could be recovered", path,
                            "Record the trace again; the writer stopped before any event was written.") from exc
        events, dropped_at = repaired
        return events, f"the file was truncated at byte {dropped_at:,}; the events before it were read"


def _unwrap(decoded: Any) -> list[Event]:
    return decoded.traceEvents if isinstance(decoded, Document) else decoded


def _looks_cut(data: bytes) -> bool:
    tail = data.rstrip()
    return not tail.endswith((b"]", b"}"))


def _repair_truncated(data: bytes, kind: Any) -> tuple[list[Event], int] | None:
    """Cut after the last complete event and close the array (and object), like catapult does."""
    closer = b"]" if kind is not Document else b"]}"
    pos = len(data)
    for _ in range(64):  # each try backs up to the previous '}' (nested args end in '}' too)
        pos = data.rfind(b"}", 0, pos)
        if pos < 0:
            return None
        candidate = data[:pos + 1] + closer
        try:
            return _unwrap(msgspec.json.decode(candidate, type=kind)), pos + 1
        except msgspec.ValidationError:
            try:
                return _decode_loose(candidate, Path("")), pos + 1
            except UserError:
                return None
        except msgspec.DecodeError:
            continue
    return None


def _decode_loose(data: bytes, path: Path) -> list[Event]:
    """Slow path for traces whose fields have unexpected types (numeric names, float pids...)."""
    try:
        decoded = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise UserError(f"Trace JSON is malformed: {exc}", path, "Produce the trace again.") from exc
    items = decoded.get("traceEvents", []) if isinstance(decoded, dict) else decoded
    if not isinstance(items, list):
        raise UserError("Trace has no event list", path, "A trace is an array of events or {\"traceEvents\": [...]}.")
    events = []
    for item in items:
        if not isinstance(item, dict):
            continue
        args = item.get("args")
        ts = item.get("ts", 0)
        dur = item.get("dur")
        events.append(Event(
            ph=str(item.get("ph", "")), name=str(item.get("name", "")), cat=str(item.get("cat", "") or ""),
            pid=_id_value(item.get("pid", 0)), tid=_id_value(item.get("tid", 0)),
            ts=float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else (ts if isinstance(ts, str) else 0.0),
            dur=float(dur) if isinstance(dur, (int, float)) and not isinstance(dur, bool) else (dur if isinstance(dur, str) else None),
            id=_id_value(item["id"]) if "id" in item else None, bp=str(item.get("bp", "")),
            s=str(item.get("s", "")), args=msgspec.Raw(json.dumps(args).encode() if args is not None else b""),
        ))
    return events


def _id_value(value: Any) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return str(value)


def ts_to_ns(values: list[float | str]) -> np.ndarray:
    """Microsecond timestamps (numbers or decimal strings) to int64 nanoseconds, strings exactly."""
    if set(map(type, values)) == {float}:
        return np.rint(np.array(values, dtype=np.float64) * 1000.0).astype(np.int64)
    return np.array([_one_ts_ns(v) for v in values], dtype=np.int64)


def _one_ts_ns(value: float | str) -> int:
    if isinstance(value, (int, float)):
        return round(value * 1000.0)
    text = str(value).strip()
    whole, _, frac = text.partition(".")
    try:
        if whole.lstrip("-").isdigit() and (not frac or frac.isdigit()):
            ns = abs(int(whole)) * 1000 + int((frac + "000")[:3] or 0)
            return -ns if whole.startswith("-") else ns
        return round(float(text) * 1000.0)
    except ValueError:
        return 0


def add_events(builder: TraceBuilder, events: list[Event], path: Path) -> None:
    """Add decoded events to ``builder``: X events in bulk, the other phases one by one."""
    phases = list(map(_PH, events))
    others = [i for i, ph in enumerate(phases) if ph != "X"]
    if not others:
        _add_complete(builder, events)
        return
    other_set = set(others)
    xs = [e for i, e in enumerate(events) if i not in other_set]
    if xs:
        _add_complete(builder, xs)
    _add_others(builder, [events[i] for i in others])


_PH, _PID, _TID, _NAME, _CAT, _TS, _DUR, _ARGS = (attrgetter(a) for a in ("ph", "pid", "tid", "name", "cat", "ts", "dur", "args"))


def _add_complete(builder: TraceBuilder, xs: list[Event]) -> None:
    n = len(xs)
    track = _track_ids(builder, xs)
    names: dict[str, int] = {}
    local_names = np.fromiter(map(names.setdefault, map(_NAME, xs), itertools.count()), np.int32, n)
    name_remap = np.zeros(max(names.values()) + 1 if names else 0, dtype=np.int32)
    for key, value in names.items():
        name_remap[value] = builder.name_id(key)
    cats: dict[str, int] = {}
    local_cats = np.fromiter(map(cats.setdefault, map(_CAT, xs), itertools.count()), np.int32, n)
    cat_remap = np.zeros(max(cats.values()) + 1 if cats else 0, dtype=np.int32)
    for key, value in cats.items():
        cat_remap[value] = builder.cat_id(key)
    start = ts_to_ns(list(map(_TS, xs)))
    durs = list(map(_DUR, xs))
    if set(map(type, durs)) == {float}:
        dur = np.rint(np.array(durs, dtype=np.float64) * 1000.0).astype(np.int64)
    else:  # strings (exact), or X events without dur (0)
        dur = np.array([_one_ts_ns(d) if d is not None else 0 for d in durs], dtype=np.int64)
    raws = list(map(_ARGS, xs))
    lengths = np.fromiter(map(len, raws), np.int64, n)
    base = builder.add_args_blob(b"".join(raws))
    offsets = base + np.cumsum(lengths) - lengths
    builder.add_slices(start, dur, track, name_remap[local_names], cat_remap[local_cats],
                       offsets, lengths.astype(np.int32))


def _track_ids(builder: TraceBuilder, xs: list[Event]) -> np.ndarray:
    """Builder track id of every event. Integer pids/tids (the common case) go through numpy;
    names as pids/tids through a dict of pairs."""
    n = len(xs)
    try:
        pid = np.fromiter(map(_PID, xs), np.int64, n)
        tid = np.fromiter(map(_TID, xs), np.int64, n)
    except (TypeError, ValueError):
        pairs: dict[tuple, int] = {}
        local = np.fromiter(map(pairs.setdefault, zip(map(_PID, xs), map(_TID, xs)), itertools.count()), np.int64, n)
        remap = np.zeros(int(local.max()) + 1 if n else 0, dtype=np.int32)
        for key, value in pairs.items():
            remap[value] = builder.track_id(*key)
        return remap[local]
    pids, pid_of = np.unique(pid, return_inverse=True)
    tids, tid_of = np.unique(tid, return_inverse=True)
    pairs_of = pid_of.astype(np.int64) * len(tids) + tid_of
    pairs, pair_of = np.unique(pairs_of, return_inverse=True)
    remap = np.array([builder.track_id(int(pids[p // len(tids)]), int(tids[p % len(tids)])) for p in pairs],
                     dtype=np.int32)
    return remap[pair_of]


def _add_others(builder: TraceBuilder, events: list[Event]) -> None:
    open_b: dict[int, list[Event]] = builder.open_state.setdefault("B", {})
    open_async: dict[tuple, list[Event]] = builder.open_state.setdefault("b", {})
    ignored = 0
    for e in events:
        ph = e.ph
        ts = _one_ts_ns(e.ts)
        builder.open_state["last_ns"] = max(builder.open_state.get("last_ns", ts), ts)
        if ph == "M":
            _metadata(builder, e)
        elif ph == "B":
            open_b.setdefault(builder.track_id(e.pid, e.tid), []).append(e)
        elif ph == "E":
            track = builder.track_id(e.pid, e.tid)
            stack = open_b.get(track)
            if stack:
                begin = stack.pop()
                start = _one_ts_ns(begin.ts)
                builder.add_slice(start, ts - start, track, begin.name or e.name, begin.cat, bytes(begin.args) or None)
        elif ph in ("i", "I", "R"):
            builder.add_instant(ts, builder.track_id(e.pid, e.tid), e.name)
        elif ph == "C":
            _counter(builder, e, ts)
        elif ph in ("s", "t", "f"):
            track = builder.track_id(e.pid, e.tid)
            builder.add_flow_point((e.cat, e.id), ph, ts, track, ph != "f" or e.bp == "e")
        elif ph in ("b", "e", "n"):
            lane = builder.track_id(e.pid, e.cat or e.name, kind="async")
            key = (e.cat, e.id, e.name)
            if ph == "b":
                open_async.setdefault(key, []).append(e)
            elif ph == "e" and open_async.get(key):
                begin = open_async[key].pop()
                start = _one_ts_ns(begin.ts)
                builder.add_slice(start, ts - start, lane, begin.name, begin.cat, bytes(begin.args) or None)
            elif ph == "n":
                builder.add_instant(ts, lane, e.name)
        else:
            ignored += 1
    if ignored:
        builder.open_state["ignored"] = builder.open_state.get("ignored", 0) + ignored


def finish_events(builder: TraceBuilder) -> None:
    """After the last chunk: a B without its E runs to the end of the trace; note what was skipped."""
    state = builder.open_state
    unclosed = 0
    for track, stack in state.pop("B", {}).items():
        for begin in stack:
            start = _one_ts_ns(begin.ts)
            builder.add_slice(start, max(0, state.get("last_ns", start) - start), track, begin.name, begin.cat,
                              bytes(begin.args) or None)
            unclosed += 1
    if unclosed:
        builder.facts["unclosed slices"] = f"{unclosed} B events without E (drawn to the end of the trace)"
    if state.get("ignored"):
        builder.facts["ignored events"] = f"{state.pop('ignored')} events of phases Studio does not draw"
    state.clear()


def _metadata(builder: TraceBuilder, e: Event) -> None:
    try:
        args = json.loads(bytes(e.args)) if len(e.args) else {}
    except ValueError:
        return
    if not isinstance(args, dict):
        return
    if e.name == "process_name" and "name" in args:
        builder.process_names[e.pid] = str(args["name"])
    elif e.name == "thread_name" and "name" in args:
        builder.thread_names[(e.pid, e.tid)] = str(args["name"])
    elif e.name == "process_sort_index" and isinstance(args.get("sort_index"), (int, float)):
        builder.process_sort[e.pid] = float(args["sort_index"])
    elif e.name == "thread_sort_index" and isinstance(args.get("sort_index"), (int, float)):
        builder.thread_sort[(e.pid, e.tid)] = float(args["sort_index"])
    elif e.name == "process_labels" and "labels" in args:
        builder.process_labels[e.pid] = str(args["labels"])


def _counter(builder: TraceBuilder, e: Event, ts: int) -> None:
    try:
        args = json.loads(bytes(e.args)) if len(e.args) else {}
    except ValueError:
        return
    if not isinstance(args, dict):
        return
    base = e.name if e.id is None else f"{e.name}[{e.id}]"
    for key, value in args.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            label = base if key in ("value", "") or len(args) == 1 and key == e.name else f"{base} ({key})"
            builder.add_counter(e.pid, label, ts, float(value))
