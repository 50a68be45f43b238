"""What the Profiler's views show of a trace that costs time in proportion to its events.

The per-op and per-API statistics, each name's share (the timeline's colours), where the timeline
opens, each counter's scale and the trace's span take from milliseconds to seconds over millions of
slices, most of it holding the interpreter lock. Computed in the window's process, even on a job
thread, they stalled its GUI thread (41-175 ms measured during a 200 MB read on a busy machine). So
the worker process that decodes a big trace computes them beside each snapshot it writes and beside
the whole trace (:func:`save` into the snapshot's folder), and the window's process only maps them
(:func:`load`) and swaps them in. Small traces, cached ones and the first stretch compute them where
they are read (:func:`compute`).
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass, field, fields
from pathlib import Path

import msgspec
import numpy as np

from studio.tools.profiler import stats
from studio.tools.profiler.model import Trace
from studio.tools.profiler.stats import NameStat

FILE = "view-stats.json"
SHARE_FILE = "view-share.npy"


@dataclass
class ViewStats:
    """The views' figures of one trace (see the module docstring); ``where`` says which process and
    thread computed them (``pid:thread``), for the notes and tests that check the work left the window."""

    by_name: list[NameStat]
    counted: str
    apis: list[dict]
    first_view: tuple[int, int] | None
    first_view_note: str
    counter_max: list[float]
    span_ns: int
    where: str = ""
    share: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per name id: written beside, as .npy

    def apply(self, trace: Trace) -> None:
        """Give ``trace`` its span as computed (the window asks for it first; over millions of slices
        it is tens of ms)."""
        trace.__dict__["span_ns"] = self.span_ns  # functools.cached_property's own slot


def compute(trace: Trace) -> ViewStats:
    """:class:`ViewStats` of ``trace``, computed here."""
    (by_name, counted), apis = stats.op_rows(trace), stats.api_rows(trace)  # warm-ups left out
    first, note = first_view(trace)
    return ViewStats(by_name, counted, apis, first, note, counter_peaks(trace), int(trace.span_ns),
                     f"{os.getpid()}:{threading.current_thread().name}", stats.share_by_name_id(trace, by_name))


def first_view(trace: Trace) -> tuple[tuple[int, int] | None, str]:
    """Where the timeline opens: the first measured iteration when the profile marks two or more
    (a whole session spans warm-ups, set-up and idle time, and each op is a pixel there), else
    everything; and a note saying which."""
    from studio.tools.profiler.measured import iterations

    its = iterations(trace)
    if its.windows is None or len(its.windows) < 2:
        return None, ""
    a, b = (int(v) for v in its.windows[0])
    return (a, b), f"showing iteration 1 of {len(its.windows)} ({its.how}; F: the whole profile)"


def counter_peaks(trace: Trace) -> list[float]:
    """Each counter's largest magnitude (its lane's scale): thousands of counters over 16 ranks
    take tens of ms, so the job computes them rather than the window (and the trace's span, which
    the window asks for first and which takes 60 ms over 7M slices, and the flows' end points)."""
    _ = trace.span_ns, trace.flow_times, trace.flow_index  # computed once, here
    return [float(np.nanmax(np.abs(c.values))) if c.values.size else 1.0 for c in trace.counters]


def save(view: ViewStats, folder: Path) -> None:
    """Write ``view`` into ``folder`` (the share array first: the JSON's presence marks it whole)."""
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / SHARE_FILE, np.asarray(view.share, dtype=np.float64))
    data = {key: getattr(view, key) for key in _PLAIN}
    # Columns, not a record per name: read back in a few ms over ten thousand names (a record
    # per name through a generic reader held the interpreter for 170 ms).
    data["by_name"] = {key: [getattr(s, key) for s in view.by_name] for key in _STAT_FIELDS}
    (folder / FILE).write_bytes(msgspec.json.encode(data))


def load(folder: Path) -> ViewStats | None:
    """The :class:`ViewStats` :func:`save` wrote into ``folder``, or None when there are none (yet)."""
    try:
        data = msgspec.json.decode((folder / FILE).read_bytes())
        share = np.load(folder / SHARE_FILE)
    except (OSError, ValueError, msgspec.DecodeError):
        return None
    columns = {key: _nan(col) for key, col in data.pop("by_name").items()}
    data["counter_max"] = _nan(data["counter_max"])
    by_name = [NameStat(*row) for row in zip(*(columns[key] for key in _STAT_FIELDS))]
    first = data.pop("first_view")
    return ViewStats(by_name=by_name, first_view=tuple(first) if first is not None else None, share=share, **data)


def _nan(column: list) -> list:
    """``column`` with the NaNs JSON wrote as null back (a lane or a name with no finite figure)."""
    return [math.nan if v is None else v for v in column] if None in column else column


_STAT_FIELDS = tuple(f.name for f in fields(NameStat))
_PLAIN = ("counted", "apis", "first_view", "first_view_note", "counter_max", "span_ns", "where")
