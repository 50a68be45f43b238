"""Small layout parts the cluster panel's tabs share: a titled box and a centred message."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget


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
