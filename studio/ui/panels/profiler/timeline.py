"""The timeline canvas: a widget composed of small objects, each with one job.

- :class:`~.timeline_state.TimelineState`: what is shown (trace, window, rows, selection, colours);
- :class:`~.paint.TimelinePainter`: draws a frame from it (overlays, gutter and ruler in their own objects);
- :class:`~.hit_test.TimelineLookup`: what is under a point, and what a hover says about it;
- :class:`~.interaction.TimelineInput`: keys and mouse turned into calls on this view (see its
  docstring for the keys);
- :class:`~.markers.TimelineMarkers` and :class:`~.track_actions.TrackActions`: markers, pins, the track finder.

This class holds them together: it changes the state, then repaints, and emits the signals the
panel listens to. Its methods are the timeline's public API.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QScrollBar, QWidget

from studio.tools.profiler.model import Trace
from studio.ui.panels.base import forward, state_property
from studio.ui.panels.profiler.hit_test import TimelineLookup
from studio.ui.panels.profiler.interaction import TimelineInput
from studio.ui.panels.profiler.layout import Row
from studio.ui.panels.profiler.markers import TimelineMarkers
from studio.ui.panels.profiler.paint import GUTTER, RULER, TimelinePainter
from studio.ui.panels.profiler.timeline_state import TimelineState
from studio.ui.panels.profiler.track_actions import TrackActions

__all__ = ["GUTTER", "RULER", "TimelineView"]

SCROLL_STEP = 18  # px per scroll-bar step: about one row


class TimelineView(QWidget):
    """Signals: slice_selected(int, -1 for none), range_selected(int, int) in ns."""

    slice_selected = Signal(int)
    range_selected = Signal(object, object)
    area_selected = Signal(object, object, object)  # t0, t1 (ns) and the track ids a Shift+drag spanned

    trace = state_property("trace", "The trace shown, or None.")
    t0 = state_property("t0", "The window's start (trace ns).")
    t1 = state_property("t1", "The window's end (trace ns).")
    opened_window = state_property("opened_window", "The window the trace opened on, not one the user chose.")
    selected = state_property("selected", "The selected slice, −1 for none.")
    range = state_property("range", "The selected time range (ns), or None.")
    area_tracks = state_property("area_tracks", "The tracks of the selected area ([] = a range on every track).")
    highlighted = state_property("highlighted", "The outlined slices, sorted by start.")
    collapsed = state_property("collapsed", "The collapsed processes.")
    pinned = state_property("pinned", "The pinned track ids, in the order pinned.")
    markers = state_property("markers", "The marker times (ns), sorted.")
    thresholds = state_property("thresholds", "The share bands' limits (green max, red min).")
    rows = property(lambda view: view.state.layout.rows, doc="The rows laid out.")
    pinned_h = property(lambda view: view.state.layout.pinned_h, doc="The pinned band's height (px).")
    # the parts' methods under the view's own names (the panel, its actions and tests call them)
    slice_at, describe = (forward("lookup", n) for n in ("slice_at", "describe"))
    add_marker, remove_marker, clear_markers, go_to_marker, marker_labels, markers_menu = (
        forward("marks", n) for n in ("add_marker", "remove_marker", "clear_markers", "go_to_marker",
                                      "marker_labels", "markers_menu"))
    track_menu, find_track, go_to_track = (
        forward("track_actions", n) for n in ("track_menu", "find_track", "go_to_track"))

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMinimumHeight(160)
        self.state = TimelineState()
        self.last_frame_ms = 0.0
        self._after_paint: list = []  # called once the next frame is painted
        self.scroll = QScrollBar(Qt.Orientation.Vertical, self)
        self.scroll.valueChanged.connect(self.update)
        self.frame_painter = TimelinePainter(self)
        self.lookup = TimelineLookup(self)
        self.input = TimelineInput(self)
        self.marks = TimelineMarkers(self)
        self.track_actions = TrackActions(self)

    # ------------------------------------------------------------------ model
    def set_trace(self, trace: Trace | None, by_name: list | None = None, share: np.ndarray | None = None,
                  first_view: tuple[int, int] | None = None, counter_max: list[float] | None = None,
                  rows: list | None = None) -> None:
        """Show ``trace`` (fitted, or on ``first_view`` (t0, t1) ns), or nothing; ``by_name`` is its op
        statistics and ``share`` :func:`stats.share_by_name_id` when already computed (they give
        the colours; computing them here would stall the GUI on big traces), as ``counter_max``
        (each counter's largest magnitude) and ``rows`` (its layout with nothing collapsed or
        pinned, :func:`~.layout.build_rows`) may be."""
        self.state.load(trace, by_name, share, counter_max, rows)
        self.frame_painter.forget_labels()
        if trace is not None:
            self._update_scroll()
            self.fit()
            if first_view is not None:
                pad = (first_view[1] - first_view[0]) * 0.02
                self.set_window(first_view[0] - pad, first_view[1] + pad)
        self.state.opened_window = (self.t0, self.t1)
        self.update()

    def after_next_paint(self, callback) -> None:
        """Call ``callback`` (no arguments) when the next frame has been painted."""
        self._after_paint.append(callback)
        self.update()

    def set_highlighted(self, indices: np.ndarray) -> None:
        """Outline these slices (a find's matches, an op's slices)."""
        self.state.set_highlighted(indices)
        self.update()

    def set_thresholds(self, green_max: float, red_min: float) -> None:
        """Share bands: <= green_max green, >= red_min red, yellow between (fractions)."""
        self.state.set_thresholds(green_max, red_min)
        self.update()

    def set_pinned(self, tracks: list[int]) -> None:
        """Pin these tracks (ids, in this order) in the band under the ruler; [] unpins all."""
        self.state.set_pinned(tracks)
        self._update_scroll()
        self.update()

    def toggle_pinned(self, track: int) -> None:
        """Pin ``track`` (at the end of the band), or unpin it."""
        self.set_pinned([t for t in self.pinned if t != track] if track in self.pinned else [*self.pinned, track])

    def toggle_process(self, process: str) -> None:
        """Collapse or expand a process group."""
        self.state.toggle_process(process)
        self._update_scroll()
        self.update()

    # ------------------------------------------------------------------ rows on screen
    def row_top(self, row: Row) -> int:
        """The row's top in the viewport below the ruler (pinned rows do not scroll)."""
        return self.state.layout.top(row, self.scroll.value())

    def hidden_by_band(self, row: Row) -> bool:
        """A scrolling row that is (partly) under the pinned band: not drawn, not picked."""
        return self.state.layout.hidden_by_band(row, self.scroll.value())

    def row_at_y(self, y: int) -> Row | None:
        """The row at widget ``y`` (the pinned band first)."""
        return self.state.layout.at(y - RULER, self.scroll.value())

    def visible_rows(self) -> list[Row]:
        """Rows in the viewport: the scrolling ones below the pinned band, then the pinned ones."""
        return self.state.layout.visible(self.scroll.value(), self.height() - RULER)

    def scroll_to_track(self, track: int, depth: int) -> None:
        """Scroll the row of (``track``, ``depth``) into view, expanding its process if collapsed."""
        row = self.state.layout.row_of.get((track, depth))
        if row is None:
            process = self.trace.tracks[track].process
            if process in self.collapsed:
                self.toggle_process(process)
                row = self.state.layout.row_of.get((track, depth))
        if row is not None and not row.pinned:
            viewport = self.height() - RULER
            if not (self.pinned_h <= self.row_top(row) <= viewport - row.h):
                self.scroll.setValue(max(0, row.y - self.pinned_h - (viewport - self.pinned_h) // 3))

    def _update_scroll(self) -> None:
        viewport = max(0, self.height() - RULER)
        self.scroll.setRange(0, max(0, self.state.layout.content_height() - viewport))
        self.scroll.setPageStep(max(1, viewport))
        self.scroll.setSingleStep(SCROLL_STEP)

    # ------------------------------------------------------------------ the window
    @property
    def canvas_width(self) -> int:
        return max(1, self.width() - GUTTER - self.scroll.width())

    @property
    def ns_per_px(self) -> float:
        return (self.t1 - self.t0) / self.canvas_width

    def time_at(self, x: float) -> float:
        """Trace time (ns) at widget x."""
        return self.t0 + (x - GUTTER) * self.ns_per_px

    def x_of(self, t: float) -> float:
        """Widget x of trace time ``t`` (ns)."""
        return GUTTER + (t - self.t0) / self.ns_per_px

    def set_window(self, t0: float, t1: float) -> None:
        """Show [t0, t1] ns (kept at least 100 ns wide)."""
        self.state.set_window(t0, t1)
        self.update()

    def fit(self) -> None:
        """Fit the selected range or slice, else the whole trace."""
        span = self.state.fit_span()
        if span is not None:
            pad = (span[1] - span[0]) * 0.02
            self.set_window(span[0] - pad, span[1] + pad)

    def zoom(self, factor: float, at_x: float | None = None) -> None:
        """Zoom by ``factor`` (< 1 zooms in) around widget x ``at_x`` (default: the centre)."""
        at = self.time_at(at_x) if at_x is not None else (self.t0 + self.t1) / 2
        self.set_window(at - (at - self.t0) * factor, at + (self.t1 - at) * factor)

    def pan(self, fraction: float) -> None:
        """Pan by a fraction of the visible window (negative = left)."""
        shift = (self.t1 - self.t0) * fraction
        self.set_window(self.t0 + shift, self.t1 + shift)

    def select_slice(self, index: int, centre: bool = True) -> None:
        """Select slice ``index`` (−1 clears) and bring it into view."""
        self.state.selected = index
        if index >= 0 and self.trace is not None:
            start, dur = int(self.trace.start[index]), int(self.trace.dur[index])
            if centre and (start + dur < self.t0 or start > self.t1):
                width = self.t1 - self.t0
                self.set_window(start + dur / 2 - width / 2, start + dur / 2 + width / 2)
            self.scroll_to_track(int(self.trace.track[index]), int(self.trace.depth[index]))
        self.slice_selected.emit(index)
        self.update()

    # ------------------------------------------------------------------ Qt overrides
    def paintEvent(self, event) -> None:  # Qt override
        took = self.frame_painter.paint()
        if took is None:
            return  # no timeline drawn: callbacks wait for a real frame
        self.last_frame_ms = took
        waiting, self._after_paint = self._after_paint, []
        for callback in waiting:
            callback()

    def resizeEvent(self, event) -> None:  # Qt override
        self.scroll.setGeometry(self.width() - self.scroll.sizeHint().width(), RULER,
                                self.scroll.sizeHint().width(), max(0, self.height() - RULER))
        self._update_scroll()
        super().resizeEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # Qt override
        if not self.input.key(event):
            super().keyPressEvent(event)

    def wheelEvent(self, event: QWheelEvent) -> None:  # Qt override
        self.input.wheel(event)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # Qt override
        self.input.press(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # Qt override
        self.input.move(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # Qt override
        self.input.release(event)
