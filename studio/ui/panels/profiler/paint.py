"""How the timeline draws a frame: the slices and counters of the rows on screen, then labels,
overlays (``paint_overlays.py``), the gutter and ruler (``paint_edges.py``) and the markers.

Each frame asks the trace's LOD for the items of every visible row (about one per pixel column,
the longest kept), paints them into a numpy RGB buffer in a few vectorised operations, and blits
that buffer once; only labels wide enough to read (cached QStaticText), the ruler, the gutter, flow
arrows, instants and outlines go through QPainter.
"""

from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter, QStaticText, QTransform

from studio.tools.profiler import lod as lodlib
from studio.ui.panels.profiler.layout import Row
from studio.ui.panels.profiler.paint_edges import GUTTER, RULER, EdgePainter
from studio.ui.panels.profiler.paint_overlays import OverlayPainter

__all__ = ["BACKGROUND", "GUTTER", "RULER", "TimelinePainter"]

BACKGROUND = 0xFFFAFAFA
COUNTER_COLOUR = 0xFFBBDEFB
COUNTER_LINE = 0xFF1565C0
MIN_LABEL_PX = 36
EMPTY_TRACE = "This profile has no timeline events, only summary tables: see the Statistics tab."
NO_TRACE = ("No profile shown. Open a trace JSON, an ONNX Runtime profile, a PROF_* or "
            "ASCEND_PROFILER_OUTPUT folder (File > Open), or run `studio profile run MODEL -o DIR`.")


