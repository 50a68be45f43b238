"""Ask for a password or passphrase from a worker thread, with a dialog on the GUI thread.

SSH logins run in jobs; when one needs a secret the job thread calls :class:`GuiSecretPrompt`,
which shows a password dialog on the GUI thread and waits for the answer. The answer goes to
the OS keyring only after the login worked (see ``studio.remote.secrets``), never to a file.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, QThread, Signal
from PySide6.QtWidgets import QInputDialog, QLineEdit, QWidget

from studio.remote.secrets import SecretAsker, keyring_available


class GuiSecretPrompt(QObject):
    """A ``prompt(kind, prompt)`` callable usable from any thread."""

    _ask = Signal(str, str, object)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._parent = parent
        self._ask.connect(self._on_ask)

    def __call__(self, kind: str, prompt: str) -> str | None:
        if QThread.currentThread() is self.thread():
            return self._show(kind, prompt)
        box: dict = {"done": threading.Event()}
        self._ask.emit(kind, prompt, box)
        box["done"].wait()
        return box.get("answer")

    def asker(self) -> SecretAsker:
        """The ``ask_secret`` for one connection: keyring first, then this dialog."""
        return SecretAsker(self)

    def _on_ask(self, kind: str, prompt: str, box: dict) -> None:
        try:
            box["answer"] = self._show(kind, prompt)
        finally:
            box["done"].set()

    def _show(self, kind: str, prompt: str) -> str | None:
        where = "kept in the system keyring" if keyring_available() else \
            "not stored: no system keyring here, so it is asked each time"
        text, ok = QInputDialog.getText(self._parent, f"SSH {kind}", f"{prompt}\n({where})",
                                        QLineEdit.EchoMode.Password)
        return text if ok else None
