"""The graph canvas: a QWidget that paints a laid-out view with zoom, pan, picking and a minimap.

Painting goes through :class:`ViewPainter`, which culls to the viewport and lowers the level of
detail when zoomed out, so frames stay cheap however big the view is.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QToolTip, QWidget

from studio.tools.graph.view import ViewGraph
from studio.ui.panels.graph.minimap import MINIMAP, Minimap
from studio.ui.panels.graph.render import PaintState, ViewPainter

MIN_SCALE, MAX_SCALE = 0.002, 4.0
READABLE_SCALE = 0.45  # below this zoom the box labels are too small to read (see render.TEXT_SCALE)


class GraphCanvas(QWidget):
    """Signals: item_clicked(int) (-1 for background), item_activated(int) (double-click),
    frame_activated(int) (double-click on a frame's name strip: the group id)."""

    item_clicked = Signal(int)
    item_activated = Signal(int)
    frame_activated = Signal(int)  # double-click on an expanded group's name strip: collapse it

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMinimumSize(200, 150)
        self.painter_cache: ViewPainter | None = None
        self.state = PaintState()
        self.scale = 1.0
        self.origin = QPointF(0, 0)  # scene point at the widget's top-left corner
        self.empty_text = "Open an ONNX or OM model (File > Open, or drop it on the window)."
        self.legend: list[tuple[str, str]] = []
        self.legend_title = ""
        self.caption = ""
        self._drag: QPointF | None = None
        self._dragged = False
        self.minimap = Minimap()
        self.last_paint_items = 0

    # ------------------------------------------------------------------ model
    @property
    def view(self) -> ViewGraph | None:
        return self.painter_cache.view if self.painter_cache else None

    def set_view(self, view: ViewGraph | None, keep_position: bool = False) -> None:
        """Show ``view`` (None clears the canvas)."""
        # A job may have prepared the painter's caches off the GUI thread (see jobs.prepare).
        self.painter_cache = (getattr(view, "prepared_painter", None) or ViewPainter(view)) if view is not None else None
        self.state = PaintState()
        self.minimap.forget()
        if view is not None and not keep_position:
            self.fit()
        self.update()

    def fit(self) -> None:
        """Zoom so the whole graph fits (never above 1:1); a tall (or wide) graph that would be shrunk
        below a readable zoom fills the width (height) instead, from its top (left)."""
        if not self.painter_cache:
            return
        bounds = self.painter_cache.bounds().adjusted(-30, -30, 30, 30)
        w, h = max(self.width(), 50), max(self.height(), 50)
        scale = min(1.0, w / bounds.width(), h / bounds.height())
        tall, wide = bounds.height() > bounds.width() * 1.5, bounds.width() > bounds.height() * 1.5
        if scale < READABLE_SCALE and tall and w / bounds.width() > scale * 1.5:
            # A tall graph shrunk to fit would leave most of the canvas empty and its labels unreadable:
            # fill the width instead and start at the top (scroll or Up/Down from there).
            self.scale = max(MIN_SCALE, min(0.85, w / bounds.width()))
            self.origin = QPointF(bounds.center().x() - w / 2 / self.scale, bounds.top())
        elif scale < READABLE_SCALE and wide and h / bounds.height() > scale * 1.5:
            # the same for a wide graph: fill the height, start at the inputs on the left
            self.scale = max(MIN_SCALE, min(0.85, h / bounds.height()))
            self.origin = QPointF(bounds.left(), bounds.center().y() - h / 2 / self.scale)
        else:
            self.scale = max(MIN_SCALE, scale)
            self.origin = QPointF(bounds.center().x() - w / 2 / self.scale, bounds.center().y() - h / 2 / self.scale)
        self.update()

    def zoom(self, factor: float, anchor: QPointF | None = None) -> None:
        """Zoom by ``factor`` keeping the scene point under ``anchor`` (widget coords) in place."""
        anchor = anchor or QPointF(self.width() / 2, self.height() / 2)
        scene = self.to_scene(anchor)
        self.scale = min(MAX_SCALE, max(MIN_SCALE, self.scale * factor))
        self.origin = QPointF(scene.x() - anchor.x() / self.scale, scene.y() - anchor.y() / self.scale)
        self.update()

    def center_on(self, item: int, min_scale: float = 0.6) -> None:
        """Centre item ``item``, zooming in to a readable scale if needed."""
        if not self.painter_cache or not 0 <= item < self.painter_cache.count:
            return
        self.scale = max(self.scale, min_scale)
        c = self.painter_cache.rect(item).center()
        self.origin = QPointF(c.x() - self.width() / 2 / self.scale, c.y() - self.height() / 2 / self.scale)
        self.update()

    def to_scene(self, p: QPointF) -> QPointF:
        return QPointF(self.origin.x() + p.x() / self.scale, self.origin.y() + p.y() / self.scale)

    def visible_rect(self) -> QRectF:
        return QRectF(self.origin.x(), self.origin.y(), self.width() / self.scale, self.height() / self.scale)

    # ------------------------------------------------------------------ painting
    def paintEvent(self, event) -> None:  # Qt override
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor("#ffffff"))
        if not self.painter_cache:
            painter.setPen(QColor("#7a7f88"))
            painter.drawText(self.rect().adjusted(20, 20, -20, -20),
                             Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap,
                             self.empty_text)
            painter.end()
            return
        painter.save()
        painter.scale(self.scale, self.scale)
        painter.translate(-self.origin.x(), -self.origin.y())
        self.last_paint_items = self.painter_cache.paint(painter, self.visible_rect(), self.scale, self.state)
        painter.restore()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        self.minimap.paint(painter, self.painter_cache, self.width(), self.height(), self.visible_rect())
        self._paint_legend(painter)
        if self.caption:
            painter.setPen(QColor("#4b5563"))
            painter.drawText(QRectF(8, self.height() - 22, self.width() - MINIMAP - 24, 18),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, self.caption)
        painter.end()

    def legend_box(self) -> QRectF | None:
        """Where the overlay's legend goes (widget coordinates), or None without one: the first
        corner (top left, bottom left, top right) where it covers no node on screen, else the one
        covering the fewest — a legend must not hide the graph it explains."""
        if not self.legend:
            return None
        fm = self.fontMetrics()
        width = max([fm.horizontalAdvance(t) for _, t in self.legend] + [fm.horizontalAdvance(self.legend_title)]) + 36
        height = 22 + 18 * len(self.legend)
        corners = [QRectF(10, 10, width, height), QRectF(10, self.height() - height - 30, width, height),
                   QRectF(self.width() - width - 10, 10, width, height)]
        if not self.painter_cache:
            return corners[0]
        best, fewest = corners[0], None
        for box in corners:
            if box.top() < 0 or box.left() < 0 or (not self.minimap.rect.isNull()
                                                   and box.intersects(self.minimap.rect)):
                continue
            scene = QRectF(self.to_scene(box.topLeft()), self.to_scene(box.bottomRight()))
            covered = self.painter_cache.visible_items(scene).size
            if covered == 0:
                return box
            if fewest is None or covered < fewest:
                best, fewest = box, covered
        return best

    def _paint_legend(self, painter: QPainter) -> None:
        box = self.legend_box()
        if box is None:
            return
        left, top, width = box.left(), box.top(), box.width()
        painter.fillRect(box, QColor(255, 255, 255, 235))
        painter.setPen(QColor("#9aa3ad"))
        painter.drawRect(box)
        painter.setPen(QColor("#1f1f1f"))
        painter.drawText(QRectF(left + 8, top + 2, width - 16, 18), Qt.AlignmentFlag.AlignVCenter, self.legend_title)
        for k, (colour, text) in enumerate(self.legend):
            y = top + 22 + 18 * k
            painter.fillRect(QRectF(left + 8, y + 2, 12, 12), QColor(colour or "#ffffff"))
            painter.drawText(QRectF(left + 26, y, width - 30, 16), Qt.AlignmentFlag.AlignVCenter, text)

    # ------------------------------------------------------------------ input
    def wheelEvent(self, event) -> None:  # Qt override
        steps = event.angleDelta().y() / 120.0
        self.zoom(1.15 ** steps, event.position())

    def keyPressEvent(self, event) -> None:  # Qt override
        key = event.key()
        step = 80 / self.scale
        if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom(1.25)
        elif key == Qt.Key.Key_Minus:
            self.zoom(0.8)
        elif key in (Qt.Key.Key_0, Qt.Key.Key_F):
            self.fit()
        elif key == Qt.Key.Key_Left:
            self._pan(-step, 0)
        elif key == Qt.Key.Key_Right:
            self._pan(step, 0)
        elif key == Qt.Key.Key_Up:
            self._pan(0, -step)
        elif key == Qt.Key.Key_Down:
            self._pan(0, step)
        else:
            super().keyPressEvent(event)

    def _pan(self, dx: float, dy: float) -> None:
        self.origin = QPointF(self.origin.x() + dx, self.origin.y() + dy)
        self.update()

    def mousePressEvent(self, event) -> None:  # Qt override
        if event.button() == Qt.MouseButton.LeftButton:
            if self.minimap.rect.contains(event.position()) and self.painter_cache:
                self._center_from_minimap(event.position())
                return
            self._drag = event.position()
            self._dragged = False
            self.setCursor(Qt.CursorShape.ClosedHandCursor)

    def mouseMoveEvent(self, event) -> None:  # Qt override
        if self._drag is not None:
            delta = event.position() - self._drag
            if abs(delta.x()) + abs(delta.y()) > 2:
                self._dragged = True
            self._drag = event.position()
            self._pan(-delta.x() / self.scale, -delta.y() / self.scale)

    def mouseReleaseEvent(self, event) -> None:  # Qt override
        self.unsetCursor()
        if self._drag is not None and not self._dragged and self.painter_cache:
            p = self.to_scene(event.position())
            self.item_clicked.emit(self.painter_cache.item_at(p.x(), p.y()))
        self._drag = None

    def mouseDoubleClickEvent(self, event) -> None:  # Qt override
        if self.painter_cache:
            p = self.to_scene(event.position())
            item = self.painter_cache.item_at(p.x(), p.y())
            if item >= 0:
                self.item_activated.emit(item)
                return
            frame = self.painter_cache.frame_at(p.x(), p.y())
            if frame >= 0:
                self.frame_activated.emit(frame)

    def _center_from_minimap(self, pos: QPointF) -> None:
        scene = self.minimap.scene_point(pos, self.painter_cache)
        self.origin = QPointF(scene.x() - self.width() / 2 / self.scale, scene.y() - self.height() / 2 / self.scale)
        self.update()

    def event(self, event) -> bool:  # Qt override: tooltips with the full name
        if event.type() == event.Type.ToolTip and self.painter_cache:
            p = self.to_scene(event.position() if hasattr(event, "position") else QPointF(event.pos()))
            item = self.painter_cache.item_at(p.x(), p.y())
            frame = self.painter_cache.frame_at(p.x(), p.y()) if item < 0 else -1
            if item >= 0:
                QToolTip.showText(event.globalPos(), self.tooltip_text(item), self)
            elif frame >= 0:
                QToolTip.showText(event.globalPos(), f"{self.view.group_labels.get(frame, '')}\n"
                                  "double-click to collapse", self)
            else:
                QToolTip.hideText()
            return True
        return super().event(event)

    def tooltip_text(self, item: int) -> str:
        """Full name, type and shapes of an item (never cut)."""
        view = self.view
        it = view.items[item]
        if it.kind == "node":
            node = view.graph.nodes[it.index]
            outs = ", ".join(view.graph.value(o).type_text() for o in node.outputs if o)
            text = f"{node.name}\n{node.type}" + (f" → {outs}" if outs else "")
            if node.subgraphs:
                text += f"\nsubgraphs: {', '.join(node.subgraphs)} (double-click to open)"
            if item in self.state.overlay_text:
                text += f"\n{self.legend_title}: {self.state.overlay_text[item]}"
            return text
        if it.kind == "group":
            return f"{it.name}\n{it.sublabel} (double-click to expand)"
        return f"{it.kind}: {it.name}\n{view.graph.value(it.name).type_text()}"

    def resizeEvent(self, event) -> None:  # Qt override
        super().resizeEvent(event)
        self.minimap.moved()

    def highlight(self, items) -> None:
        """Outline these items (None clears)."""
        if items is None or not self.painter_cache:
            self.state.highlighted = None
        else:
            mask = np.zeros(self.painter_cache.count, dtype=bool)
            mask[list(items)] = True
            self.state.highlighted = mask
        self.update()
