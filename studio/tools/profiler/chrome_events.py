"""Chrome trace events into a :class:`~studio.tools.profiler.builder.TraceBuilder`.

The complete (``X``) events — the bulk of any real trace — go to numpy columns without a
per-event Python branch; the rare other phases (B/E, i/I, C, M, s/t/f, b/e/n) take a small
per-event loop whose state (open B/E and async stacks) lives in the builder across chunks.
``ts`` may be a number or a string of microseconds (msprof writes ``"1736408883694795.840"``,
converted exactly to ns). The single-process reader (:mod:`.chrome_reader`) and each forked
range decoder (:mod:`.chrome_parallel`) call the same functions, so both decode alike.
"""

from __future__ import annotations

import itertools
import json
from operator import itemgetter
from pathlib import Path

import msgspec
import numpy as np

from studio.core.errors import UserError
from studio.tools.profiler.builder import TraceBuilder
from studio.tools.profiler.chrome_decode import Event


def ts_to_ns(values: list[float | str]) -> np.ndarray:
    """Microsecond timestamps (numbers or decimal strings) to int64 nanoseconds, strings exactly."""
    if set(map(type, values)) == {float}:
        return np.rint(np.array(values, dtype=np.float64) * 1000.0).astype(np.int64)
    return np.array([one_ts_ns(v) or 0 for v in values], dtype=np.int64)


