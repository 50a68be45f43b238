"""Moving the keyboard focus into a part of the window (a dock brought to the front)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget


def focus_into(container: QWidget) -> QWidget | None:
    """Give the keyboard to the first widget inside ``container`` that takes it by Tab (as Tab
    would from the container's edge); returns that widget, or None when none can take it."""
    start = container.widget() if hasattr(container, "widget") and callable(container.widget) else container
    start = start or container
    widget = start
    for _ in range(2000):  # the focus chain is a ring over the whole window
        if (widget is not container and container.isAncestorOf(widget) and widget.isVisible()
                and widget.isEnabled() and widget.focusPolicy() & Qt.FocusPolicy.TabFocus):
            widget.setFocus(Qt.FocusReason.OtherFocusReason)
            return widget
        widget = widget.nextInFocusChain()
        if widget is start:
            break
    return None
