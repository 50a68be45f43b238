"""One run's console: the command, its output as it comes, Stop, and how it ended."""

from __future__ import annotations

import threading
import time
from collections import deque

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QFont, QTextCursor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from studio.ui.jobs import tee

MAX_LINES = 20000
DRAIN_MS = 50


class RunConsole(QWidget):
    """The console of one run. ``ended(console)`` when the run is over, whatever the outcome."""

    ended = Signal(object)
    open_requested = Signal(object)  # the folder a run's outputs were fetched into

    def __init__(self, name: str, where: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.name = name
        self.where = where
        self.handle = None
        self.outcome = None
        self.state = "starting"
        self._lines: deque[str] = deque()
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self.header = QLabel(f"{name} on {where}", self)
        self.header.setTextInteractionFlags(self.header.textInteractionFlags())
        self.status = QLabel("starting…", self)
        self.stop_button = QPushButton("Stop", self)
        self.stop_button.setToolTip("Stop the run (kills its process group, here or on the host)")
        self.stop_button.clicked.connect(self.stop)
        self.text = QPlainTextEdit(self)
        self.text.setReadOnly(True)
        self.text.setMaximumBlockCount(MAX_LINES)
        font = QFont("monospace")
        font.setStyleHint(QFont.StyleHint.TypeWriter)
        self.text.setFont(font)
        top = QHBoxLayout()
        top.addWidget(self.header, 1)
        top.addWidget(self.status)
        top.addWidget(self.stop_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        from studio.ui.panels.run.results_view import RunResults

        self.results = RunResults(self)
        self.results.open_requested.connect(self.open_requested)
        layout.addLayout(top)
        layout.addWidget(self.text, 2)
        layout.addWidget(self.results, 1)
        self._timer = QTimer(self)
        self._timer.setInterval(DRAIN_MS)
        self._timer.timeout.connect(self.drain)

    def wrap(self, job):
        """The job to hand to the runner: ``job`` with its output copied into this console."""
        return tee(job, self._lines, self._lock)

    def attach(self, handle) -> None:
        """Follow a started job's handle."""
        self.handle = handle
        self.state = "running"
        self.status.setText("running…")
        handle.finished.connect(self._on_finished)
        handle.failed.connect(self._on_failed)
        handle.cancelled.connect(self._on_cancelled)
        self._timer.start()

    def stop(self) -> None:
        if self.handle is not None and self.handle.active:
            self.status.setText("stopping…")
            self.handle.cancel()

    def drain(self) -> None:
        """Move waiting output lines into the view (one paint for many lines)."""
        with self._lock:
            lines = list(self._lines)
            self._lines.clear()
        if lines:
            at_end = self.text.verticalScrollBar().value() >= self.text.verticalScrollBar().maximum() - 2
            cursor = QTextCursor(self.text.document())
            cursor.movePosition(QTextCursor.MoveOperation.End)
            if not self.text.document().isEmpty():
                cursor.insertText("\n")
            cursor.insertText("\n".join(lines))
            if at_end:
                self.text.verticalScrollBar().setValue(self.text.verticalScrollBar().maximum())

    def output(self) -> str:
        """Everything shown so far."""
        self.drain()
        return self.text.toPlainText()

    def _finish(self, state: str, text: str) -> None:
        self._timer.stop()
        self.drain()
        self.state = state
        self.status.setText(text)
        self.stop_button.setEnabled(False)
        self.ended.emit(self)

    def _on_finished(self, outcome) -> None:
        self.outcome = outcome
        if hasattr(outcome, "exit_code"):  # a run configuration
            self.results.show_outcome(outcome)
            state = "ok" if outcome.exit_code == 0 else "failed"
            self._finish(state, f"exit code {outcome.exit_code} · {outcome.duration_s:.2f} s")
        else:  # a profile / dump / benchmark job
            self._finish("ok", f"done · {time.monotonic() - self._started:.2f} s")

    def _on_failed(self, exc, _text: str) -> None:
        self._append_now(f"error: {exc}")
        self._finish("error", "error")

    def _on_cancelled(self) -> None:
        self._finish("stopped", f"stopped after {time.monotonic() - self._started:.2f} s")

    def _append_now(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)
