"""Small layout parts the cluster panel's tabs share: a titled box, a centred message, a row of
controls with its wrapped hint, and a tab's body (that row over two parts split top to bottom)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget


def titled(title: str | QLabel, widget: QWidget, parent: QWidget) -> QWidget:
    """``widget`` under a bold title (a QLabel given as the title is used as it is, to be updated later)."""
    box = QWidget(parent)
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 4, 0, 0)
    layout.addWidget(title if isinstance(title, QLabel) else QLabel(f"<b>{title}</b>", box))
    layout.addWidget(widget, 1)
    return box


def message_label(text: str, parent: QWidget) -> QLabel:
    """A wrapped, centred, selectable message: the empty state, or an engine's error in full."""
    label = QLabel(text, parent)
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setMargin(24)
    return label


def controls_row(parent: QWidget, controls: list, hint: str) -> QHBoxLayout:
    """The controls (widgets, or text for a label) left to right, then ``hint`` wrapped in the room left
    (a long hint must not widen the window past a laptop's screen)."""
    row = QHBoxLayout()
    for control in controls:
        row.addWidget(QLabel(control, parent) if isinstance(control, str) else control)
    label = QLabel(hint, parent)
    label.setWordWrap(True)
    row.addWidget(label, 1)
    return row


def tab_body(tab: QWidget, row: QHBoxLayout, upper: QWidget, lower: QWidget, sizes: tuple[int, int]) -> QVBoxLayout:
    """``tab``'s layout: ``row`` over ``upper`` and ``lower`` in a vertical splitter; returned so the
    tab can add a message line below."""
    split = QSplitter(Qt.Orientation.Vertical, tab)
    split.addWidget(upper)
    split.addWidget(lower)
    split.setSizes(list(sizes))
    layout = QVBoxLayout(tab)
    layout.addLayout(row)
    layout.addWidget(split, 1)
    return layout


def column(parent: QWidget, margins: int | tuple[int, int, int, int], *items) -> QVBoxLayout:
    """``parent``'s vertical layout of ``items`` (widgets or layouts, top to bottom), the last taking
    the height the others leave."""
    layout = QVBoxLayout(parent)
    layout.setContentsMargins(*((margins,) * 4 if isinstance(margins, int) else margins))
    for i, item in enumerate(items):
        stretch = 1 if i == len(items) - 1 else 0
        if isinstance(item, QWidget):
            layout.addWidget(item, stretch)
        else:
            layout.addLayout(item, stretch)
    return layout


def paint_with(widget: QWidget, paint) -> None:
    """Call ``paint(painter)`` with a painter on ``widget``, ended whatever ``paint`` raises."""
    painter = QPainter(widget)
    try:
        paint(painter)
    finally:
        painter.end()
