"""Rows and columns of widgets in one call: the layout lines every panel and tab otherwise repeats."""

from __future__ import annotations

from PySide6.QtWidgets import QBoxLayout, QHBoxLayout, QLabel, QLayout, QVBoxLayout, QWidget


def row(parent: QWidget, *items, margins: tuple[int, int, int, int] | None = None) -> QHBoxLayout:
    """A row of ``items`` (see :func:`column`), to be added to another layout."""
    box = QHBoxLayout()
    _fill(box, parent, items, margins)
    return box


def column(parent: QWidget, *items, margins: tuple[int, int, int, int] = (0, 0, 0, 0)) -> QVBoxLayout:
    """``parent``'s own layout: ``items`` top to bottom. An item is a widget, a layout, a text (a
    label of it) or an (item, stretch) pair."""
    box = QVBoxLayout(parent)
    _fill(box, parent, items, margins)
    return box


def _fill(box: QBoxLayout, parent: QWidget, items: tuple, margins) -> None:
    if margins is not None:
        box.setContentsMargins(*margins)
    for item in items:
        item, stretch = item if isinstance(item, tuple) else (item, 0)
        if isinstance(item, str):
            item = QLabel(item, parent)
        if isinstance(item, QLayout):
            box.addLayout(item, stretch)
        else:
            box.addWidget(item, stretch)
