"""Studio's one scale of spacing, font sizes and colours, shared by every panel.

Panels take their margins, gaps, muted/error colours and small/title fonts from here instead of
writing numbers of their own, so the panels look like parts of one window. Colours of meaning
(op categories, overlay bands) stay with the data they colour: this module holds the chrome.
"""

from __future__ import annotations

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QWidget

# ---------------------------------------------------------------- spacing (px)
GAP = 4  # between widgets in a row, around toolbars
MARGIN = 8  # around a panel's content, between groups
SECTION = 16  # around an empty state, between sections

# ---------------------------------------------------------------- font sizes (× the application font)
SMALL = 0.9  # legends, captions, hints
TITLE = 1.15  # an empty state's title, a section title

# ---------------------------------------------------------------- colours (the chrome, not the data)
ERROR = "#c62828"  # a form's problem line, a failed state
WARNING = "#b26a00"
OK = "#2e7d32"
ACCENT = "#2f6ea5"  # selection, links
MUTED = "palette(placeholder-text)"  # hints, empty states: readable on light and dark palettes


def scaled_font(widget: QWidget, factor: float, bold: bool = False) -> QFont:
    """``widget``'s font scaled by ``factor`` (SMALL, TITLE), optionally bold."""
    font = QFont(widget.font())
    size = font.pointSizeF()
    if size > 0:
        font.setPointSizeF(size * factor)
    else:  # a pixel-sized font
        font.setPixelSize(max(1, round(font.pixelSize() * factor)))
    font.setBold(bold)
    return font


def muted(label: QLabel) -> QLabel:
    """Style ``label`` as a hint: the palette's placeholder colour."""
    label.setStyleSheet(f"color: {MUTED};")
    return label


def problem(label: QLabel) -> QLabel:
    """Style ``label`` as a form's problem line (red, wrapped)."""
    label.setStyleSheet(f"color: {ERROR};")
    label.setWordWrap(True)
    return label
