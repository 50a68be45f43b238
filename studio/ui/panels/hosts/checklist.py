"""The "Test connection" checklist: one row per check, coloured by outcome, the fix underneath."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem, QWidget

from studio.targets.probe import ProbeResult

MARKS = {"ok": ("✔ ok", "#3a9d23"), "missing": ("○ missing", "#c98a00"), "failed": ("✘ failed", "#d9534f"),
         "skipped": ("– skipped", "#8a8a8a")}


class Checklist(QTreeWidget):
    """Shows a ProbeResult; missing and failed items carry their fix as a child row and tooltip."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setHeaderLabels(["Check", "Result", "Detail"])
        self.setRootIsDecorated(True)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        header = self.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.result: ProbeResult | None = None

    def show_result(self, result: ProbeResult) -> None:
        self.clear()
        self.result = result
        for item in result.items:
            mark, colour = MARKS[item.status]
            row = QTreeWidgetItem([item.label, mark, item.detail])
            row.setForeground(1, QBrush(QColor(colour)))
            row.setData(0, Qt.ItemDataRole.UserRole, item.key)
            tip = item.detail + (f"\nfix: {item.fix}" if item.fix else "")
            for column in range(3):  # long details are never cut without a way to read them
                row.setToolTip(column, tip)
            if item.fix and item.status in ("missing", "failed"):
                fix = QTreeWidgetItem(["", "fix", item.fix])
                fix.setToolTip(2, item.fix)
                fix.setForeground(1, QBrush(QColor(colour)))
                row.addChild(fix)
            self.addTopLevelItem(row)
            row.setExpanded(item.status == "failed")

    def status_of(self, key: str) -> str | None:
        """The shown status of one check ("ok", "missing", ...), for tests and scripts."""
        if self.result is None:
            return None
        return self.result.item(key).status
