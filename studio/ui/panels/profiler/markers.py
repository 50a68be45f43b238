"""Timeline markers (K): flags at moments worth coming back to, drawn across every track.

K drops a marker at the time under the mouse (else at the selected slice's start, else mid-window);
each marker is labelled M1, M2, … in time order with its distance from the one before, so the gap
between two events on different ranks reads directly. Right-click the ruler for the list: go to a
marker, remove one, or clear them all.
"""

from __future__ import annotations

import bisect

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QMenu

from studio.ui.panels.profiler.paint_edges import GUTTER
from studio.ui.panels.profiler.timefmt import format_duration

MARKER = QColor("#E65100")


class TimelineMarkers:
    """The markers of ``view`` (a :class:`TimelineView`); they are kept in its state
    (``state.markers``, sorted trace times in ns) so a kept view can put them back."""

    def __init__(self, view):
        self.view = view

    @property
    def markers(self) -> list[int]:
        return self.view.state.markers

    def add_marker(self, t: float) -> int:
        """Add a marker at ``t`` (ns); returns its index in time order."""
        t = int(round(t))
        if t in self.markers:
            return self.markers.index(t)
        index = bisect.bisect(self.markers, t)
        self.markers.insert(index, t)
        self.view.update()
        return index

    def time_here(self) -> float:
        """Where K puts a marker: under the mouse, else the selected slice's start, else mid-window."""
        view, state = self.view, self.view.state
        pos = view.mapFromGlobal(view.cursor().pos())
        if view.rect().contains(pos) and pos.x() >= GUTTER:
            return view.time_at(pos.x())
        if state.selected >= 0 and state.trace is not None:
            return float(state.trace.start[state.selected])
        return (state.t0 + state.t1) / 2

    def remove_marker(self, index: int) -> None:
        if 0 <= index < len(self.markers):
            del self.markers[index]
            self.view.update()

    def clear_markers(self) -> None:
        self.markers.clear()
        self.view.update()

    def go_to_marker(self, index: int) -> None:
        """Centre the window on marker ``index`` (the zoom stays)."""
        if 0 <= index < len(self.markers):
            half = (self.view.t1 - self.view.t0) / 2
            self.view.set_window(self.markers[index] - half, self.markers[index] + half)

    def marker_labels(self) -> list[str]:
        """``M1 at 1.234 ms``, ``M2 at 1.500 ms (+266 µs)``, … in time order."""
        out = []
        for i, t in enumerate(self.markers):
            gap = f" (+{format_duration(t - self.markers[i - 1])})" if i else ""
            out.append(f"M{i + 1} at {format_duration(t)}{gap}")
        return out

    def markers_menu(self) -> QMenu:
        """The ruler's right-click menu: each marker (go to / remove), clear all."""
        menu = QMenu(self.view)
        if not self.markers:
            action = menu.addAction("No markers: press K over the timeline to drop one")
            action.setEnabled(False)
            return menu
        for i, label in enumerate(self.marker_labels()):
            sub = menu.addMenu(label)
            sub.addAction("Go to", lambda i=i: self.go_to_marker(i))
            sub.addAction("Remove", lambda i=i: self.remove_marker(i))
        menu.addSeparator()
        menu.addAction("Clear markers", self.clear_markers)
        return menu

    def paint(self, painter: QPainter, ruler: int) -> None:
        """A line across the tracks and a flag in the ruler for each marker in view."""
        if not self.markers:
            return
        view = self.view
        right = view.width() - view.scroll.width()
        for i, t in enumerate(self.markers):
            if not view.t0 <= t <= view.t1:
                continue
            x = int(view.x_of(t))
            painter.setPen(QPen(MARKER, 1, Qt.PenStyle.DashLine))
            painter.drawLine(x, ruler, x, view.height())
            label = f"M{i + 1}" + (f" +{format_duration(t - self.markers[i - 1])}" if i else "")
            width = painter.fontMetrics().horizontalAdvance(label) + 6
            if x >= GUTTER and x + width <= right:
                painter.fillRect(QRect(x, 0, width, ruler - 10), MARKER)
                painter.setPen(QColor("#FFFFFF"))
                painter.drawText(QRect(x, 0, width, ruler - 10), Qt.AlignmentFlag.AlignCenter, label)
            elif x >= GUTTER:
                painter.fillRect(QRect(x - 3, 0, 6, ruler - 10), MARKER)
        painter.setPen(QPen(QColor("#000000")))

