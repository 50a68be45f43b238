"""Where ATC runs: "This computer" (when atc is on PATH here) or one of the SSH hosts. A caller
for whom the first choice means something else (the Quantize page: write the Ascend files only)
names it and its hints (:class:`Choices`).

The hosts come from ``hosts.toml`` (the Hosts panel and ``studio ssh add`` write it); the list is
re-read when the user switches to ATC mode or presses the refresh button, so a host added in the
Hosts panel shows up without restarting.
"""

from __future__ import annotations

import shutil

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QToolButton, QWidget

from dataclasses import dataclass

from studio.core.errors import UserError

LOCAL = "local"
LOCAL_LABEL = "This computer"


@dataclass(frozen=True)
class Choices:
    """What the picker offers: the first choice's label (``always``: offered even without atc here),
    the hint under it, and the hint under a host."""

    here: str = LOCAL_LABEL
    always: bool = False
    here_hint: str = "runs atc from PATH on this computer"
    host_hint: str = "inputs are uploaded, the .om comes back next to Output"


ATC = Choices()


class HostPicker(QWidget):
    """A combo of places that can run ATC; ``current_host()`` is None for this computer.

    Signals:
        changed(): the choice changed.
    """

    changed = Signal()

    def __init__(self, parent: QWidget | None = None, choices: Choices = ATC):
        super().__init__(parent)
        self.choices = choices
        self.combo = QComboBox(self)
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.combo.currentIndexChanged.connect(self._on_index_changed)
        refresh = QToolButton(self)
        refresh.setText("↻")
        refresh.setToolTip("Read the host list again (hosts are added in the Hosts panel or with `studio ssh add`)")
        refresh.clicked.connect(self.refresh)
        self.hint = QLabel(self)
        self.hint.setStyleSheet("color: palette(mid);")
        self.hint.setWordWrap(True)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.combo)
        row.addWidget(refresh)
        row.addWidget(self.hint, 1)
        self.refresh()

    def refresh(self) -> None:
        """Fill the combo from the local atc and hosts.toml, keeping the current choice if it is still there."""
        previous = self.combo.currentData()
        try:
            hosts = self._context().reload().hosts
        except Exception as exc:  # a broken hosts.toml must not break the wizard; say so instead
            hosts = {}
            self.hint.setText(f"hosts.toml cannot be read: {exc}")
        self.combo.blockSignals(True)
        self.combo.clear()
        if self.choices.always or shutil.which("atc"):
            self.combo.addItem(self.choices.here, LOCAL)
        for name, entry in sorted(hosts.items()):
            self.combo.addItem(name, name)
            index = self.combo.count() - 1
            self.combo.setItemData(index, f"{entry.address}\ntoolkit: {entry.toolkit or '(default)'}",
                                   Qt.ItemDataRole.ToolTipRole)
        index = self.combo.findData(previous)
        self.combo.setCurrentIndex(index if index >= 0 else 0)
        self.combo.blockSignals(False)
        self._update_hint()
        self.changed.emit()

    def select(self, name: str) -> bool:
        """Choose a host by name (or ``"local"``); False when it is not in the list."""
        index = self.combo.findData(name)
        if index >= 0:
            self.combo.setCurrentIndex(index)
        return index >= 0

    def current_name(self) -> str | None:
        """The chosen host name, ``"local"``, or None when nothing can run ATC."""
        return self.combo.currentData()

    def current_host(self):
        """The chosen HostEntry, None for this computer; UserError when there is nowhere to run."""
        name = self.current_name()
        if name is None:
            raise UserError("No place to run ATC: it is not installed here and no SSH host is set up",
                            "page 1, Run ATC on", "Add the Ascend host in the Hosts panel (or `studio ssh add NAME "
                            "--host HOST --toolkit DIR`), then pick it here; or run the command shown in the log on the host.")
        if name == LOCAL:
            return None
        return self._context().entry(name)

    def _context(self):
        """The panel's HostContext (the window's one), found through the parent widgets."""
        widget = self.parent()
        while widget is not None and not hasattr(type(widget), "host_context"):
            widget = widget.parent()
        if widget is None:  # a picker on its own (tests): a private context
            if getattr(self, "_own_context", None) is None:
                from studio.remote.context import HostContext

                self._own_context = HostContext()
            return self._own_context
        return widget.host_context

    def _on_index_changed(self, _index: int) -> None:
        self._update_hint()
        self.changed.emit()

    def _update_hint(self) -> None:
        name = self.current_name()
        if name is None:
            self.hint.setText("atc is not installed here: add your Ascend host in the Hosts panel.")
        elif name == LOCAL:
            self.hint.setText(self.choices.here_hint)
        else:
            self.hint.setText(self.choices.host_hint)
        self.combo.setToolTip(self.combo.itemData(self.combo.currentIndex(), Qt.ItemDataRole.ToolTipRole) or self.hint.text())
