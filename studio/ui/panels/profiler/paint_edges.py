"""The timeline's edges: the gutter of row names on the left and the time ruler on top."""

from __future__ import annotations

import math

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter

from studio.ui.panels.profiler.layout import Row
from studio.ui.panels.profiler.timefmt import format_duration, nice_step

GUTTER = 190  # px of row names left of the tracks
RULER = 24  # px of the time ruler above them
TICK_PX = 90  # about this many px between ruler ticks


class EdgePainter:
    """Paints the gutter and ruler of ``view`` (a :class:`TimelineView`) in ``font``."""

    def __init__(self, view, font: QFont, metrics: QFontMetrics):
        self.view = view
        self.font = font
        self.metrics = metrics

    def paint_gutter(self, painter: QPainter, rows: list[Row]) -> None:
        """The names of ``rows`` (the rows on screen): process headers bold, with their state."""
        view, state = self.view, self.view.state
        painter.fillRect(QRect(0, RULER, GUTTER, view.height()), QColor("#F1F3F4"))
        painter.setPen(QColor("#BDBDBD"))
        painter.drawLine(GUTTER - 1, RULER, GUTTER - 1, view.height())
        for row in rows:
            y = RULER + view.row_top(row)
            if row.kind == "process":
                if row.pinned:
                    painter.fillRect(QRect(0, y, GUTTER - 1, row.h), QColor("#E3F2FD"))
                painter.setPen(QColor("#263238"))
                bold = QFont(self.font)
                bold.setBold(True)
                painter.setFont(bold)
                arrow = "★" if row.pinned else "▸" if row.process in state.collapsed else "▾"
                text = QFontMetrics(bold).elidedText(f"{arrow} {row.label}", Qt.TextElideMode.ElideRight, GUTTER - 10)
                painter.drawText(QRect(4, y, GUTTER - 8, row.h), Qt.AlignmentFlag.AlignVCenter, text)
                painter.setFont(self.font)
            elif row.label:
                painter.setPen(QColor("#37474F"))
                text = self.metrics.elidedText(row.label, Qt.TextElideMode.ElideRight, GUTTER - 24)
                painter.drawText(QRect(16, y, GUTTER - 20, row.h), Qt.AlignmentFlag.AlignVCenter, text)
                if row.kind == "counter":  # the scale: the bar's full height is this value
                    painter.setPen(QColor("#78909C"))
                    painter.drawText(QRect(16, y, GUTTER - 24, row.h - 2),
                                     Qt.AlignmentFlag.AlignBottom | Qt.AlignmentFlag.AlignRight,
                                     f"max {short_number(state.counter_max[row.counter])}")

    def paint_ruler(self, painter: QPainter) -> None:
        """Ticks and times across the tracks, the window's width above the gutter, the range's."""
        view, state = self.view, self.view.state
        painter.fillRect(QRect(0, 0, view.width(), RULER), QColor("#ECEFF1"))
        painter.setPen(QColor("#546E7A"))
        painter.setFont(self.font)
        step = nice_step(view.ns_per_px * TICK_PX)
        t = math.ceil(state.t0 / step) * step
        right = view.width() - view.scroll.width()
        while t <= state.t1:
            x = int(view.x_of(t))
            painter.drawLine(x, RULER - 6, x, RULER)
            label = format_duration(t, step)
            if x + 3 + self.metrics.horizontalAdvance(label) < right:
                painter.drawText(x + 3, RULER - 8, label)
            t += step
        painter.fillRect(QRect(0, 0, GUTTER, RULER), QColor("#ECEFF1"))
        painter.drawText(QRect(6, 0, GUTTER - 8, RULER), Qt.AlignmentFlag.AlignVCenter,
                         f"{format_duration(state.t1 - state.t0)} shown")
        if state.range is not None:
            label = format_duration(state.range[1] - state.range[0])
            painter.drawText(int(view.x_of(state.range[0])) + 4, RULER - 8 + 12, label)


def short_number(value: float) -> str:
    """``value`` in three significant digits with a k / M / G suffix."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"
