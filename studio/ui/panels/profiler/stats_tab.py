"""Statistics tab: per-op, per-API, AI Core metrics (op_summary) and the profile's own CSV tables."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QLabel, QPushButton, QWidget

from studio.tools.profiler.model import Trace
from studio.tools.profiler.stats import NameStat
from studio.ui.panels.profiler.state import ready_rows, typed_rows  # built in the loading job
from studio.ui.panels.profiler.table import TableWidget
from studio.ui.widgets import boxes

OP_COLUMNS = ["Name", "Count", "Total (µs)", "Avg (µs)", "Min (µs)", "Max (µs)", "Self (µs)", "Share"]
API_COLUMNS = ["Level", "API", "Count", "Total (µs)", "Avg (µs)", "Min (µs)", "Max (µs)"]
_TABLE_TITLES = {
    "op_summary": "AI Core metrics (op_summary)", "op_statistic": "Op types (op_statistic)",
    "api_statistic": "API statistic (CSV)", "task_time": "Task time", "msprof_tx": "msprof_tx",
    "step_trace": "Step trace",
}


class StatsTab(QWidget):
    """Signals: op_clicked(str) when a row names an op; show_in_graph(str)."""

    op_clicked = Signal(str)
    show_in_graph = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.kind = QComboBox(self)
        self.kind.currentIndexChanged.connect(self._on_kind)
        self.graph_button = QPushButton("Show in graph", self)
        self.graph_button.setEnabled(False)
        self.graph_button.setToolTip("Select this op in the Graph panel (opens the profiled model when known)")
        self.graph_button.clicked.connect(lambda: self.show_in_graph.emit(self._current_op))
        self.counted = QLabel("", self)  # which iterations the per-op rows count
        self.counted.setWordWrap(True)
        self.counted.setVisible(False)
        self.table = TableWidget("Open a profile to see per-op and per-API statistics here.", self)
        self.table.row_activated.connect(self._on_row)
        boxes.column(self, boxes.row(self, "Table:", (self.kind, 1), self.graph_button), self.counted, (self.table, 1),
               margins=(4, 4, 4, 4))
        self._current_op = ""
        self._sources: list[tuple[str, list[str], list[list], str | None, tuple, int]] = []

    def show_stats(self, trace: Trace, by_name: list[NameStat], apis: list[dict],
                   tables: dict[str, list[list]] | None = None, ready: dict[str, list[list]] | None = None,
                   counted: str = "") -> None:
        """Fill the table choices for ``trace``; ``tables`` are its summary tables' rows with
        numbers already converted (:func:`typed_rows`), ``ready`` the per-op and per-API rows
        (:func:`ready_rows`): both are built in the loading job, since for a trace with many op
        names building them here would hold up the window. ``counted`` says which slices the
        per-op rows count (the measured iterations, warm-ups left out)."""
        self._sources = []
        self.counted.setText(f"Per op: {counted}" if counted else "")
        self.counted.setVisible(bool(counted))
        ready = ready if ready is not None else ready_rows(by_name, apis)
        if by_name:
            # by total; Share = share of op self time (the run's own ranges are not ops, not listed)
            self._sources.append(("Per op / slice name", OP_COLUMNS, ready["op"], None, ("Share",), 0))
        if apis:
            self._sources.append(("Per API", API_COLUMNS, ready["api"], None, (), 1))  # by total already
        for kind, table in trace.tables.items():
            rows = tables[kind] if tables and kind in tables else typed_rows(table.rows)
            name_col = next((i for i, c in enumerate(table.columns) if c in ("Op Name", "OP Type", "API Name")), -1)
            self._sources.append((_TABLE_TITLES.get(kind, kind), table.columns, rows, None, (), name_col))
        self.kind.blockSignals(True)
        self.kind.clear()
        self.kind.addItems([s[0] for s in self._sources])
        self.kind.blockSignals(False)
        self._on_kind(0)

    def _on_kind(self, index: int) -> None:
        self.graph_button.setEnabled(False)
        if not 0 <= index < len(self._sources):
            self.table.set_rows([], [])
            return
        _, columns, rows, sort, percent, _ = self._sources[index]
        self.table.set_rows(columns, rows, sort=sort, percent=percent)

    def _on_row(self, row: list) -> None:
        index = self.kind.currentIndex()
        if not 0 <= index < len(self._sources):
            return
        name_col = self._sources[index][5]
        if name_col < 0:
            return
        self._current_op = str(row[name_col])
        self.graph_button.setEnabled(True)
        self.graph_button.setToolTip(f"Select {self._current_op} in the Graph panel")
        self.op_clicked.emit(self._current_op)
