"""The communication matrix as a heat map: source rank down, destination rank across, bandwidth in GB/s.

Darker is faster; a cell with no traffic stays blank. When the bandwidths span more than a decade
(a rank's LOCAL copy next to its HCCS or RDMA links), the colour follows their logarithm, so the
network links are not all washed out by the local ones. The tooltip of a cell gives the transport,
the groups, the size and the time behind its bandwidth. Cells are drawn with QPainter (a 16-rank
job has 256 of them, a few hundred ranks ~100k: one image pixel per cell, no item per cell);
the cells and pixels are computed on a worker (:mod:`..heat_data`).
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QImage, QLinearGradient, QPainter, QPen
from PySide6.QtWidgets import QToolTip, QWidget

from studio.ui.panels.cluster.heat_data import HIGH_RGB, LOW_RGB, HeatData
from studio.ui.panels.cluster.state import Cell
from studio.ui.panels.cluster.widgets.parts import paint_with

LOW, HIGH = QColor(*LOW_RGB), QColor(*HIGH_RGB)
EMPTY = ("No communication matrix for these ranks and this step: msprof timelines and msprof-analyze's step-only "
         "output carry none; torch_npu writes it in communication_matrix.json / analysis.db (Level1 or higher).")
MARGIN_LEFT, MARGIN_TOP, SCALE_WIDTH = 40, 36, 90


def colour(fraction: float) -> QColor:
    """The colour of a cell at ``fraction`` of the largest bandwidth shown."""
    f = min(1.0, max(0.0, fraction))
    return QColor(*(round(a + (b - a) * f) for a, b in zip(LOW.getRgb()[:3], HIGH.getRgb()[:3])))


class HeatMap(QWidget):
    """Signals: cell_clicked(int, int) — (src, dst) of a clicked cell with traffic."""

    cell_clicked = Signal(int, int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.ranks: list[int] = []
        self.cells: dict[tuple[int, int], Cell] = {}
        self.peak = self.low = 0.0
        self.log_scale = False
        self.data = HeatData()
        self._index: dict[int, int] = {}
        self._image: QImage | None = None
        self.setMouseTracking(True)
        self.setMinimumSize(240, 200)

    def set_data(self, data: HeatData) -> None:
        """Show a map computed on a worker (:func:`~studio.ui.panels.cluster.heat_data.heat_data`)."""
        self.data = data
        self.ranks, self.cells = data.ranks, data.cells
        self.peak, self.low, self.log_scale = data.peak, data.low, data.log_scale
        self._index = {rank: i for i, rank in enumerate(self.ranks)}
        n = len(self.ranks)
        self._image = (QImage(data.pixels.data, n, n, 4 * n, QImage.Format.Format_ARGB32)
                       if data.pixels is not None and self.cells else None)  # shares the array's buffer
        self.update()

    def fraction(self, value: float) -> float:
        """Where ``value`` sits on the colour scale, 0 (palest) to 1 (darkest)."""
        return self.data.fraction(value)

    def sizeHint(self) -> QSize:  # Qt override
        return QSize(520, 420)

    # ------------------------------------------------------------------ geometry
    def _grid(self) -> tuple[float, float, float]:
        """(left, top, cell size): square cells filling the space left of the colour scale."""
        n = max(1, len(self.ranks))
        side = min(self.width() - MARGIN_LEFT - SCALE_WIDTH - 8, self.height() - MARGIN_TOP - 8)
        return MARGIN_LEFT, MARGIN_TOP, max(2.0, side / n)

    def cell_at(self, pos: QPointF) -> Cell | None:
        left, top, size = self._grid()
        col, row = int((pos.x() - left) // size), int((pos.y() - top) // size)
        if pos.x() < left or pos.y() < top or not (0 <= row < len(self.ranks) and 0 <= col < len(self.ranks)):
            return None
        return self.cells.get((self.ranks[row], self.ranks[col]))

    def cell_rect(self, src: int, dst: int) -> QRectF:
        left, top, size = self._grid()
        return QRectF(left + self._index[dst] * size, top + self._index[src] * size, size, size)

    def axis_labels(self, metrics: QFontMetrics) -> dict[str, list[tuple[QRectF, str]]]:
        """The rank labels drawn left of the rows and above the columns: ``{"rows": [(box, text)],
        "columns": [...]}``. Each box holds its whole text, centred on its row or column; when the
        cells are narrower than a label, only every n-th rank is labelled (a label squeezed into
        one cell wrapped "15" into "1 5" and ran into its neighbours)."""
        left, top, size = self._grid()
        if not self.ranks:
            return {"rows": [], "columns": []}
        height = metrics.height()
        width = max(metrics.horizontalAdvance(str(rank)) for rank in self.ranks) + 4
        every_row = max(1, math.ceil(height / size))
        every_column = max(1, math.ceil(width / size))
        rows, columns = [], []
        for i, rank in enumerate(self.ranks):
            middle_y, middle_x = top + (i + 0.5) * size, left + (i + 0.5) * size
            if i % every_row == 0:
                rows.append((QRectF(0, middle_y - max(size, height) / 2, left - 6, max(size, height)), str(rank)))
            if i % every_column == 0:
                box = max(size, width)
                columns.append((QRectF(middle_x - box / 2, top - height - 4, box, height), str(rank)))
        return {"rows": rows, "columns": columns}

    # ------------------------------------------------------------------ painting
    def paintEvent(self, event) -> None:  # Qt override
        paint_with(self, self._paint)

    def _paint(self, painter: QPainter) -> None:
        if not self.cells:
            painter.setPen(self.palette().text().color())
            painter.drawText(self.rect().adjusted(12, 12, -12, -12),
                             Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap, EMPTY)
            return
        left, top, size = self._grid()
        n = len(self.ranks)
        metrics = QFontMetrics(painter.font())
        grid_pen = QPen(self.palette().mid().color(), 0.5)
        painter.setPen(grid_pen)
        painter.drawRect(QRectF(left, top, n * size, n * size))
        painter.setPen(self.palette().text().color())
        labels = self.axis_labels(metrics)
        for rect, text in labels["rows"]:
            painter.drawText(rect, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, text)
        for rect, text in labels["columns"]:
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
        painter.drawText(QRectF(0, 0, left + n * size, metrics.height()), Qt.AlignmentFlag.AlignLeft,
                         "src ↓  dst →")
        painter.drawImage(QRectF(left, top, n * size, n * size), self._image)
        if size >= 6:  # a thin line between cells, in the background colour
            painter.setPen(QPen(self.palette().base().color(), 1))
            for i in range(1, n):
                painter.drawLine(QPointF(left + i * size, top), QPointF(left + i * size, top + n * size))
                painter.drawLine(QPointF(left, top + i * size), QPointF(left + n * size, top + i * size))
        if size >= metrics.horizontalAdvance("000.0") + 4:
            for (src, dst), cell in self.cells.items():
                fraction = self.fraction(cell.bandwidth_gbps)
                painter.setPen(Qt.GlobalColor.white if fraction > 0.5 else Qt.GlobalColor.black)
                painter.drawText(self.cell_rect(src, dst), Qt.AlignmentFlag.AlignCenter, _short(cell.bandwidth_gbps))
        self._paint_scale(painter, left + n * size + 16, top, min(n * size, 220.0))

    def _paint_scale(self, painter: QPainter, x: float, top: float, height: float) -> None:
        gradient = QLinearGradient(0, top + height, 0, top)
        gradient.setColorAt(0, LOW)
        gradient.setColorAt(1, HIGH)
        painter.fillRect(QRectF(x, top, 12, height), gradient)
        painter.setPen(self.palette().text().color())
        painter.drawText(QPointF(x + 16, top + 10), f"{_short(self.peak)}")
        painter.drawText(QPointF(x + 16, top + height), _short(self.low) if self.log_scale else "0")
        painter.drawText(QPointF(x + 16, top + height / 2), "GB/s (log)" if self.log_scale else "GB/s")

    # ------------------------------------------------------------------ interaction
    def event(self, event) -> bool:  # Qt override
        if event.type() == event.Type.ToolTip:
            cell = self.cell_at(QPointF(event.pos()))  # a QHelpEvent
            if cell is None:
                QToolTip.hideText()
            else:
                QToolTip.showText(event.globalPos(), cell_tooltip(cell), self)
            return True
        return super().event(event)

    def mousePressEvent(self, event) -> None:  # Qt override
        cell = self.cell_at(event.position())
        if cell is not None:
            self.cell_clicked.emit(cell.src, cell.dst)


def cell_tooltip(cell: Cell) -> str:
    return (f"rank {cell.src} → rank {cell.dst}\n"
            f"transport: {', '.join(cell.transports) or 'unknown'}\n"
            f"group: {', '.join(cell.groups)}\n"
            f"{cell.size_mb:,.3f} MB in {cell.time_ms:,.3f} ms = {cell.bandwidth_gbps:,.3f} GB/s")


def _short(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 1 else f"{value:.2g}"
