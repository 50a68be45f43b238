"""The graph canvas's minimap: the whole view drawn small in a corner, the visible part outlined;
a click there moves the view."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QImage, QPainter, QPen

from studio.ui.panels.graph.render import PaintState, ViewPainter

MINIMAP = 170  # pixels of the minimap's shorter side


class Minimap:
    """The minimap's image (drawn once per view and height) and where it sits on the canvas."""

    def __init__(self):
        self.image: QImage | None = None
        self.rect = QRectF()  # widget coordinates; null until painted (or after a resize)
        self.scale = 1.0  # minimap pixels per scene unit
        self._for: tuple = ()

    def forget(self) -> None:
        """Another view: the image is drawn again on the next paint."""
        self.image = None

    def moved(self) -> None:
        """The canvas was resized: the minimap's place is found again on the next paint."""
        self.rect = QRectF()

    def paint(self, painter: QPainter, view: ViewPainter, width: int, height: int, visible: QRectF) -> None:
        """Draw the minimap in the bottom-right corner of a ``width`` × ``height`` canvas showing ``visible``."""
        if width < 2.5 * MINIMAP or height < MINIMAP + 40:
            return
        if self.image is None or self._for != (id(view), height):
            self.image = self._render(view, height)
            self._for = (id(view), height)
        img = self.image
        x0, y0 = width - img.width() - 10, height - img.height() - 10
        self.rect = QRectF(x0, y0, img.width(), img.height())
        painter.fillRect(self.rect.adjusted(-2, -2, 2, 2), QColor(250, 250, 252, 230))
        painter.drawImage(QPointF(x0, y0), img)
        painter.setPen(QPen(QColor("#9aa3ad"), 1))
        painter.drawRect(self.rect.adjusted(-2, -2, 2, 2))
        bounds = view.bounds()
        s = self.scale
        r = QRectF(x0 + (visible.left() - bounds.left()) * s, y0 + (visible.top() - bounds.top()) * s,
                   visible.width() * s, visible.height() * s).intersected(self.rect)
        painter.setPen(QPen(QColor("#e0531f"), 1.5))
        painter.drawRect(r.adjusted(0, 0, -1, -1) if r.width() > 2 else QRectF(r.left(), r.top(), 2, max(2, r.height())))

    def _render(self, view: ViewPainter, height: int) -> QImage:
        bounds = view.bounds()
        tall = max(MINIMAP, height * 0.6)  # a long thin graph gets a tall minimap, not a sliver
        s = min(MINIMAP / max(bounds.width(), 1), tall / max(bounds.height(), 1))
        self.scale = s
        img = QImage(max(4, int(bounds.width() * s)), max(4, int(bounds.height() * s)),
                     QImage.Format.Format_ARGB32_Premultiplied)
        img.fill(QColor(250, 250, 252))
        p = QPainter(img)
        p.scale(s, s)
        p.translate(-bounds.left(), -bounds.top())
        view.paint(p, bounds, s, PaintState(), raster=True)
        p.end()
        return img

    def scene_point(self, pos: QPointF, view: ViewPainter) -> QPointF:
        """The scene point under ``pos`` (widget coordinates, inside the minimap)."""
        bounds = view.bounds()
        return QPointF(bounds.left() + (pos.x() - self.rect.left()) / self.scale,
                       bounds.top() + (pos.y() - self.rect.top()) / self.scale)