class TimelinePainter:
    """Paints ``view`` (a :class:`TimelineView`) from its state; owns the font and label cache."""

    def __init__(self, view):
        self.view = view
        self.font = QFont(view.font())
        self.font.setPointSizeF(max(7.0, self.font.pointSizeF() - 1))
        self.metrics = QFontMetrics(self.font)
        self.overlays = OverlayPainter(view)
        self.edges = EdgePainter(view, self.font, self.metrics)
        self._label_cache: dict[tuple[int, int], QStaticText] = {}
        self._image = None

    def forget_labels(self) -> None:
        """Drop the laid-out labels (another trace's names)."""
        self._label_cache.clear()

    def paint(self) -> float | None:
        """Paint one frame onto the view; returns how long it took (ms), None when there was
        no timeline to paint (only a line saying why)."""
        began = time.perf_counter()
        view, state = self.view, self.view.state
        painter = QPainter(view)
        painter.fillRect(view.rect(), QColor(BACKGROUND))
        if state.trace is None or not state.layout.rows:
            painter.setPen(QColor("#666"))
            painter.drawText(view.rect().adjusted(12, 12, -12, -12),
                             Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap,
                             EMPTY_TRACE if state.trace is not None else NO_TRACE)
            painter.end()
            return None
        rows = view.visible_rows()
        labels = self._paint_rows(painter, rows)
        painter.setFont(self.font)
        self._paint_labels(painter, labels)
        self.overlays.paint(painter, rows)
        self.edges.paint_gutter(painter, rows)
        self.edges.paint_ruler(painter)
        view.marks.paint(painter, RULER)
        painter.end()
        return (time.perf_counter() - began) * 1000

    def _paint_rows(self, painter: QPainter, rows: list[Row]) -> list[tuple[int, int, int, int, int]]:
        view, state = self.view, self.view.state
        width, height = view.canvas_width, max(1, view.height() - RULER)
        t0, ns_per_px, scroll = state.t0, view.ns_per_px, view.scroll.value()
        layout = state.layout
        image = np.full((height, width), BACKGROUND, dtype=np.uint32)
        level = state.trace.lod.level_for(ns_per_px)
        names, colours_by_name = np.asarray(state.trace.name), state.colours
        labels = []
        for row in rows:
            y0 = layout.top(row, scroll)
            if row.kind == "process":
                image[max(0, y0):max(0, y0 + row.h)] = 0xFFE3F2FD if row.pinned else 0xFFECEFF1
                continue
            if row.kind == "counter":
                self._paint_counter(image, row, y0)
                continue
            start, end, rep, _ = lodlib.visible(level, row.lod_row, t0, state.t1, ns_per_px)
            if not start.size:
                continue
            x0 = np.clip(np.floor((start - t0) / ns_per_px), 0, width).astype(np.int64)
            x1 = np.clip(np.ceil((end - t0) / ns_per_px), 0, width).astype(np.int64)
            x1 = np.maximum(x1, np.minimum(x0 + 1, width))
            colours = colours_by_name[names[rep]]
            line = np.full(width, BACKGROUND, dtype=np.uint32)
            _fill_spans(line, x0, x1, colours)
            wide = (x1 - x0) >= 3  # a darker first column separates neighbours
            line[x0[wide]] = (colours[wide] & 0xFF000000) | ((colours[wide] & 0x00FEFEFE) >> 1) + 0x00202020
            a, b = max(0, y0 + 1), min(height, y0 + row.h - 1)
            if b > a:
                image[a:b] = line
            taken = -1  # merged items may overlap in pixels: never draw a label over another
            for i in np.flatnonzero((x1 - x0) >= MIN_LABEL_PX)[:200].tolist():
                a = max(int(x0[i]), taken)
                if int(x1[i]) - a >= MIN_LABEL_PX:
                    labels.append((a, int(x1[i]), y0, row.h, int(rep[i])))
                    taken = int(x1[i])
        if layout.pinned_h and layout.pinned_h < height:
            image[layout.pinned_h - 1] = 0xFF90A4AE  # the band's lower edge: what is below scrolls
        self._image = image  # QImage borrows the buffer until drawImage returns
        qimage = QImage(image.data, width, height, width * 4, QImage.Format.Format_RGB32)
        painter.drawImage(GUTTER, RULER, qimage)
        return labels

    def _paint_counter(self, image: np.ndarray, row: Row, y0: int) -> None:
        state = self.view.state
        counter = state.trace.counters[row.counter]
        if not counter.times.size:
            return
        width = image.shape[1]
        columns = state.t0 + (np.arange(width) + 0.5) * self.view.ns_per_px
        index = np.searchsorted(counter.times, columns, side="right") - 1
        valid = index >= 0
        values = np.where(valid, counter.values[np.clip(index, 0, None)], 0.0)
        top = max(state.counter_max[row.counter], 1e-12)
        heights = np.clip(np.nan_to_num(values) / top * (row.h - 6), 0, row.h - 6).astype(np.int64)
        heights[~valid] = 0
        ys = np.arange(row.h)[:, None]
        mask = ys >= (row.h - 2 - heights)[None, :]
        mask[row.h - 2:] = False
        # the line on top of the fill: at each column's value, joined to the previous column's
        tops = row.h - 2 - heights
        upper = np.minimum(tops, np.r_[tops[:1], tops[:-1]])
        line = (ys >= upper[None, :]) & (ys <= tops[None, :]) & valid[None, :]
        a, b = max(0, y0), min(image.shape[0], y0 + row.h)
        if b > a:
            band = image[a:b]
            band[mask[a - y0:b - y0]] = COUNTER_COLOUR
            band[line[a - y0:b - y0]] = COUNTER_LINE

    def _paint_labels(self, painter: QPainter, labels: list) -> None:
        # Cached QStaticText: laid out once per (name, width bucket), then only blitted (measured
        # ~7x cheaper than elidedText + drawText per label per frame).
        painter.setPen(QColor("#1b1b1b"))
        trace = self.view.state.trace
        names = trace.name
        text_h = self.metrics.height()
        for x0, x1, y0, h, rep in labels:
            name_id = int(names[rep])
            avail = x1 - x0 - 6
            key = (name_id, avail // 8)
            static = self._label_cache.get(key)
            if static is None:
                text = self.metrics.elidedText(trace.names[name_id], Qt.TextElideMode.ElideRight, (avail // 8) * 8)
                static = QStaticText(text)
                static.setTextFormat(Qt.TextFormat.PlainText)
                static.prepare(QTransform(), self.font)
                if len(self._label_cache) > 20000:
                    self._label_cache.clear()
                self._label_cache[key] = static
            if static.text():
                painter.drawStaticText(QPoint(GUTTER + x0 + 3, RULER + y0 + (h - text_h) // 2), static)


def _fill_spans(line: np.ndarray, x0: np.ndarray, x1: np.ndarray, colours: np.ndarray) -> None:
    """line[x0[i]:x1[i]] = colours[i] for all i, vectorised (later spans win on overlap)."""
    lengths = x1 - x0
    keep = lengths > 0
    x0, lengths, colours = x0[keep], lengths[keep], colours[keep]
    if not x0.size:
        return
    total = int(lengths.sum())
    if total > 2 * line.size:  # overlapping spans: paint the widest first so narrow ones stay visible
        order = np.argsort(-lengths, kind="stable")
        x0, lengths, colours = x0[order], lengths[order], colours[order]
    starts = np.repeat(x0 - np.cumsum(lengths) + lengths, lengths)
    positions = starts + np.arange(int(lengths.sum()))
    line[positions] = np.repeat(colours, lengths)
