"""The window's status bar: a message that fits the room left of the job status, whole words kept.

QStatusBar clips a long message where its permanent widgets begin (the job status, when a job
runs): the user reads "… is a per-pixel map; givThumbnails: queued". Here the message is shortened
with :func:`fit_text` to the room it has, refitted when that room changes (a job starts or ends,
the window is resized), and the full text is the bar's tooltip.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QTimer
from PySide6.QtWidgets import QStatusBar, QWidget

from studio.ui.widgets.elided_label import fit_text

GAP = 12  # px between the message and the first permanent widget (the style's margin and a space)


class FittingStatusBar(QStatusBar):
    """A status bar whose temporary messages are shortened to fit; ``full_message()`` has the text."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._full = ""
        self._shown = ""
        self._deadline: float | None = None  # monotonic time the message goes (None: stays)
        self._permanent: list[QWidget] = []
        self.messageChanged.connect(self._on_message_changed)

    def full_message(self) -> str:
        """The message as it was given (``currentMessage()`` is what fits)."""
        return self._full if self.currentMessage() else ""

    def showMessage(self, text: str, timeout: int = 0) -> None:  # Qt override (called from Python)
        self._full = text or ""
        self._deadline = time.monotonic() + timeout / 1000 if timeout > 0 else None
        self._shown = ""
        self._refit(force=True)

    def addPermanentWidget(self, widget: QWidget, stretch: int = 0) -> None:  # Qt override
        super().addPermanentWidget(widget, stretch)
        self._permanent.append(widget)
        widget.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:  # Qt override: a permanent widget came, went or grew
        if event.type() in (QEvent.Type.Show, QEvent.Type.Hide, QEvent.Type.Resize):
            QTimer.singleShot(0, self, self._refit)  # after the bar's layout has placed it
        return False

    def resizeEvent(self, event) -> None:  # Qt override
        super().resizeEvent(event)
        self._refit()

    def message_room(self) -> int:
        """The px a message has: up to the first permanent widget shown (or the size grip)."""
        shown = [w.geometry().left() for w in self._permanent if w.isVisible()]
        right = min(shown) if shown else self.width() - (16 if self.isSizeGripEnabled() else 0)
        return max(0, right - GAP)

    def _refit(self, force: bool = False) -> None:
        if not self._full or (not force and self.currentMessage() != self._shown):
            return  # nothing of ours on show (it timed out, or Qt showed a tip of its own)
        remaining = 0
        if self._deadline is not None:
            remaining = int((self._deadline - time.monotonic()) * 1000)
            if remaining <= 0:
                return
        shown = fit_text(self._full, self.fontMetrics(), self.message_room())
        if shown == self._shown and not force:
            return
        self._shown = shown
        super().showMessage(shown, remaining)
        self.setToolTip(self._full if shown != self._full else "")

    def _on_message_changed(self, text: str) -> None:
        if text != self._shown:  # cleared, or replaced by Qt itself (a menu's status tip)
            self._full, self._shown = ("", "") if not text else (text, text)
            self.setToolTip("")
