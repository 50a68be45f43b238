"""The small widgets the Quantize page's form is made of: a combo of words, a number box, a line
edit with browse buttons after it, widgets side by side in one field, a push button with its tip
and slot, and the file dialog that fills a line edit."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QToolButton,
    QWidget,
)

from studio.ui import style


def combo(parent: QWidget, items, tip: str | None = None) -> QComboBox:
    """A combo of ``items`` (words, or (text, data) pairs)."""
    box = QComboBox(parent)
    for item in items:
        text, data = item if isinstance(item, tuple) else (item, item)
        box.addItem(text, data)
    if tip:
        box.setToolTip(tip)
    return box


def spin(parent: QWidget, low: float, high: float, decimals: int, value: float, step: float,
         suffix: str = "") -> QDoubleSpinBox:
    """A number box from ``low`` to ``high`` showing ``value``."""
    box = QDoubleSpinBox(parent)
    box.setRange(low, high)
    box.setDecimals(decimals)
    box.setSingleStep(step)
    box.setValue(value)
    box.setSuffix(suffix)
    return box


def with_buttons(parent: QWidget, edit: QLineEdit, *buttons) -> QWidget:
    """``edit`` with small browse buttons ((text, slot) pairs) after it, as one form field."""
    box = QWidget(parent)
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(style.GAP)
    row.addWidget(edit, 1)
    for text, slot in buttons:
        button = QToolButton(box)
        button.setText(text)
        button.clicked.connect(slot)
        row.addWidget(button)
    return box


def push(parent: QWidget, text: str, slot: Callable, tip: str | None = None) -> QPushButton:
    """A push button that calls ``slot`` when clicked."""
    button = QPushButton(text, parent)
    if tip:
        button.setToolTip(tip)
    button.clicked.connect(slot)
    return button


def line(parent: QWidget, placeholder: str) -> QLineEdit:
    """An empty line edit that says what goes in it."""
    edit = QLineEdit(parent)
    edit.setPlaceholderText(placeholder)
    edit.setToolTip(placeholder)  # a placeholder cut by a narrow form is one hover away
    return edit


def side_by_side(parent: QWidget, *widgets: QWidget) -> QWidget:
    """``widgets`` in one row, as one form field (the rest of the width left empty)."""
    box = QWidget(parent)
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(style.GAP)
    for widget in widgets:
        row.addWidget(widget)
    row.addStretch(1)
    return box


def pick_file(parent: QWidget, edit: QLineEdit, filter_text: str) -> None:
    """Ask for an existing file; its path goes into ``edit`` (nothing changes on cancel)."""
    path, _ = QFileDialog.getOpenFileName(parent, "Choose a file", "", filter_text)
    if path:
        edit.setText(path)
