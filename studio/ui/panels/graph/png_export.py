"""The whole laid-out graph as a PNG, painted on a QImage: works headless (the command line's
``studio graph --export``) and off the GUI thread (the panel's export job)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QColor, QImage, QPainter

from studio.tools.graph.view import ViewGraph
from studio.ui.panels.graph.render import PaintState, ViewPainter

EDGE_LABEL_ROOM = 140.0  # shape labels sit right of their edges and may pass the rightmost box


def render_image(view: ViewGraph, scale: float, state: PaintState | None = None, max_side: int = 16000) -> QImage:
    """The whole view as an image at ``scale`` (clamped so no side exceeds ``max_side`` pixels)."""
    vp = ViewPainter(view)
    bounds = vp.bounds().adjusted(-20, -20, 20 + EDGE_LABEL_ROOM, 20)
    scale = min(scale, max_side / max(bounds.width(), 1), max_side / max(bounds.height(), 1))
    image = QImage(max(1, int(bounds.width() * scale)), max(1, int(bounds.height() * scale)),
                   QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(QColor("#ffffff"))
    painter = QPainter(image)
    painter.scale(scale, scale)
    painter.translate(-bounds.left(), -bounds.top())
    vp.paint(painter, bounds, scale, state or PaintState(), vector=True)
    painter.end()
    return image


def export_png(view: ViewGraph, path: Path, overlay_colours: dict[int, str] | None = None, scale: float = 2.0) -> Path:
    """Write the whole view as PNG (2x like Netron, capped at 16000 px a side). Works headless."""
    from PySide6.QtGui import QGuiApplication

    if QGuiApplication.instance() is None:
        import os

        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        export_png._app = QGuiApplication([])  # kept alive for the process
    state = PaintState(overlay={i: QColor(c) for i, c in (overlay_colours or {}).items()})
    image = render_image(view, scale, state)
    if not image.save(str(path), "PNG"):
        from studio.core.errors import UserError

        raise UserError("Cannot write the PNG file", path, "Check that the folder exists and is writable.")
    return Path(path)
