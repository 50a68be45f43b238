"""The parts every small dialog has: an OK / Cancel row, its widgets stacked top to bottom, and text
fields that say what goes in them while empty."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLayout, QLineEdit, QPlainTextEdit, QVBoxLayout, QWidget


def ok_cancel(dialog: QDialog, ok_text: str | None = None) -> QDialogButtonBox:
    """OK and Cancel wired to ``accept`` / ``reject``; OK says ``ok_text`` when given."""
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, dialog)
    if ok_text:
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText(ok_text)
    buttons.accepted.connect(dialog.accept)
    buttons.rejected.connect(dialog.reject)
    return buttons


def stacked(dialog: QDialog, *parts: QWidget | QLayout) -> QVBoxLayout:
    """``dialog``'s layout: ``parts`` (widgets or layouts) top to bottom."""
    layout = QVBoxLayout(dialog)
    for part in parts:
        if isinstance(part, QLayout):
            layout.addLayout(part)
        else:
            layout.addWidget(part)
    return layout


def hinted(parent: QWidget, hint: str, kind: type[QLineEdit] | type[QPlainTextEdit] = QLineEdit,
           max_height: int | None = None) -> QLineEdit | QPlainTextEdit:
    """A text field of ``kind`` (one line, or several: QPlainTextEdit) showing ``hint`` while it is
    empty; at most ``max_height`` pixels tall when given."""
    field = kind(parent)
    field.setPlaceholderText(hint)
    if max_height is not None:
        field.setMaximumHeight(max_height)
    return field
