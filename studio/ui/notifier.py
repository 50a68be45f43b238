"""One funnel for every error: job failures, uncaught exceptions on any thread, Qt warnings.

Each error becomes a :class:`Notice` — a short message for people and the full details
(traceback, log file path) behind a "Details" button. Reports may come from any thread; a
queued signal brings them to the GUI thread before anything is shown.
"""

from __future__ import annotations

import logging
import sys
import threading
import traceback
from dataclasses import dataclass
from types import TracebackType

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QMessageBox, QWidget

from studio.core.errors import Cancelled, StudioError, ToolUnavailable, UserError
from studio.core.logs import log_file_path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Notice:
    """An error as the user sees it."""

    title: str
    message: str
    details: str
    expected: bool
    """True for errors the user can fix (UserError and friends): no traceback needed."""


def notice_from_exception(exc: BaseException, tb_text: str = "", context: str = "") -> Notice:
    """Turn an exception into a Notice: user errors keep their message; bugs say so and keep the trace."""
    tb_text = tb_text or "".join(traceback.format_exception(exc))
    where_log = f"Log file: {log_file_path()}"
    title = context or "Studio"
    if isinstance(exc, (UserError, ToolUnavailable)):
        return Notice(title, str(exc), f"{where_log}\n\n{tb_text}", expected=True)
    if isinstance(exc, StudioError):
        return Notice(title, str(exc), f"{where_log}\n\n{tb_text}", expected=True)
    summary = f"Unexpected error: {type(exc).__name__}: {exc}".strip()
    message = f"{summary}\n\nThis is a bug in Studio. The details and the log file say where it happened."
    return Notice(title, message, f"{where_log}\n\n{tb_text}", expected=False)


class Notifier(QObject):
    """Receives errors from anywhere and shows them, one dialog at a time, on the GUI thread.

    Signals:
        noticed(Notice): emitted on the GUI thread for every error (the status bar listens).
    """

    noticed = Signal(object)
    _incoming = Signal(object)

    def __init__(self, parent_widget: QWidget | None = None, show_dialogs: bool = True):
        super().__init__()
        self.parent_widget = parent_widget
        self.show_dialogs = show_dialogs
        self.history: list[Notice] = []
        self._queue: list[Notice] = []
        self._dialog: QMessageBox | None = None
        self._previous_hooks: tuple | None = None
        self._incoming.connect(self._on_incoming, Qt.ConnectionType.QueuedConnection)

    # ---- reporting (any thread)
    def report(self, notice: Notice) -> None:
        """Show ``notice``; safe to call from any thread."""
        self._incoming.emit(notice)

    def report_exception(self, exc: BaseException, tb_text: str = "", context: str = "") -> None:
        """Show an exception (a Cancelled is ignored: the user asked for it)."""
        if isinstance(exc, Cancelled):
            return
        self.report(notice_from_exception(exc, tb_text, context))

    # ---- global hooks
    def install_hooks(self) -> None:
        """Route ``sys.excepthook`` and ``threading.excepthook`` here."""
        self._previous_hooks = (sys.excepthook, threading.excepthook)
        sys.excepthook = self._sys_hook
        threading.excepthook = self._thread_hook

    def uninstall_hooks(self) -> None:
        """Put the previous hooks back."""
        if self._previous_hooks:
            sys.excepthook, threading.excepthook = self._previous_hooks
            self._previous_hooks = None

    def _sys_hook(self, kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            sys.__excepthook__(kind, exc, tb)
            return
        text = "".join(traceback.format_exception(kind, exc, tb))
        log.error("uncaught exception:\n%s", text)
        self.report_exception(exc, text)

    def _thread_hook(self, args: threading.ExceptHookArgs) -> None:
        if args.exc_value is None:
            return
        text = "".join(traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback))
        name = args.thread.name if args.thread else "?"
        log.error("uncaught exception in thread %s:\n%s", name, text)
        self.report_exception(args.exc_value, text, context=f"Background thread {name}")

    # ---- showing (GUI thread)
    @Slot(object)
    def _on_incoming(self, notice: Notice) -> None:
        self.history.append(notice)
        self.noticed.emit(notice)
        if not self.show_dialogs:
            return
        self._queue.append(notice)
        if self._dialog is None:
            self._show_next()

    def _show_next(self) -> None:
        if not self._queue:
            self._dialog = None
            return
        notice = self._queue.pop(0)
        box = QMessageBox(self.parent_widget)
        box.setIcon(QMessageBox.Icon.Warning if notice.expected else QMessageBox.Icon.Critical)
        box.setWindowTitle(notice.title)
        box.setText(notice.message)
        box.setDetailedText(notice.details)  # adds the "Show Details..." button
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.finished.connect(self._on_dialog_closed)
        self._dialog = box
        box.open()  # window-modal, never blocks the event loop

    def _on_dialog_closed(self) -> None:
        self._dialog = None
        self._show_next()
