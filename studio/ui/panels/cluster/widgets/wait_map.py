"""The collectives heat map: one row per communication group, one column per rank, a cell per rank's
total in that group (synchronisation ms by default: how long the rank waited in the group's
collectives for the others). A rank that never waits in a group where the others do is the one
they wait for; the map shows it as the pale cell of a dark row. Few cells (groups × ranks), so
they are painted directly; clicking one selects that group and rank."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QToolTip, QWidget

from studio.ui.panels.cluster.widgets.heatmap import colour
from studio.ui.panels.cluster.widgets.parts import paint_with

EMPTY = ("No collective times for these ranks: torch_npu writes them in communication.json / analysis.db "
         "(Level1 or higher); msprof PROF_ folders and msprof-analyze's output carry none per rank.")
LABEL_WIDTH, TOP = 230, 30


class WaitMap(QWidget):
    """Signals: cell_clicked(str, int) — (group id, rank) of a clicked cell."""

    cell_clicked = Signal(str, int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.groups: list[tuple[str, str]] = []        # (group id, label)
        self.ranks: list[int] = []
        self.values: dict[tuple[str, int], dict] = {}  # (group id, rank) -> its total row
        self.key, self.unit = "sync_ms", "ms"
        self.peak = 0.0
        self.selected: tuple[str, int] | None = None
        self.setMouseTracking(True)
        self.setMinimumSize(300, 140)

    def set_data(self, groups: list[tuple[str, str]], ranks: list[int], values: dict, key: str, unit: str) -> None:
        """Show ``values[(group, rank)][key]`` for each group (rows) and rank (columns)."""
        self.groups, self.ranks, self.values, self.key, self.unit = groups, ranks, values, key, unit
        self.peak = max((v[key] for v in values.values()), default=0.0)
        self.update()

    def sizeHint(self) -> QSize:  # Qt override
        return QSize(640, 300)

    def _grid(self) -> tuple[float, float]:
        width = max(20.0, (self.width() - LABEL_WIDTH - 8) / max(1, len(self.ranks)))
        height = min(30.0, max(12.0, (self.height() - TOP - 8) / max(1, len(self.groups))))
        return width, height

    def cell_at(self, pos: QPointF) -> tuple[str, int] | None:
        width, height = self._grid()
        col, row = int((pos.x() - LABEL_WIDTH) // width), int((pos.y() - TOP) // height)
        if pos.x() < LABEL_WIDTH or pos.y() < TOP or not (0 <= row < len(self.groups) and 0 <= col < len(self.ranks)):
            return None
        key = (self.groups[row][0], self.ranks[col])
        return key if key in self.values else None

    def paintEvent(self, event) -> None:  # Qt override
        paint_with(self, self._paint)

    def _paint(self, painter: QPainter) -> None:
        text = self.palette().text().color()
        if not self.values:
            painter.setPen(text)
            painter.drawText(self.rect().adjusted(12, 12, -12, -12),
                             Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap, EMPTY)
            return
        width, height = self._grid()
        metrics = QFontMetrics(painter.font())
        painter.setPen(text)
        painter.drawText(QRectF(0, 0, LABEL_WIDTH, TOP - 4), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom,
                         "group ↓  rank →")
        for col, rank in enumerate(self.ranks):
            painter.drawText(QRectF(LABEL_WIDTH + col * width, 0, width, TOP - 4),
                             Qt.AlignmentFlag.AlignCenter | Qt.AlignmentFlag.AlignBottom, str(rank))
        for row, (group, label) in enumerate(self.groups):
            y = TOP + row * height
            painter.setPen(text)
            painter.drawText(QRectF(0, y, LABEL_WIDTH - 6, height), Qt.AlignmentFlag.AlignRight
                             | Qt.AlignmentFlag.AlignVCenter, metrics.elidedText(label, Qt.TextElideMode.ElideMiddle,
                                                                                 LABEL_WIDTH - 8))
            for col, rank in enumerate(self.ranks):
                value = self.values.get((group, rank))
                if value is None:
                    continue
                rect = QRectF(LABEL_WIDTH + col * width + 1, y + 1, width - 2, height - 2)
                fraction = value[self.key] / self.peak if self.peak > 0 else 0.0
                painter.fillRect(rect, colour(fraction))
                if self.selected == (group, rank):
                    painter.setPen(QPen(self.palette().highlight().color(), 2))
                    painter.drawRect(rect)
                if width >= metrics.horizontalAdvance("0000.00") and height >= metrics.height():
                    painter.setPen(Qt.GlobalColor.white if fraction > 0.5 else Qt.GlobalColor.black)
                    painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, _short(value[self.key]))

    def event(self, event) -> bool:  # Qt override
        if event.type() == event.Type.ToolTip:
            cell = self.cell_at(QPointF(event.pos()))
            if cell is None:
                QToolTip.hideText()
            else:
                QToolTip.showText(event.globalPos(), cell_tooltip(self.values[cell]), self)
            return True
        return super().event(event)

    def mousePressEvent(self, event) -> None:  # Qt override
        cell = self.cell_at(event.position())
        if cell is not None:
            self.selected = cell
            self.update()
            self.cell_clicked.emit(*cell)


def cell_tooltip(total: dict) -> str:
    """What a cell stands for: the rank's sums over the group's ops in the step."""
    return (f"rank {total['rank']}, {total['ops']} op(s), step {total['step']}\n"
            f"elapse {total['elapse_ms']:,.3f} ms = transit {total['transit_ms']:,.3f} + wait {total['wait_ms']:,.3f} "
            f"+ idle {total['idle_ms']:,.3f}\n"
            f"synchronisation (waiting for the others to arrive) {total['sync_ms']:,.3f} ms\n"
            f"wait ratio {total['wait_ratio']:.4f}, synchronisation ratio {total['sync_ratio']:.4f}")


def _short(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}" if value >= 0.01 else "0" if value == 0 else f"{value:.0e}"
