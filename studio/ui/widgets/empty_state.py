"""The one look of a panel with nothing to show yet: what is missing, and the button that fixes it.

Every panel's empty state reads the same way: a title ("No SSH host yet"), one or two lines on
what the panel will show, and the GUI actions that get there ("Add a host…"), top-left, in the
style module's sizes. A CLI equivalent may follow in the text, never instead of the button.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from studio.ui import style


class EmptyState(QWidget):
    """Title, text and action buttons for a panel (or a part of one) that has nothing to show."""

    def __init__(self, title: str, text: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("empty_state")
        self.title_label = QLabel(title, self)
        self.title_label.setFont(style.scaled_font(self, style.TITLE, bold=True))
        self.title_label.setWordWrap(True)
        self.text_label = QLabel(text, self)
        self.text_label.setWordWrap(True)
        self.text_label.setTextFormat(Qt.TextFormat.RichText)
        self.text_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text_label.setVisible(bool(text))
        style.muted(self.text_label)
        self.buttons: dict[str, QPushButton] = {}
        self._row = QHBoxLayout()
        self._row.setSpacing(style.MARGIN)
        self._row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(style.SECTION, style.SECTION, style.SECTION, style.SECTION)
        layout.setSpacing(style.MARGIN)
        layout.addWidget(self.title_label)
        layout.addWidget(self.text_label)
        layout.addLayout(self._row)
        layout.addStretch(1)

    def add_action(self, text: str, slot: Callable[[], object], tip: str = "") -> QPushButton:
        """A button under the text (in the order added); the first one is the default action."""
        button = QPushButton(text, self)
        button.setToolTip(tip)
        button.clicked.connect(lambda _=False: slot())
        self._row.insertWidget(self._row.count() - 1, button)
        self.buttons[text] = button
        return button

    def text(self) -> str:
        """The title and the text, one paragraph each (as a reader of the panel sees them)."""
        return f"{self.title_label.text()}\n{self.text_label.text()}".strip()

    def set_message(self, title: str, text: str = "") -> None:
        """Change what the empty state says (e.g. once a host exists but no terminal is open)."""
        self.title_label.setText(title)
        self.text_label.setText(text)
        self.text_label.setVisible(bool(text))
