"""A read-only window with a unified diff, added lines green and removed lines red."""

from __future__ import annotations

from PySide6.QtGui import QColor, QFontDatabase, QSyntaxHighlighter, QTextCharFormat
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QPlainTextEdit, QVBoxLayout, QWidget


class _DiffHighlighter(QSyntaxHighlighter):
    def __init__(self, document):
        super().__init__(document)
        self.formats = {}
        for prefix, colour in (("+", QColor(46, 160, 67)), ("-", QColor(218, 54, 51)), ("@", QColor(56, 132, 244))):
            fmt = QTextCharFormat()
            fmt.setForeground(colour)
            self.formats[prefix] = fmt

    def highlightBlock(self, text: str) -> None:  # Qt override
        if text.startswith(("+++", "---")):
            return
        fmt = self.formats.get(text[:1])
        if fmt is not None:
            self.setFormat(0, len(text), fmt)


class DiffDialog(QDialog):
    """Shows ``text`` (a unified diff, or a sentence when there is none)."""

    def __init__(self, title: str, text: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.view = QPlainTextEdit(self)
        self.view.setReadOnly(True)
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.view.setPlainText(text or "The local and remote copies are identical.")
        self._highlighter = _DiffHighlighter(self.view.document())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.view, 1)
        layout.addWidget(buttons)
        self.resize(900, 600)
