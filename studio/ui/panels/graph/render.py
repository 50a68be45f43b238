"""Painting a laid-out graph with QPainter: only what is visible, at the detail the zoom allows.

Zoomed out (or with thousands of boxes in view), boxes and straight edges are written into a numpy
image shown in one call, so a frame costs a few array passes; zoomed in, boxes get rounded corners, labels, and edges become their routed polylines
with tensor shapes as labels. PNG export paints with it
on a QImage (:mod:`~studio.ui.panels.graph.png_export`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen, QPolygonF

from studio.tools.graph.categories import CATEGORY_COLOURS
from studio.tools.graph.view import ViewGraph
from studio.ui.panels.graph.edge_marks import draw_arrows, draw_edge_labels, paint_raster

TEXT_SCALE = 0.35      # below this zoom, no text
OVERLAY_MIN_PX = 9     # an overlay's value beside a box is never drawn smaller than this on screen
DETAIL_SCALE = 0.15    # below this zoom, straight edges and plain boxes
EDGE_LABEL_SCALE = 0.75  # above this zoom, edges show the tensor shape
SELECT = QColor("#ffb000")
HIGHLIGHT = QColor("#1e90ff")
ONLY_LEFT, ONLY_RIGHT = QColor("#d0453a"), QColor("#2e9d4f")


def _ink(colour: QColor) -> QColor:
    return QColor("#1f1f1f") if colour.lightness() > 150 else QColor("#ffffff")


@dataclass
class PaintState:
    """What decorates the boxes: selection, highlights, overlay colours, compare marks."""

    selected: int = -1
    highlighted: np.ndarray | None = None        # bool per item
    overlay: dict[int, QColor] = field(default_factory=dict)
    overlay_text: dict[int, str] = field(default_factory=dict)
    marks: dict[int, QColor] = field(default_factory=dict)  # compare: item -> border colour


class ViewPainter:
    """Per-view caches (numpy boxes, colours, edge boxes) and the paint routine.

    Nothing here is per item Qt objects: building it for 100,000 items takes milliseconds, and the
    Qt objects are made per frame for what is visible only.
    """

    RASTER_ITEMS = 3000  # more visible boxes than this: paint them into a numpy image instead

    def __init__(self, view: ViewGraph):
        self.view = view
        lay = view.layout
        self.left = lay.x - lay.width / 2
        self.right = lay.x + lay.width / 2
        self.top = lay.y - lay.height / 2
        self.bottom = lay.y + lay.height / 2
        categories = sorted({it.category for it in view.items})
        cat_id = {c: k for k, c in enumerate(categories)}
        self.cat_index = np.fromiter((cat_id[it.category] for it in view.items), dtype=np.int64,
                                     count=len(view.items))
        self.palette = [QColor(CATEGORY_COLOURS.get(c, "#55606e")) for c in categories]
        self.palette_rgb = np.array([c.rgba() for c in self.palette], dtype=np.uint32)
        offs = lay.edge_offsets
        pts = lay.edge_points
        if lay.edge_src.size:
            self.e_left = np.minimum.reduceat(pts[:, 0], offs[:-1])
            self.e_right = np.maximum.reduceat(pts[:, 0], offs[:-1])
            self.e_top = np.minimum.reduceat(pts[:, 1], offs[:-1])
            self.e_bottom = np.maximum.reduceat(pts[:, 1], offs[:-1])
            self.e_first, self.e_last = pts[offs[:-1]], pts[offs[1:] - 1]
        else:
            self.e_left = self.e_right = self.e_top = self.e_bottom = np.zeros(0)
            self.e_first = self.e_last = np.zeros((0, 2))
        self.frame_ids = np.array([gid for gid, _ in view.frames], dtype=np.int64)
        self.frame_boxes = np.array([box for _, box in view.frames], dtype=np.float64).reshape(-1, 4)
        self._polys: dict[int, QPolygonF] = {}
        self._bounds: QRectF | None = None
        self._overlay_key: tuple | None = None
        self._overlay_rgb: np.ndarray | None = None
        self._fonts: tuple[QFont, QFont, QFont] | None = None  # made on first paint, on the painting thread

    def _font(self, which: int) -> QFont:
        if self._fonts is None:
            font = QFont()
            font.setPixelSize(11)
            bold = QFont(font)
            bold.setBold(True)
            small = QFont()
            small.setPixelSize(9)
            self._fonts = (font, bold, small)
        return self._fonts[which]

    def rect(self, i: int) -> QRectF:
        """The box of item ``i`` in scene coordinates."""
        return QRectF(float(self.left[i]), float(self.top[i]), float(self.right[i] - self.left[i]),
                      float(self.bottom[i] - self.top[i]))

    @property
    def count(self) -> int:
        return int(self.left.size)

    def fill(self, i: int) -> QColor:
        return self.palette[int(self.cat_index[i])]

    def bounds(self) -> QRectF:
        """Everything drawn (boxes and frames), in scene coordinates; computed once."""
        if self._bounds is None:
            l, t, r, b = self.view.layout.bounds
            if self.frame_boxes.size:
                fl, ft = self.frame_boxes[:, :2].min(axis=0)
                fr, fb = self.frame_boxes[:, 2:].max(axis=0)
                l, t, r, b = min(l, fl), min(t, ft), max(r, fr), max(b, fb)
            self._bounds = QRectF(float(l), float(t), float(r - l), float(b - t))
        return QRectF(self._bounds)

    def visible_items(self, rect: QRectF) -> np.ndarray:
        return np.nonzero((self.right >= rect.left()) & (self.left <= rect.right())
                          & (self.bottom >= rect.top()) & (self.top <= rect.bottom()))[0]

    def visible_edges(self, rect: QRectF) -> np.ndarray:
        return np.nonzero((self.e_right >= rect.left()) & (self.e_left <= rect.right())
                          & (self.e_bottom >= rect.top()) & (self.e_top <= rect.bottom()))[0]

    def item_at(self, x: float, y: float) -> int:
        """Index of the item under scene point (x, y), or -1."""
        hit = np.nonzero((self.left <= x) & (self.right >= x) & (self.top <= y) & (self.bottom >= y))[0]
        return int(hit[-1]) if hit.size else -1

    def frame_at(self, x: float, y: float) -> int:
        """Group id of the innermost frame whose name strip (its top 20 units) holds (x, y), or -1."""
        if not self.frame_boxes.size:
            return -1
        f = self.frame_boxes
        hit = np.nonzero((f[:, 0] <= x) & (f[:, 2] >= x) & (f[:, 1] <= y) & (f[:, 1] + 20 >= y))[0]
        if not hit.size:
            return -1
        areas = (f[hit, 2] - f[hit, 0]) * (f[hit, 3] - f[hit, 1])
        return int(self.frame_ids[hit[np.argmin(areas)]])

    def _poly(self, k: int) -> QPolygonF:
        poly = self._polys.get(k)
        if poly is None:
            poly = QPolygonF([QPointF(x, y) for x, y in self.view.layout.edge_polyline(k).tolist()])
            self._polys[k] = poly
        return poly

    def paint(self, painter: QPainter, rect: QRectF, scale: float, state: PaintState,
              vector: bool = False, raster: bool = False) -> int:
        """Paint the part of the view inside scene ``rect`` at ``scale``; returns the items drawn.

        The painter maps scene coordinates to device pixels (``(p - rect.topLeft()) * scale``).
        Many visible boxes or a low zoom take the raster path unless ``vector`` is asked for (export).
        """
        items = self.visible_items(rect)
        detailed = scale >= DETAIL_SCALE
        if not raster:  # the minimap shows boxes only
            self._paint_frames(painter, rect, scale)
        if raster or (not vector and (not detailed or items.size > self.RASTER_ITEMS)):
            self._paint_raster(painter, rect, scale, items, state)
            self._decorations(painter, items, scale, state)
            return int(items.size)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, detailed)
        edges = self.visible_edges(rect)
        painter.setPen(QPen(QColor("#8a8f98"), max(1.0 / scale, 0.6) if detailed else 0))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        if not detailed:
            painter.drawLines([QLineF(a[0], a[1], b[0], b[1])
                               for a, b in zip(self.e_first[edges].tolist(), self.e_last[edges].tolist())])
        else:
            references = self.view.references
            for k in edges.tolist():
                if k not in references:
                    painter.drawPolyline(self._poly(k))
            if references:  # dataSource-style references: dashed, so they read as "reads from", not data flow
                pen = painter.pen()
                dashed = QPen(pen)
                dashed.setStyle(Qt.PenStyle.DashLine)
                painter.setPen(dashed)
                for k in edges.tolist():
                    if k in references:
                        painter.drawPolyline(self._poly(k))
                painter.setPen(pen)
            if scale >= TEXT_SCALE:
                draw_arrows(painter, self.view.layout, edges)
            if scale >= EDGE_LABEL_SCALE:
                painter.setFont(self._font(2))
                draw_edge_labels(painter, self.view, edges)
        text = scale >= TEXT_SCALE
        outline = QPen(QColor("#3a3f47"), 0.8 / scale if scale < 1 else 0.8)
        view = self.view
        for i in items.tolist():
            item = view.items[i]
            fill = state.overlay.get(i, self.fill(i))
            r = self.rect(i)
            painter.setBrush(fill)
            painter.setPen(outline)
            radius = 14 if item.kind in ("input", "output") else 4
            if detailed:
                painter.drawRoundedRect(r, radius, radius)
            else:
                painter.drawRect(r)
            if not text:
                continue
            painter.setPen(_ink(fill))
            if item.sublabel:
                painter.setFont(self._font(1))
                painter.drawText(QRectF(r.left() + 2, r.top() + 1, r.width() - 4, r.height() * 0.55),
                                 Qt.AlignmentFlag.AlignCenter,
                                 painter.fontMetrics().elidedText(item.label, Qt.TextElideMode.ElideMiddle,
                                                                  int(r.width() - 6)))
                painter.setFont(self._font(2))
                painter.drawText(QRectF(r.left() + 2, r.top() + r.height() * 0.5, r.width() - 4, r.height() * 0.45),
                                 Qt.AlignmentFlag.AlignCenter,
                                 painter.fontMetrics().elidedText(item.sublabel, Qt.TextElideMode.ElideMiddle,
                                                                  int(r.width() - 6)))
            else:
                painter.setFont(self._font(1))  # elided to the box (the tooltip has the full name)
                painter.drawText(r, Qt.AlignmentFlag.AlignCenter,
                                 painter.fontMetrics().elidedText(item.label, Qt.TextElideMode.ElideMiddle,
                                                                  int(r.width() - 6)))
            if i in state.overlay_text and r.height() * scale >= OVERLAY_MIN_PX + 1:
                # at least OVERLAY_MIN_PX on screen at any zoom; hidden when the row is lower than that
                font = QFont(self._font(2))
                font.setPixelSize(max(9, round(OVERLAY_MIN_PX / scale)))
                painter.setFont(font)
                painter.setPen(QColor("#1f1f1f"))
                painter.drawText(QRectF(r.right() + 3, r.top(), max(90.0, 70 / scale), r.height()),
                                 Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, state.overlay_text[i])
        self._decorations(painter, items, scale, state)
        return int(items.size)

    def _paint_frames(self, painter: QPainter, rect: QRectF, scale: float) -> None:
        """Frames of expanded groups in view, behind everything (with their names when readable)."""
        if not self.frame_boxes.size or scale < 0.03:
            return
        f = self.frame_boxes
        shown = np.nonzero((f[:, 2] >= rect.left()) & (f[:, 0] <= rect.right())
                           & (f[:, 3] >= rect.top()) & (f[:, 1] <= rect.bottom()))[0]
        if shown.size > 5000:  # at this zoom, thousands of frames are only noise
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, scale >= DETAIL_SCALE)
        painter.setPen(QPen(QColor("#c9d1dc"), 1 / scale))
        painter.setBrush(QColor(243, 245, 249, 180))
        painter.setFont(self._font(0))
        boxes = [QRectF(l, t, r - l, b - t) for l, t, r, b in f[shown].tolist()]
        for box in boxes:
            painter.drawRoundedRect(box, 6, 6)
        if scale >= TEXT_SCALE:
            painter.setPen(QColor("#6a7585"))
            for gid, box in zip(self.frame_ids[shown].tolist(), boxes):
                label = self._frame_label(painter, gid, int(box.width() - 10))
                painter.drawText(QRectF(box.left() + 5, box.top() + 1, box.width() - 10, 14),
                                 Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, label)

    def _item_rgb(self, state: PaintState) -> np.ndarray:
        """Fill colour (ARGB32) per item, overlay included; cached per overlay."""
        key = (id(state.overlay), len(state.overlay))
        if self._overlay_rgb is None or key != self._overlay_key:
            rgb = self.palette_rgb[self.cat_index].copy()
            if state.overlay:
                idx = np.fromiter(state.overlay.keys(), dtype=np.int64, count=len(state.overlay))
                rgb[idx] = np.fromiter((c.rgba() for c in state.overlay.values()), dtype=np.uint32,
                                       count=len(state.overlay))
            self._overlay_rgb, self._overlay_key = rgb, key
        return self._overlay_rgb

    def _paint_raster(self, painter: QPainter, rect: QRectF, scale: float, items: np.ndarray,
                      state: PaintState) -> None:
        """Zoomed out: boxes and straight edges are written into a numpy image, shown in one call."""
        edges = self.visible_edges(rect)
        boxes = np.stack([self.left[items], self.top[items], self.right[items], self.bottom[items]], axis=1)
        paint_raster(painter, rect, scale, (self.e_first[edges], self.e_last[edges]), boxes,
                     self._item_rgb(state)[items])

    def _frame_label(self, painter: QPainter, gid: int, width: int) -> str:
        """The group's path and size; its last name and size when the frame is narrow."""
        fm = painter.fontMetrics()
        full = self.view.group_labels.get(gid, "")
        if fm.horizontalAdvance(full) <= width:
            return full
        return fm.elidedText(self.view.group_short.get(gid, full), Qt.TextElideMode.ElideRight, width)

    def _decorations(self, painter: QPainter, items: np.ndarray, scale: float, state: PaintState) -> None:
        painter.setBrush(Qt.BrushStyle.NoBrush)
        width = max(2.5 / scale, 2.5)
        if state.highlighted is not None:
            painter.setPen(QPen(HIGHLIGHT, width))
            for i in items[state.highlighted[items]][:5000].tolist():
                painter.drawRect(self.rect(i).adjusted(-3, -3, 3, 3))
        for i, colour in state.marks.items():
            painter.setPen(QPen(colour, width, Qt.PenStyle.DashLine))
            painter.drawRect(self.rect(i).adjusted(-4, -4, 4, 4))
        if 0 <= state.selected < self.count:
            painter.setPen(QPen(SELECT, width * 1.3))
            painter.drawRect(self.rect(state.selected).adjusted(-4, -4, 4, 4))
