"""Under a finished run's console: the metrics it printed as a table, and its fetched outputs."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QPushButton, QTableWidget, QTableWidgetItem, QWidget

from studio.ui.numfmt import number
from studio.ui.widgets import boxes

MAX_ROWS = 5000  # a table item per cell: a 10,000-image run lists its first rows, --json has all


class RunResults(QWidget):
    """``open_requested(Path)`` when the user opens the fetched outputs' folder."""

    open_requested = Signal(object)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.folder: Path | None = None
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.open_button = QPushButton("Open results", self)
        self.open_button.setToolTip("Open the folder the run's outputs were fetched into (its .npy in Accuracy)")
        self.open_button.clicked.connect(lambda: self.folder and self.open_requested.emit(self.folder))
        self.table = QTableWidget(self)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        boxes.column(self, boxes.row(self, (self.summary, 1), self.open_button), (self.table, 1))
        self.hide()

    def show_outcome(self, outcome) -> None:
        """Show the metrics and fetched files of a RunOutcome (hidden when it has neither)."""
        metrics, fetched = outcome.metrics, outcome.fetched
        self.folder = outcome.results
        parts = []
        if metrics.rows:
            parts.append(f"{len(metrics.rows)} line(s) with metrics")
        if fetched:
            parts.append(f"{len(fetched)} output file(s) fetched into {outcome.results}")
        self.summary.setText("; ".join(parts))
        self.open_button.setVisible(bool(fetched))
        self._fill(metrics)
        self.table.setVisible(bool(metrics.rows))
        self.setVisible(bool(parts))

    def _fill(self, metrics) -> None:
        means = metrics.means()
        rows = metrics.rows[:MAX_ROWS]
        self.table.setColumnCount(1 + len(metrics.columns))
        self.table.setHorizontalHeaderLabels(["", *metrics.columns])
        self.table.setRowCount(len(rows) + (1 if means else 0))
        for r, row in enumerate(rows):
            self.table.setItem(r, 0, QTableWidgetItem(row.label))
            for c, column in enumerate(metrics.columns, start=1):
                if column in row.values:
                    self.table.setItem(r, c, QTableWidgetItem(number(row.values[column])))
        if means:
            self.table.setItem(len(rows), 0, QTableWidgetItem(f"mean of {len(metrics.rows)}"))
            for c, column in enumerate(metrics.columns, start=1):
                if column in means:
                    self.table.setItem(len(rows), c, QTableWidgetItem(number(means[column])))
        self.table.resizeColumnsToContents()
