"""The AIPP page's parts: a picture scaled to fit its label, and the number boxes of its form."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QDoubleSpinBox, QLabel, QSizePolicy, QSpinBox, QWidget


def int_box(lo: int, hi: int, value: int = 0) -> QSpinBox:
    """An integer box from ``lo`` to ``hi`` showing ``value``."""
    box = QSpinBox()
    box.setRange(lo, hi)
    box.setValue(value)
    return box


def float_box(value: float, decimals: int = 6) -> QDoubleSpinBox:
    """A number box (±1e6, ``decimals`` places) showing ``value``."""
    box = QDoubleSpinBox()
    box.setDecimals(decimals)
    box.setRange(-1e6, 1e6)
    box.setValue(value)
    return box


class ImageView(QLabel):
    """A picture scaled to fit, with a caption; the full size is in the tooltip."""

    def __init__(self, caption: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.caption = caption
        self._pixmap: QPixmap | None = None
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setMinimumSize(120, 120)
        # The pixmap follows the label's size, never the other way round (no layout feedback loop).
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        self.setStyleSheet("background: palette(window); border: 1px solid palette(mid);")
        self.setText(f"{caption}\n(no preview yet)")

    def set_array(self, rgb: np.ndarray) -> None:
        rgb = np.ascontiguousarray(rgb)
        h, w = rgb.shape[:2]
        image = QImage(rgb.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()
        self._pixmap = QPixmap.fromImage(image)
        self.setToolTip(f"{self.caption}: {w}x{h}")
        self._rescale()

    def resizeEvent(self, event) -> None:  # Qt override
        super().resizeEvent(event)
        self._rescale()

    def _rescale(self) -> None:
        if self._pixmap is not None:
            self.setPixmap(self._pixmap.scaled(self.size(), Qt.AspectRatioMode.KeepAspectRatio,
                                               Qt.TransformationMode.SmoothTransformation))
