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

import json
from collections.abc import Generator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from studio.errors import UserError
from studio.jobs import CancelToken, Progress
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.model import Trace


class Event(msgspec.Struct):
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

    traceEvents: list[Event] = []  # noqa: N815 - the format's own key
    displayTimeUnit: str = ""  # noqa: N815


def read_chrome_trace(path: Path, cancel: CancelToken | None = None,
                      builder: TraceBuilder | None = None, *, build: bool = True
                      ) -> Generator[Progress, None, Trace | TraceBuilder]:
    """Read a Chrome trace JSON file into a Trace (or into ``builder`` when ``build`` is False,
    so msprof slices can be merged into one trace)."""
    path = Path(path)
    yield Progress(None, f"reading {path.name}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"Cannot read trace: {exc.strerror}", path, "Check the file exists and is readable.") from exc
    if cancel:
        cancel.raise_if_cancelled()
    yield Progress(0.1, f"decoding {path.name} ({len(data) / 1e6:.0f} MB)")
    events, note = decode_events(data, path)
    if cancel:
        cancel.raise_if_cancelled()
    data = None  # the events hold what they need; let the text go before building columns
    builder = builder if builder is not None else TraceBuilder()
    if note:
        builder.facts["warning"] = note
    yield Progress(0.6, f"indexing {len(events):,} events")
    add_events(builder, events, path)
    events = None
    if cancel:
        cancel.raise_if_cancelled()
    if not build:
        return builder
    yield Progress(0.85, "sorting and nesting slices")
    return builder.build(source=str(path))


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
    if all(type(v) is float for v in values):
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
    phases = np.array([e.ph for e in events], dtype="U1") if events else np.zeros(0, "U1")
    complete = np.flatnonzero(phases == "X")
    if complete.size:
        _add_complete(builder, [events[i] for i in complete])
    others = np.flatnonzero(phases != "X")
    if others.size:
        _add_others(builder, [events[i] for i in others])


def _add_complete(builder: TraceBuilder, xs: list[Event]) -> None:
    tracks: dict[tuple, int] = {}
    track = np.fromiter((tracks.setdefault((e.pid, e.tid), len(tracks)) for e in xs), np.int32, len(xs))
    # Local track numbers -> builder track ids (few distinct pairs, so this loop is short).
    remap = np.array([builder.track_id(p, t) for (p, t) in tracks], dtype=np.int32)
    names: dict[str, int] = {}
    local_names = np.fromiter((names.setdefault(e.name, len(names)) for e in xs), np.int32, len(xs))
    name_remap = np.array([builder.name_id(n) for n in names], dtype=np.int32)
    cats: dict[str, int] = {}
    local_cats = np.fromiter((cats.setdefault(e.cat, len(cats)) for e in xs), np.int32, len(xs))
    cat_remap = np.array([builder.cat_id(c) for c in cats], dtype=np.int32)
    start = ts_to_ns([e.ts for e in xs])
    durs = [e.dur for e in xs]
    if all(type(d) is float for d in durs):
        dur = np.rint(np.array(durs, dtype=np.float64) * 1000.0).astype(np.int64)
    else:
        dur = np.array([_one_ts_ns(d) if d is not None else 0 for d in durs], dtype=np.int64)
    raws = [e.args for e in xs]
    lengths = np.fromiter((len(r) for r in raws), np.int64, len(raws))
    base = builder.add_args_blob(b"".join(raws))
    offsets = base + np.cumsum(lengths) - lengths
    builder.add_slices(start, dur, remap[track], name_remap[local_names], cat_remap[local_cats],
                       offsets, lengths.astype(np.int32))


def _add_others(builder: TraceBuilder, events: list[Event]) -> None:
    open_b: dict[int, list[Event]] = {}
    open_async: dict[tuple, list[Event]] = {}
    ignored = 0
    last_ns = 0
    for e in events:
        ph = e.ph
        ts = _one_ts_ns(e.ts)
        last_ns = max(last_ns, ts)
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
    unclosed = 0
    for track, stack in open_b.items():  # a B without its E runs to the end of the trace
        for begin in stack:
            start = _one_ts_ns(begin.ts)
            builder.add_slice(start, max(0, last_ns - start), track, begin.name, begin.cat, bytes(begin.args) or None)
            unclosed += 1
    if unclosed:
        builder.facts["unclosed slices"] = f"{unclosed} B events without E (drawn to the end of the trace)"
    if ignored:
        builder.facts["ignored events"] = f"{ignored} events of phases Studio does not draw"


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
