"""Parts of painting a graph view that need only arrays: arrowheads and shape labels on the edges,
and the zoomed-out raster of boxes and straight edges (see :class:`~.render.ViewPainter`)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPolygonF

EDGE_GREY = "#8a8f98"


def draw_arrows(painter: QPainter, layout, edges: np.ndarray) -> None:
    """An arrowhead at the end of each edge in ``edges`` (indices into ``layout``'s edges)."""
    pts = layout.edge_points
    ends = layout.edge_offsets[1:][edges] - 1
    painter.setBrush(QColor(EDGE_GREY))
    painter.setPen(Qt.PenStyle.NoPen)
    for (x, y), (px, py) in zip(pts[ends].tolist(), pts[ends - 1].tolist()):
        dx, dy = x - px, y - py
        norm = (dx * dx + dy * dy) ** 0.5 or 1.0
        ux, uy = dx / norm * 7, dy / norm * 7
        painter.drawPolygon(QPolygonF([QPointF(x, y), QPointF(x - ux - uy * 0.5, y - uy + ux * 0.5),
                                       QPointF(x - ux + uy * 0.5, y - uy - ux * 0.5)]))


def draw_edge_labels(painter: QPainter, view, edges: np.ndarray) -> None:
    """The tensor shape beside each edge in ``edges`` whose shape is known (in the painter's font)."""
    graph = view.graph
    painter.setPen(QColor("#4b5563"))
    across = getattr(view, "direction", "TB") == "LR"
    for k in edges.tolist():
        name = view.edge_values[k] if k < len(view.edge_values) else ""
        if not name:
            continue
        text = graph.value(name).shape_text()
        if text == "?":
            continue
        poly = view.layout.edge_polyline(k)
        # On the edge's longest segment, past its middle: clear of frame names and of the labels
        # of sibling edges that leave the same point.
        seg = np.hypot(*np.diff(poly, axis=0).T)
        j = int(np.argmax(seg))
        (x0, y0), (x1, y1) = poly[j], poly[j + 1]
        if across:  # centred above the run between two columns
            width = painter.fontMetrics().horizontalAdvance(text)
            painter.drawText(QPointF((x0 + x1) / 2 - width / 2, (y0 + y1) / 2 - 4), text)
        else:
            painter.drawText(QPointF(x0 + (x1 - x0) * 0.6 + 4, y0 + (y1 - y0) * 0.6 + 3), text)


def paint_raster(painter: QPainter, rect: QRectF, scale: float, edges: tuple[np.ndarray, np.ndarray],
                 boxes: np.ndarray, colours: np.ndarray) -> None:
    """Write straight edges (first and last points, grey) and then boxes (left, top, right, bottom
    rows, filled with ``colours`` ARGB32) into a numpy image of the scene ``rect`` at ``scale``, and
    draw it in one call."""
    width, height = max(1, int(rect.width() * scale)), max(1, int(rect.height() * scale))
    image = np.zeros((height, width), dtype=np.uint32)
    first, last = edges
    if first.size:  # edges first, under the boxes: points sampled along each straight edge
        a = (first - (rect.left(), rect.top())) * scale
        b = (last - (rect.left(), rect.top())) * scale
        length = np.abs(b - a).max(axis=1)
        steps = int(min(max(float(length.max()), 1.0), 48.0))
        grey = np.uint32(QColor("#a4a9b1").rgba())
        for t in np.linspace(0.0, 1.0, steps + 1):
            px = (a[:, 0] + (b[:, 0] - a[:, 0]) * t).astype(np.int64)
            py = (a[:, 1] + (b[:, 1] - a[:, 1]) * t).astype(np.int64)
            ok = (px >= 0) & (px < width) & (py >= 0) & (py < height)
            image[py[ok], px[ok]] = grey
    if boxes.size:
        x0 = np.floor((boxes[:, 0] - rect.left()) * scale).astype(np.int64)
        y0 = np.floor((boxes[:, 1] - rect.top()) * scale).astype(np.int64)
        w = np.maximum(1, np.ceil((boxes[:, 2] - boxes[:, 0]) * scale)).astype(np.int64)
        h = np.maximum(1, np.ceil((boxes[:, 3] - boxes[:, 1]) * scale)).astype(np.int64)
        max_w, max_h = int(min(w.max(), 64)), int(min(h.max(), 32))
        for dy in range(max_h):
            rows = dy < h
            for dx in range(max_w):
                sel = rows & (dx < w)
                px, py = x0[sel] + dx, y0[sel] + dy
                ok = (px >= 0) & (px < width) & (py >= 0) & (py < height)
                image[py[ok], px[ok]] = colours[sel][ok]
    qimage = QImage(image.data, width, height, width * 4, QImage.Format.Format_ARGB32)
    painter.save()
    painter.resetTransform()  # the image is already in device pixels
    painter.drawImage(QPointF(0, 0), qimage)
    painter.restore()