def one_ts_ns(value: float | str | None) -> int | None:
    """One timestamp in ns; None when missing or not a number (the event is then skipped)."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return round(value * 1000.0) if value == value and abs(value) < 1e300 else None
    text = str(value).strip()
    whole, _, frac = text.partition(".")
    try:
        if whole.lstrip("-").isdigit() and (not frac or frac.isdigit()):
            ns = abs(int(whole)) * 1000 + int((frac + "000")[:3] or 0)
            return -ns if whole.startswith("-") else ns
        number = float(text)
        return round(number * 1000.0) if number == number and abs(number) < 1e300 else None
    except ValueError:
        return None


def add_chunk(builder: TraceBuilder, events: list[Event], note: str, path: Path, cancel) -> None:
    """Add one decoded chunk of the file (``iter_event_chunks``): the cancel token checked first, a
    cut or malformed file's ``note`` kept as the trace's warning, then its events."""
    if cancel:
        cancel.raise_if_cancelled()
    if note:
        builder.facts["warning"] = note
    add_events(builder, events, path)


def add_events(builder: TraceBuilder, events: list[Event], path: Path) -> None:
    """Add decoded events to ``builder``: X events in bulk, the other phases one by one.

    The events are turned into columns in one pass (``astuple`` per event, transposed by ``zip`` in
    C); the columns are then read as tuples, not through attribute getters per field.
    """
    if not events:
        return
    columns = list(zip(*map(_astuple, events)))
    phases = columns[_F_PH]
    if phases.count("X") == len(phases):  # the usual chunk: all complete events (a C-speed count)
        _add_complete(builder, columns)
        return
    others = [i for i, ph in enumerate(phases) if ph != "X"]
    if len(others) < len(phases):
        other_set = set(others)
        keep = [i for i in range(len(phases)) if i not in other_set]
        pick = itemgetter(*keep) if len(keep) > 1 else (lambda column: (column[keep[0]],))
        _add_complete(builder, [pick(column) for column in columns])
    _add_others(builder, [events[i] for i in others])


_astuple = msgspec.structs.astuple
# Positions of the fields in ``astuple(event)`` (the order of Event's fields).
_F_PH, _F_NAME, _F_CAT, _F_PID, _F_TID, _F_TS, _F_DUR, _F_ARGS = (
    Event.__struct_fields__.index(f) for f in ("ph", "name", "cat", "pid", "tid", "ts", "dur", "args"))


def _add_complete(builder: TraceBuilder, columns: list[tuple]) -> None:
    """X events given as columns (tuples of field values, in Event's field order)."""
    stamps = columns[_F_TS]
    if set(map(type, stamps)) == {float}:  # the usual case, at numpy speed
        start = np.rint(np.array(stamps, dtype=np.float64) * 1000.0).astype(np.int64)
    else:  # strings (exact), or events without a usable ts (skipped)
        ns = [one_ts_ns(v) for v in stamps]
        if None in ns:
            keep = [i for i, v in enumerate(ns) if v is not None]
            state = builder.open_state
            state["no_ts"] = state.get("no_ts", 0) + len(stamps) - len(keep)
            if not keep:
                return
            columns = [[column[i] for i in keep] for column in columns]
            ns = [ns[i] for i in keep]
        start = np.array(ns, dtype=np.int64)
    n = len(columns[_F_TS])
    builder.open_state["read"] = builder.open_state.get("read", 0) + n
    track = _track_ids(builder, columns[_F_PID], columns[_F_TID])
    name_ids = _interned(columns[_F_NAME], builder._names, builder.name_id, n)
    cat_ids = _interned(columns[_F_CAT], builder._cats, builder.cat_id, n)
    durs = columns[_F_DUR]
    if set(map(type, durs)) == {float}:
        dur = np.rint(np.array(durs, dtype=np.float64) * 1000.0).astype(np.int64)
    else:  # strings (exact), or X events without dur (0)
        dur = np.array([one_ts_ns(d) or 0 for d in durs], dtype=np.int64)
    raws = columns[_F_ARGS]
    lengths = np.fromiter(map(len, raws), np.int64, n)
    base = builder.add_args_blob(b"".join(raws))
    offsets = base + np.cumsum(lengths) - lengths
    builder.add_slices(start, dur, track, name_ids, cat_ids, offsets, lengths.astype(np.int32))


def _interned(values: tuple, known: dict[str, int], intern, n: int) -> np.ndarray:
    """Builder ids of ``values`` (names or categories). The ids of names seen before are looked up
    in C (``map(dict.get)``); only new names go through ``intern``, once each. A trace with ~10k
    distinct op names per chunk spent a quarter of its decode in a Python call per name and chunk."""
    ids = np.fromiter(map(known.get, values, itertools.repeat(-1)), np.int32, n)
    if n and ids.min() < 0:
        for i in np.flatnonzero(ids < 0):
            ids[i] = intern(values[i])  # the first of a new name interns it; its repeats find it
    return ids


def _track_ids(builder: TraceBuilder, pids: tuple, tids: tuple) -> np.ndarray:
    """Builder track id of every event. Integer pids/tids (the common case) go through numpy;
    names as pids/tids through a dict of pairs."""
    n = len(pids)
    try:
        # Only plain ints take the numpy path: numpy would truncate a float id (1.5 -> 1, merging
        # two tracks) and cannot hold an int beyond int64 (OverflowError).
        if not {type(v) for v in pids} | {type(v) for v in tids} <= {int}:
            raise TypeError("ids that are not all integers")
        pid = np.fromiter(pids, np.int64, n)
        tid = np.fromiter(tids, np.int64, n)
    except (TypeError, ValueError, OverflowError):
        pairs: dict[tuple, int] = {}
        local = np.fromiter(map(pairs.setdefault, zip(pids, tids), itertools.count()), np.int64, n)
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
    # A range decoded apart from the rest of the file keeps the ends whose begin came before it.
    orphans: list | None = builder.open_state.get("orphans")
    ignored = no_ts = read = 0
    for e in events:
        ph = e.ph
        if ph == "M":
            _metadata(builder, e)
            read += 1
            continue
        ts = one_ts_ns(e.ts)
        if ts is None:
            no_ts += 1
            continue
        builder.open_state["last_ns"] = max(builder.open_state.get("last_ns", ts), ts)
        read += 1
        if ph == "B":
            open_b.setdefault(builder.track_id(e.pid, e.tid), []).append(e)
        elif ph == "E":
            track = builder.track_id(e.pid, e.tid)
            stack = open_b.get(track)
            if stack:
                begin = stack.pop()
                start = one_ts_ns(begin.ts)
                builder.add_slice(start, ts - start, track, begin.name or e.name, begin.cat, bytes(begin.args) or None)
            elif orphans is not None:
                orphans.append(("E", track, None, e))
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
                start = one_ts_ns(begin.ts)
                builder.add_slice(start, ts - start, lane, begin.name, begin.cat, bytes(begin.args) or None)
            elif ph == "e" and orphans is not None:
                orphans.append(("e", lane, key, e))
            elif ph == "n":
                builder.add_instant(ts, lane, e.name)
        else:
            ignored += 1
            read -= 1
    state = builder.open_state
    for key, count in (("ignored", ignored), ("no_ts", no_ts), ("read", read)):
        if count:
            state[key] = state.get(key, 0) + count


def finish_events(builder: TraceBuilder, path: Path | None = None) -> None:
    """After the last chunk: a B without its E runs to the end of the trace; note what was skipped.

    Events but none Studio could read (no phase it knows, no timestamp) mean the file is not a
    trace at all: that is an error, not an empty timeline.
    """
    state = builder.open_state
    skipped = state.get("ignored", 0) + state.get("no_ts", 0)
    if path is not None and skipped and not state.get("read"):
        state.clear()
        raise UserError(f"No trace events found: none of the {skipped:,} events has a phase (ph) Studio draws "
                        "and a timestamp (ts)", path,
                        "Open a Chrome trace (events like {\"ph\": \"X\", \"ts\": 12.5, \"dur\": 3, ...}).")
    if state.get("no_ts"):
        builder.facts["events without a timestamp"] = f"{state.pop('no_ts')} events had no valid ts and were skipped"
    unclosed = 0
    for track, stack in state.pop("B", {}).items():
        for begin in stack:
            start = one_ts_ns(begin.ts)
            builder.add_slice(start, max(0, state.get("last_ns", start) - start), track, begin.name, begin.cat,
                              bytes(begin.args) or None)
            unclosed += 1
    if unclosed:
        builder.facts["unclosed slices"] = f"{unclosed} B events without E (drawn to the end of the trace)"
    if state.get("ignored"):
        builder.facts["ignored events"] = f"{state.pop('ignored')} events of phases Studio does not draw"
    state.clear()


def _args_object(e: Event) -> dict | None:
    """The event's ``args`` as a dict (None when they are not a JSON object: the event is skipped)."""
    try:
        args = json.loads(bytes(e.args)) if len(e.args) else {}
    except ValueError:
        return None
    return args if isinstance(args, dict) else None


def _metadata(builder: TraceBuilder, e: Event) -> None:
    args = _args_object(e)
    if args is None:
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
    args = _args_object(e)
    if args is None:
        return
    base = e.name if e.id is None else f"{e.name}[{e.id}]"
    # An identifier among the values (msprof's Acc PMU: {"value": .., "acc_id": 1}) names a series
    # of its own; added up as a value it would interleave every accelerator into one line.
    ids = {k: v for k, v in args.items() if _is_id(k) and isinstance(v, (int, str))}
    if ids:
        base += "".join(f" {k} {v}" for k, v in ids.items())
    for key, value in args.items():
        if key in ids:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            label = base if key in ("value", "") or len(args) == 1 and key == e.name else f"{base} ({key})"
            builder.add_counter(e.pid, label, ts, float(value))


def _is_id(key: str) -> bool:
    """A counter argument that says which unit the sample is of (``acc_id``, ``id``), not a value."""
    key = key.lower()
    return key == "id" or key.endswith("_id")
