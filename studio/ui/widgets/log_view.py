"""The log panel: live log records, and the path of the log file, always visible."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QFont, QGuiApplication
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QToolButton, QVBoxLayout, QWidget

MAX_LINES = 5000


class _QtLogBridge(QObject):
    record = Signal(str, int)


class _SignalHandler(logging.Handler):
    """A logging handler that forwards formatted records through a Qt signal (any thread)."""

    def __init__(self, bridge: _QtLogBridge):
        super().__init__(logging.INFO)
        self.bridge = bridge
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.bridge.record.emit(self.format(record), record.levelno)
        except RuntimeError:  # the widget is gone (shutdown); nothing to show it in
            pass


class LogView(QWidget):
    """Shows Studio's log records as they happen, with the log file's path and buttons to reach it."""

    def __init__(self, log_file: Path, parent: QWidget | None = None):
        super().__init__(parent)
        self.log_file = log_file
        path_label = QLabel(f"Log file: <a href='{log_file.as_uri()}'>{log_file}</a>", self)
        path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        path_label.setToolTip(str(log_file))
        path_label.linkActivated.connect(lambda _: self._open_folder())
        copy = QToolButton(self)
        copy.setText("Copy path")
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(str(log_file)))
        folder = QToolButton(self)
        folder.setText("Open folder")
        folder.clicked.connect(self._open_folder)
        top = QHBoxLayout()
        top.setContentsMargins(6, 4, 6, 0)
        top.addWidget(path_label, 1)
        top.addWidget(copy)
        top.addWidget(folder)

        self.text = QPlainTextEdit(self)
        self.text.setReadOnly(True)
        self.text.setMaximumBlockCount(MAX_LINES)  # bounded memory however long Studio runs
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        font = QFont("monospace")
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.text.setFont(font)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.text, 1)

        self._bridge = _QtLogBridge(self)
        self._bridge.record.connect(self._append)
        self._handler = _SignalHandler(self._bridge)
        logging.getLogger("studio").addHandler(self._handler)
        self.destroyed.connect(lambda: logging.getLogger("studio").removeHandler(self._handler))

    def detach(self) -> None:
        """Stop receiving records (called when the window closes)."""
        logging.getLogger("studio").removeHandler(self._handler)

    def _append(self, line: str, level: int) -> None:
        if level >= logging.ERROR:
            line = f"!! {line}"
        self.text.appendPlainText(line)

    def _open_folder(self) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.log_file.parent)))
