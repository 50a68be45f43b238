"""What the timeline shows (no Qt): the trace, the time window, the rows (collapsed processes,
pinned tracks), the selection, the outlined slices and each slice name's colour.

The view changes it through these methods and repaints; the painter, the hit tester and the
input handler read it.
"""

from __future__ import annotations

import numpy as np

from studio.tools.profiler import stats
from studio.tools.profiler.model import Trace
from studio.ui.panels.profiler.layout import build_rows
from studio.ui.panels.profiler.row_index import RowIndex

# share bands: green, yellow, red (grey for wrappers); three shades each so neighbouring slices stay apart
BANDS = [(0xFF81C784, 0xFF66BB6A, 0xFFA5D6A7), (0xFFFFE082, 0xFFFFD54F, 0xFFFFECB3),
         (0xFFE57373, 0xFFEF5350, 0xFFEF9A9A),
         (0xFFBDBDBD, 0xFFB0B0B0, 0xFFCFCFCF)]  # grey: the run's own wrapper slices (not ops)
MIN_WINDOW_NS = 100


class TimelineState:
    """The timeline's model: times are trace ns, tracks are ids, slices are indices."""

    def __init__(self):
        self.trace: Trace | None = None
        self.layout = RowIndex()
        self.collapsed: set[str] = set()
        self.pinned: list[int] = []  # track ids, in the order pinned
        self.markers: list[int] = []  # marker times (ns), sorted
        self.thresholds = (0.05, 0.10)
        self.t0, self.t1 = 0.0, 1.0
        self.opened_window: tuple[float, float] | None = None  # set when a trace is shown
        self.selected = -1
        self.range: tuple[int, int] | None = None
        self.area_tracks: list[int] = []  # the tracks of the selected area ([] = a time range on every track)
        self.highlighted = np.zeros(0, np.int64)
        self.hl_start = np.zeros(0, np.int64)  # the highlighted slices' starts, sorted (they are in this order)
        self.hl_longest = 0
        self.default_rows: list | None = None  # the trace's rows when nothing is collapsed or pinned
        self.colours = np.zeros(0, np.uint32)  # by name id
        self.share = np.zeros(0)
        self.counter_max: list[float] = []

    def load(self, trace: Trace | None, by_name: list | None = None, share: np.ndarray | None = None,
             counter_max: list[float] | None = None, rows: list | None = None) -> None:
        """Show ``trace`` (see :meth:`TimelineView.set_trace` for the optional precomputed parts);
        the selection is cleared, pins and markers only when the trace is another one."""
        if trace is not self.trace:
            self.pinned, self.markers = [], []  # track ids and times mean nothing in another trace
        self.trace = trace
        self.default_rows = rows
        self.selected, self.range, self.area_tracks = -1, None, []
        self.set_highlighted(np.zeros(0, np.int64))
        if trace is not None:
            self.share = share if share is not None else stats.share_by_name_id(trace, by_name)
            self.counter_max = counter_max if counter_max is not None else [
                float(np.nanmax(np.abs(c.values))) if c.values.size else 1.0 for c in trace.counters]
            self.recolour()
            self.relayout()

    def set_highlighted(self, indices: np.ndarray) -> None:
        """Outline these slices; kept sorted by start so a frame looks at its window's part only."""
        indices = np.asarray(indices, dtype=np.int64)
        if self.trace is None or not indices.size:
            self.highlighted, self.hl_start, self.hl_longest = np.zeros(0, np.int64), np.zeros(0, np.int64), 0
        else:
            starts = np.asarray(self.trace.start)[indices]
            order = np.argsort(starts, kind="stable")
            self.highlighted, self.hl_start = indices[order], starts[order]
            self.hl_longest = int(np.asarray(self.trace.dur)[indices].max())

    def set_thresholds(self, green_max: float, red_min: float) -> None:
        """Share bands: <= green_max green, >= red_min red, yellow between (fractions)."""
        self.thresholds = (green_max, red_min)
        self.recolour()

    def recolour(self) -> None:
        """Each name's colour from its share of op time and the thresholds."""
        if self.trace is None:
            return
        share = self.share
        with np.errstate(invalid="ignore"):
            band = np.where(share >= self.thresholds[1], 2, np.where(share > self.thresholds[0], 1, 0))
        band = np.where(np.isnan(share), 3, band)  # the run's wrappers are not ops: grey
        shade = np.arange(share.size) % 3
        palette = np.array(BANDS, dtype=np.uint32)
        self.colours = palette[band, shade]

    def relayout(self) -> None:
        """Lay the rows out again (after a collapse or a pin)."""
        if self.trace is None:
            rows = []
        elif self.default_rows is not None and not self.pinned and not self.collapsed:
            rows = self.default_rows  # laid out by the job that opened the trace
        else:
            rows = build_rows(self.trace, self.collapsed, self.pinned)
        self.layout = RowIndex(rows)

    def set_pinned(self, tracks: list[int]) -> None:
        """Pin these tracks (ids, in this order) in the band under the ruler; [] unpins all."""
        self.pinned = list(dict.fromkeys(int(t) for t in tracks))
        self.relayout()

    def toggle_process(self, process: str) -> None:
        """Collapse or expand a process group."""
        self.collapsed.symmetric_difference_update({process})
        self.relayout()

    def set_window(self, t0: float, t1: float) -> None:
        """Show [t0, t1] ns (kept at least MIN_WINDOW_NS wide, around the same middle)."""
        if t1 - t0 < MIN_WINDOW_NS:
            mid = (t0 + t1) / 2
            t0, t1 = mid - MIN_WINDOW_NS / 2, mid + MIN_WINDOW_NS / 2
        self.t0, self.t1 = float(t0), float(t1)

    def fit_span(self) -> tuple[int, int] | None:
        """What F fits: the selected range, else the selected slice (at least 1 µs), else the
        whole trace; None with no trace."""
        if self.trace is None:
            return None
        if self.range is not None:
            return self.range
        if self.selected >= 0:
            a = int(self.trace.start[self.selected])
            return a, a + max(int(self.trace.dur[self.selected]), 1000)
        return 0, max(self.trace.span_ns, 1000)
