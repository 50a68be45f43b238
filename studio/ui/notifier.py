"""The window's viewer of the notice board: dialogs for errors, every notice to the status line.

Notices are posted on :mod:`studio.core.notices`'s board from any thread (job failures by the
JobRunner, uncaught exceptions by the hooks below, engines and commands themselves). The notifier
subscribes to the board and hands each notice to the GUI thread with a queued signal before
anything is shown. ``Notice`` and ``notice_from_exception`` live in the core; they are imported
here too for older callers.
"""

from __future__ import annotations

import logging
import sys
import threading
import traceback
import weakref
from types import TracebackType

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QMessageBox, QWidget

from studio.core import notices
from studio.core.notices import Notice, NoticeBoard, Severity, notice_from_exception

__all__ = ["Notice", "Notifier", "notice_from_exception"]

log = logging.getLogger(__name__)


class Notifier(QObject):
    """Listens to the notice board and shows what is posted there, on the GUI thread: an error in a
    dialog (one at a time; the same message twice in a row once), every notice through ``noticed``
    (the window's status line listens).

    Signals:
        noticed(Notice): emitted on the GUI thread for every notice posted on the board.
    """

    noticed = Signal(object)
    _incoming = Signal(object)

    def __init__(self, parent_widget: QWidget | None = None, show_dialogs: bool = True,
                 board: NoticeBoard | None = None):
        super().__init__()
        self.parent_widget = parent_widget
        self.show_dialogs = show_dialogs
        self.board = board if board is not None else notices.board
        self.history: list[Notice] = []
        self._queue: list[Notice] = []
        self._dialog: QMessageBox | None = None
        self._previous_hooks: tuple | None = None
        self._incoming.connect(self._on_incoming, Qt.ConnectionType.QueuedConnection)
        # The board holds the relay, the relay only a weak reference: a notifier nobody keeps (a
        # closed window's) is collected and stops listening instead of living on in the board.
        self._unsubscribe = self.board.subscribe(_relay(weakref.ref(self)))
        self.destroyed.connect(self._unsubscribe)

    def close(self) -> None:
        """Stop listening to the board (a window going away)."""
        self._unsubscribe()

    # ---- reporting (any thread)
    def report(self, notice: Notice) -> None:
        """Post ``notice`` on the board (every subscriber sees it, this notifier too); any thread."""
        self.board.post(notice)

    def report_exception(self, exc: BaseException, tb_text: str = "", context: str = "") -> None:
        """Post an exception on the board (a Cancelled is ignored: the user asked for it)."""
        self.board.post_exception(exc, tb_text, context)

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
        if not self.show_dialogs or notice.severity is not Severity.ERROR:
            return  # warnings and news are for the status line, not for a dialog in the way
        if self._already_shown(notice):
            return  # one cause failing several jobs (a folder's ranks, memory and collectives)
        self._queue.append(notice)
        if self._dialog is None:
            self._show_next()

    def _already_shown(self, notice: Notice) -> bool:
        """True when a dialog with the same text is open or waiting."""
        showing = [self._dialog.text()] if self._dialog is not None else []
        return notice.message in showing + [queued.message for queued in self._queue]

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


def _relay(notifier_ref: weakref.ref):
    """A board subscriber that hands each notice to the notifier's GUI thread (called on any thread)."""

    def relay(notice: Notice) -> None:
        notifier = notifier_ref()
        if notifier is None:
            return
        try:
            notifier._incoming.emit(notice)  # queued: the slot runs on the notifier's thread
        except RuntimeError:  # its Qt half was deleted before the Python half let go
            pass

    return relay
