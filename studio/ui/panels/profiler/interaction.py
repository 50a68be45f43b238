"""The timeline's keys and mouse: zoom, pan, select, hover.

Keys: W/S zoom, A/D pan, F fit (the selection, else everything), Esc clears, ./, step along the
selected slice's row, Ctrl+P finds a track (fuzzy) to go to or pin, K drops a marker. Mouse: wheel
zooms at the cursor (Shift+wheel or wheel over the names scrolls), drag pans, Shift+drag or a drag
on the ruler selects a time range, click selects a slice, hover explains it, right-click a track's
name to pin it, right-click the ruler for the markers.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QKeyEvent, QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QToolTip

from studio.ui.panels.profiler.paint_edges import GUTTER, RULER

KEYS_HELP = ("W / S: zoom in / out    A / D: pan    F: fit selection or all    Esc: clear\n"
             ". / ,: next / previous slice on the selected slice's row\n"
             "wheel: zoom at the cursor (Shift+wheel, or over the names: scroll)\n"
             "drag: pan    Shift+drag, or drag on the ruler: select a range\n"
             "click: select a slice    click a process name: collapse / expand\n"
             "right-click a track name: pin it under the ruler    Ctrl+P: find a track\n"
             "K: drop a marker (right-click the ruler: the markers)")
CLICK_PX = 3  # a press and release closer than this is a click, not a drag


class TimelineInput:
    """Turns the key and mouse events of ``view`` (a :class:`TimelineView`) into calls on it."""

    def __init__(self, view):
        self.view = view
        self._drag: tuple[str, int, float, float] | None = None  # mode, x pressed, window then
        self._drag_y = 0

    def key(self, event: QKeyEvent) -> bool:
        """Act on a key press; False when the key is not the timeline's."""
        view, key = self.view, event.key()
        fast = 2.0 if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else 1.0
        if key == Qt.Key.Key_W:
            view.zoom(0.8 ** fast)
        elif key == Qt.Key.Key_S:
            view.zoom(1.25 ** fast)
        elif key == Qt.Key.Key_A:
            view.pan(-0.15 * fast)
        elif key == Qt.Key.Key_D:
            view.pan(0.15 * fast)
        elif key == Qt.Key.Key_F:
            view.fit()
        elif key in (Qt.Key.Key_Period, Qt.Key.Key_Comma):
            self.step_on_row(1 if key == Qt.Key.Key_Period else -1)
        elif key == Qt.Key.Key_P and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            view.find_track()
        elif key == Qt.Key.Key_K and view.trace is not None:
            view.add_marker(view.marks.time_here())
        elif key == Qt.Key.Key_Escape:
            view.range, view.area_tracks = None, []
            view.set_highlighted(np.zeros(0, np.int64))
            view.select_slice(-1)
        else:
            return False
        return True

    def step_on_row(self, step: int) -> None:
        """Select the next (1) or previous (−1) slice on the selected slice's row ('.' and ',')."""
        view, state = self.view, self.view.state
        trace = state.trace
        if trace is None or state.selected < 0:
            return
        row = state.layout.row_of.get((int(trace.track[state.selected]), int(trace.depth[state.selected])))
        if row is None:
            return
        level = trace.lod.levels[0]
        a, b = int(level.bounds[row.lod_row]), int(level.bounds[row.lod_row + 1])
        here = np.flatnonzero(np.asarray(level.rep[a:b]) == state.selected)
        if here.size and 0 <= int(here[0]) + step < b - a:
            view.select_slice(int(level.rep[a + int(here[0]) + step]))

    def wheel(self, event: QWheelEvent) -> None:
        """Zoom at the cursor; scroll over the names or with Shift."""
        view, delta = self.view, event.angleDelta().y()
        if not delta:
            return
        x = event.position().x()
        if x < GUTTER or event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            view.scroll.setValue(view.scroll.value() - delta // 2)
            return
        view.zoom(0.85 ** (delta / 120.0), at_x=x)

    def press(self, event: QMouseEvent) -> None:
        """Menus on right-click; collapse on a process name; start a pan or a range selection."""
        view, pos = self.view, event.position().toPoint()
        view.setFocus()
        if event.button() == Qt.MouseButton.RightButton and pos.y() < RULER and view.trace is not None:
            view.markers_menu().popup(event.globalPosition().toPoint())
            return
        if event.button() == Qt.MouseButton.RightButton and pos.x() < GUTTER:
            row = view.row_at_y(pos.y())
            if row is not None and row.kind == "slices":
                view.track_menu(row.track).popup(event.globalPosition().toPoint())
            return
        if event.button() != Qt.MouseButton.LeftButton:
            return
        if pos.x() < GUTTER:
            row = view.row_at_y(pos.y())
            if row is not None and row.kind == "process" and not row.pinned:
                view.toggle_process(row.process)
            return
        selecting = pos.y() < RULER or bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        self._drag = ("range" if selecting else "pan", pos.x(), view.t0, view.t1)
        self._drag_y = pos.y()  # a Shift+drag in the tracks selects an area: these rows down to the release

    def move(self, event: QMouseEvent) -> None:
        """Pan or stretch the range while dragging; explain what is under the mouse otherwise."""
        view, pos = self.view, event.position().toPoint()
        if self._drag is not None:
            mode, x_start, t0, t1 = self._drag
            if mode == "pan":
                shift = (x_start - pos.x()) * (t1 - t0) / view.canvas_width
                view.set_window(t0 + shift, t1 + shift)
            else:
                a, b = sorted((view.time_at(x_start), view.time_at(pos.x())))
                view.range = (int(a), int(b))
                view.update()
            return
        self._hover(pos, event.globalPosition().toPoint())

    def release(self, event: QMouseEvent) -> None:
        """End a drag: a range (or area) is selected, or a click selects the slice under it."""
        view = self.view
        if self._drag is None:
            return
        mode, x_start, _, _ = self._drag
        self._drag = None
        pos = event.position().toPoint()
        moved = abs(pos.x() - x_start) > CLICK_PX
        if mode == "range" and moved and view.range is not None:
            view.area_tracks = view.lookup.tracks_between(self._drag_y, pos.y()) if self._drag_y >= RULER else []
            view.range_selected.emit(view.range[0], view.range[1])
            if view.area_tracks:
                view.area_selected.emit(view.range[0], view.range[1], list(view.area_tracks))
        elif not moved:
            view.range = None if mode == "range" else view.range
            view.area_tracks = [] if mode == "range" else view.area_tracks
            view.select_slice(view.slice_at(pos), centre=False)

    def _hover(self, pos: QPoint, global_pos: QPoint) -> None:
        view = self.view
        if pos.x() < GUTTER and pos.y() < RULER:
            QToolTip.showText(global_pos, KEYS_HELP, view)
            return
        if pos.x() < GUTTER and pos.y() >= RULER:
            row = view.row_at_y(pos.y())
            if row is not None and (row.label or row.kind == "process"):
                label = row.label if row.kind != "process" else f"{row.label} (click to collapse or expand)"
                if row.pinned and row.kind == "process":
                    label = f"{row.label}: right-click a track's name to unpin it"
                if row.kind == "slices" and row.track >= 0:
                    label = view.trace.track_label(row.track) + "\n(right-click: pin or unpin; Ctrl+P: find a track)"
                QToolTip.showText(global_pos, label, view)
                return
        if pos.x() >= GUTTER and pos.y() >= RULER:
            row = view.row_at_y(pos.y())
            if row is not None and row.kind == "counter":
                value = view.lookup.counter_value(row, view.time_at(pos.x()))
                if value is not None:
                    source = view.trace.counters[row.counter].source
                    QToolTip.showText(global_pos, f"{row.label}: {value:,.3f}\n{row.process}"
                                      + (f"\nread from {source}" if source else ""), view)
                    return
        index = view.slice_at(pos)
        if index >= 0:
            QToolTip.showText(global_pos, view.describe(index), view)
        else:
            QToolTip.hideText()
