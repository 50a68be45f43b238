"""What the timeline draws over the slices: outlined matches and selection, flow arrows,
instants, and the selected range or area."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRect
from PySide6.QtGui import QColor, QPainter, QPen

from studio.ui.panels.profiler.layout import Row
from studio.ui.panels.profiler.paint_edges import GUTTER, RULER

MAX_OUTLINED = 2000  # highlighted slices outlined per frame
MAX_FLOWS = 400  # flow arrows per frame
MAX_INSTANTS = 2000


class OverlayPainter:
    """Paints the overlays of ``view`` (a :class:`TimelineView`) from its state."""

    def __init__(self, view):
        self.view = view

    def paint(self, painter: QPainter, rows: list[Row]) -> None:
        """Every overlay, clipped to the tracks' area; ``rows`` are the rows on screen."""
        view, state = self.view, self.view.state
        painter.setClipRect(GUTTER, RULER, view.canvas_width, view.height() - RULER)
        trace = state.trace
        if state.highlighted.size:
            # sorted by start: only the window's part is looked at, however many slices match
            lo = int(np.searchsorted(state.hl_start, state.t0 - state.hl_longest, side="left"))
            hi = int(np.searchsorted(state.hl_start, state.t1, side="right"))
            idx = state.highlighted[lo:hi]
            ends = state.hl_start[lo:hi] + np.asarray(trace.dur)[idx]
            idx = idx[ends >= state.t0][:MAX_OUTLINED]
            painter.setPen(QPen(QColor("#1565C0"), 2))
            for i in idx.tolist():
                self._outline(painter, i)
        if state.selected >= 0:
            painter.setPen(QPen(QColor("#000000"), 2))
            self._outline(painter, state.selected)
        self.paint_flows(painter)
        self._paint_instants(painter)
        if state.range is not None:
            self._paint_range(painter, rows)
        painter.setClipping(False)

    def _paint_range(self, painter: QPainter, rows: list[Row]) -> None:
        view, state = self.view, self.view.state
        xa, xb = view.x_of(state.range[0]), view.x_of(state.range[1])
        painter.fillRect(QRect(int(xa), RULER, max(1, int(xb - xa)), view.height()), QColor(33, 150, 243, 40))
        painter.setPen(QPen(QColor("#1976D2"), 1))
        painter.drawLine(int(xa), RULER, int(xa), view.height())
        painter.drawLine(int(xb), RULER, int(xb), view.height())
        painter.setPen(QPen(QColor("#0D47A1"), 2))
        for row in rows:  # the rows of an area: outlined inside the range
            if row.kind == "slices" and row.track in state.area_tracks:
                painter.drawRect(QRect(int(xa), RULER + view.row_top(row), max(1, int(xb - xa)), row.h))

    def _outline(self, painter: QPainter, index: int) -> None:
        view, trace = self.view, self.view.state.trace
        row = view.state.layout.row_of.get((int(trace.track[index]), int(trace.depth[index])))
        if row is None:
            return
        xa = view.x_of(int(trace.start[index]))
        xb = max(xa + 2, view.x_of(int(trace.start[index]) + int(trace.dur[index])))
        if view.hidden_by_band(row):
            return
        painter.drawRect(QRect(int(xa), RULER + view.row_top(row) + 1, int(xb - xa), row.h - 2))

    def paint_flows(self, painter: QPainter) -> None:
        """Arrows of the first MAX_FLOWS flows that reach the window, between rows on screen."""
        view, state = self.view, self.view.state
        trace = state.trace
        if not trace.flow_src.size:
            return
        src_t, dst_t = trace.flow_times
        order, lo, longest = trace.flow_index  # flows by their earlier end: bisect the window
        first, last = np.searchsorted(lo, state.t0 - longest), np.searchsorted(lo, state.t1, side="right")
        found, block = [], 1024
        while first < last and sum(part.size for part in found) < MAX_FLOWS:
            candidates = order[first:min(last, first + block)]
            found.append(candidates[np.maximum(src_t[candidates], dst_t[candidates]) >= state.t0])
            first, block = first + block, block * 4
        shown = np.concatenate(found)[:MAX_FLOWS] if found else np.zeros(0, np.int64)
        if not shown.size:
            return
        src, dst = np.asarray(trace.flow_src)[shown], np.asarray(trace.flow_dst)[shown]
        ya, visible_a = self._flow_end_y(src)
        yb, visible_b = self._flow_end_y(dst)
        keep = visible_a & visible_b
        scale = 1.0 / view.ns_per_px
        xa = (GUTTER + (src_t[shown][keep] - state.t0) * scale).astype(np.int64).tolist()
        xb = (GUTTER + (dst_t[shown][keep] - state.t0) * scale).astype(np.int64).tolist()
        painter.setPen(QPen(QColor(55, 71, 79, 170), 1))
        for x1, y1, x2, y2 in zip(xa, ya[keep].tolist(), xb, yb[keep].tolist()):
            painter.drawLine(x1, y1, x2, y2)
            painter.drawLine(x2, y2, x2 - 5, y2 + (-3 if y2 >= y1 else 3))

    def _flow_end_y(self, slices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For flow end points (slice indices): the widget y of their row's middle, and whether
        that row is laid out and not hidden under the pinned band."""
        view, trace = self.view, self.view.state.trace
        track, depth = np.asarray(trace.track)[slices], np.asarray(trace.depth)[slices]
        middle, shown = view.state.layout.middles(track, depth, view.scroll.value())
        return RULER + middle, shown

    def _paint_instants(self, painter: QPainter) -> None:
        view, state = self.view, self.view.state
        trace = state.trace
        if not trace.instant_time.size:
            return
        shown = np.flatnonzero((trace.instant_time >= state.t0) & (trace.instant_time <= state.t1))[:MAX_INSTANTS]
        painter.setPen(QPen(QColor("#6A1B9A"), 2))
        for k in shown.tolist():
            row = state.layout.row_of.get((int(trace.instant_track[k]), 0))
            if row is not None and not view.hidden_by_band(row):
                x = int(view.x_of(int(trace.instant_time[k])))
                y = RULER + view.row_top(row)
                painter.drawLine(x, y, x, y + row.h)
