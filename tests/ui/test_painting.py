"""Custom painting stays stable over thousands of QPainter calls (the pinned PySide6 is checked here).

PySide6 6.12.0 was seen crashing ("deallocating None") after a few thousand QPainter calls on
this Python; the pinned version must survive this test.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPen
from PySide6.QtWidgets import QWidget

FRAMES = 300
RECTS_PER_FRAME = 40


class SliceStripe(QWidget):
    """A timeline-like widget: rectangles with text, lines and a clip, repainted many times."""

    def __init__(self):
        super().__init__()
        self.resize(800, 200)
        self.frames = 0
        self.offset = 0.0

    def paintEvent(self, event) -> None:  # Qt override
        painter = QPainter(self)
        try:
            painter.setFont(QFont("Sans", 8))
            for i in range(RECTS_PER_FRAME):
                rect = QRectF((i * 20 + self.offset) % 800, (i % 5) * 30, 18, 25)
                painter.fillRect(rect, QColor.fromHsv((i * 37) % 360, 160, 220))
                painter.setPen(QPen(Qt.GlobalColor.black, 1))
                painter.drawRect(rect)
                painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, f"op{i}")
                painter.drawLine(QPointF(rect.left(), 190), QPointF(rect.right(), 160))
        finally:
            painter.end()
        self.frames += 1


def test_thousands_of_paint_calls_on_a_widget(qtbot):
    widget = SliceStripe()
    qtbot.addWidget(widget)
    widget.show()
    for frame in range(FRAMES):
        widget.offset = frame * 3.0
        widget.grab()  # renders through paintEvent, exposed window or not
    assert widget.frames >= FRAMES  # 300 frames x 40 slices x 4 calls = 48,000 QPainter calls


def test_painting_into_images_and_grabbing(qtbot):
    image = QImage(400, 300, QImage.Format.Format_ARGB32_Premultiplied)
    for frame in range(200):
        image.fill(Qt.GlobalColor.white)
        painter = QPainter(image)
        for i in range(30):
            painter.fillRect(QRectF(i * 12, (frame + i) % 280, 10, 10), QColor(i * 8, 100, 200))
            painter.drawText(QPointF(i * 12, 295), str(i))
        painter.end()
    assert image.pixelColor(5, 295).isValid()
    widget = SliceStripe()
    qtbot.addWidget(widget)
    for _ in range(100):
        assert not widget.grab().isNull()


def test_pyqtgraph_custom_graphics_object(qtbot):
    import pyqtgraph as pg

    class Bars(pg.GraphicsObject):
        def __init__(self):
            super().__init__()
            self.paints = 0

        def paint(self, painter, *args) -> None:  # Qt override
            self.paints += 1
            for i in range(50):
                painter.setBrush(pg.mkBrush((i * 5) % 255, 120, 200))
                painter.drawRect(QRectF(i, 0, 0.8, (i % 7) + 1))

        def boundingRect(self) -> QRectF:  # Qt override
            return QRectF(0, 0, 50, 8)

    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    item = Bars()
    plot.addItem(item)
    plot.show()
    for step in range(150):
        plot.setXRange(step * 0.1, 50 - step * 0.1, padding=0)
        plot.grab()
    assert item.paints > 100
