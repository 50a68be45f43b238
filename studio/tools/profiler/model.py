"""The columnar trace model every reader produces and every view reads.

A :class:`Trace` keeps its events as numpy columns, not objects, so a million slices cost a few
tens of megabytes and every query (visible range, per-name totals, range selection) is a numpy
operation. Times are ``int64`` nanoseconds relative to the trace start: msprof writes absolute
microsecond timestamps (~1.7e15) that float64 cannot hold to the nanosecond.

Slices are sorted by (track, start, longest first) and carry their nesting ``depth``; a *row* is
one (track, depth) pair. For drawing, :mod:`studio.tools.profiler.lod` adds per-row levels of
detail. Slice arguments stay raw JSON bytes in one blob and are decoded only when asked.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from studio.tools.profiler.args_blob import ArgsUnavailable


@dataclass
class Track:
    """One timeline row group: a thread, a stream, or an async lane, inside a process."""

    id: int
    process: str
    name: str
    pid: int | str = 0
    tid: int | str = 0
    process_sort: float = 0.0
    sort: float = 0.0
    labels: str = ""


@dataclass
class Counter:
    """One counter series (``ph: C``): times in ns relative to trace start, values as floats."""

    process: str
    name: str
    times: np.ndarray
    values: np.ndarray
    pid: int | str = 0
    process_sort: float = 0.0
    source: str = ""  # where the samples were read (file, and table for a database)


@dataclass
class Table:
    """A summary table from a CSV (op_summary, op_statistic, api_statistic, ...), normalised."""

    kind: str
    columns: list[str]
    rows: list[list[Any]]
    source: str = ""

    def column(self, name: str) -> list[Any]:
        """The values of one column (raises KeyError if absent)."""
        index = self.columns.index(name)
        return [row[index] for row in self.rows]


@dataclass
class Trace:
    """A whole profile: slices, instants, counters, flows, summary tables and facts.

    Slice columns (all the same length, sorted by track, start, then longest first):
        start, dur (int64 ns), track (int32), depth (int16), name (int32 into ``names``),
        cat (int32 into ``cats``), args_off/args_len (int64/int32 into ``args_blob``; len 0 = none).
    """

    start: np.ndarray
    dur: np.ndarray
    track: np.ndarray
    depth: np.ndarray
    name: np.ndarray
    cat: np.ndarray
    args_off: np.ndarray
    args_len: np.ndarray
    args_blob: bytes
    names: list[str]
    cats: list[str]
    tracks: list[Track]
    counters: list[Counter] = field(default_factory=list)
    instant_time: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    instant_track: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    instant_name: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    flow_src: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    flow_dst: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tables: dict[str, Table] = field(default_factory=dict)
    facts: dict[str, str] = field(default_factory=dict)
    origin_ns: int = 0
    source: str = ""
    model_path: str | None = None
    lod: Any = None  # studio.tools.profiler.lod.Lod, attached by the loader

    @property
    def size(self) -> int:
        """Number of slices."""
        return int(self.start.shape[0])

    @property
    def end(self) -> np.ndarray:
        """Slice end times (ns)."""
        return self.start + self.dur

    @functools.cached_property
    def flow_times(self) -> tuple[np.ndarray, np.ndarray]:
        """Each flow's (source slice's end, destination slice's start) in ns (computed once: over
        millions of flows the gather takes tens of ms, too long for every paint)."""
        start, dur = np.asarray(self.start), np.asarray(self.dur)
        return start[self.flow_src] + dur[self.flow_src], start[self.flow_dst]

    @functools.cached_property
    def flow_index(self) -> tuple[np.ndarray, np.ndarray, int]:
        """The flows ordered by their earlier end: (order, that end's time in this order, the
        longest flow's length), so a window's flows are found by bisection, not by a scan of
        every flow on each frame."""
        src_t, dst_t = self.flow_times
        lo = np.minimum(src_t, dst_t)
        order = np.argsort(lo, kind="stable")
        longest = int((np.maximum(src_t, dst_t) - lo).max()) if lo.size else 0
        return order, lo[order], longest

    @functools.cached_property
    def span_ns(self) -> int:
        """From the first event to the last end, over slices, instants and counters (computed once)."""
        lo, hi = [], []
        if self.size:
            lo.append(int(self.start.min()))
            hi.append(int((self.start + self.dur).max()))
        if self.instant_time.size:
            lo.append(int(self.instant_time.min()))
            hi.append(int(self.instant_time.max()))
        for counter in self.counters:
            if counter.times.size:
                lo.append(int(counter.times[0]))
                hi.append(int(counter.times[-1]))
        if not lo:
            return 0
        return max(hi) - min(0, min(lo))

    def slice_name(self, index: int) -> str:
        """The full name of slice ``index``."""
        return self.names[int(self.name[index])]

    def slice_args(self, index: int) -> dict[str, Any]:
        """The decoded ``args`` of slice ``index`` (empty dict when it has none or they are bad)."""
        length = int(self.args_len[index])
        if not length:
            return {}
        offset = int(self.args_off[index])
        try:
            value = json.loads(self.args_blob[offset:offset + length])
        except ValueError:
            return {}
        except ArgsUnavailable as exc:  # the trace file they are read from changed since
            return {"not shown": str(exc)}  # the details list it as "args.not shown"
        return value if isinstance(value, dict) else {"value": value}

    def name_ids(self, text: str) -> np.ndarray:
        """Ids of the names equal to ``text``."""
        return np.array([i for i, name in enumerate(self.names) if name == text], dtype=np.int32)

    def slices_named(self, text: str) -> np.ndarray:
        """Indices of the slices whose name is exactly ``text``, in time order per track."""
        ids = self.name_ids(text)
        if not ids.size:
            return np.zeros(0, np.int64)
        return np.flatnonzero(np.isin(self.name, ids))

    @property
    def warnings(self) -> list[str]:
        """What the reader found suspicious in the data (facts whose key starts with ``warning``)."""
        return [value for key, value in self.facts.items() if key.startswith(WARNING)]

    def track_label(self, track_id: int) -> str:
        """``process / thread`` for messages and tooltips."""
        track = self.tracks[track_id]
        return f"{track.process} / {track.name}" if track.name else track.process


WARNING = "warning"


def add_warning(facts: dict[str, str], text: str) -> None:
    """Record a warning among a trace's facts (kept there so the cache and every view carry it)."""
    n = sum(1 for key in facts if key.startswith(WARNING))
    facts[WARNING if n == 0 else f"{WARNING} {n + 1}"] = text


def source_label(path: Path) -> str:
    """How a source path is shown (its name, with the parent for generic names)."""
    if path.name in ("trace_view.json", "ASCEND_PROFILER_OUTPUT", "mindstudio_profiler_output"):
        return f"{path.parent.name}/{path.name}"
    return path.name
