"""A sortable, filterable table of plain rows, with CSV export and tooltips for long cells.

Sorting and filtering happen in the model with one Python pass over the rows (a sort key per row,
a cached lower-case text per row), not through a QSortFilterProxyModel, whose per-cell calls back
into Python take seconds on the 100k-row op summaries msprof writes. A big table is sorted off the
GUI thread and in pieces (see :func:`sorted_order`): one ``list.sort`` of 100k rows is a single
C call of ~0.4 s during which the GUI thread cannot run, while sorted runs of a few thousand rows
merged by a Python loop let the interpreter switch to it every millisecond.
"""

from __future__ import annotations

import csv
import heapq
import threading
from pathlib import Path
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from studio.core.gc_pause import paused_gc
from studio.ui.numfmt import number


ASYNC_SORT_ROWS = 5_000  # bigger tables are sorted on a thread, in runs of RUN_ROWS
RUN_ROWS = 4_096


def sorted_order(keys: list, reverse: bool = False, run: int = RUN_ROWS) -> list[int]:
    """Indices that sort ``keys`` stably (as ``sorted(range(n), key=keys.__getitem__, reverse=...)``),
    computed as sorted runs of ``run`` items merged in Python, so no C call holds the interpreter
    for more than a few milliseconds."""
    key = keys.__getitem__
    runs = [sorted(range(a, min(a + run, len(keys))), key=key, reverse=reverse) for a in range(0, len(keys), run)]
    if len(runs) <= 1:
        return runs[0] if runs else []
    return list(heapq.merge(*runs, key=key, reverse=reverse))  # stable: ties keep the runs' order


class RowsModel(QAbstractTableModel):
    """Rows of values; numbers sort as numbers, floats show with 3 decimals, shares as %.

    ``all_rows`` holds every row; ``rows`` the ones shown (filtered, in the current sort order).
    Signal ``sorted`` is emitted once the rows are in a requested order (at once for small tables,
    when the background sort is done for big ones).
    """

    sorted = Signal()
    _order_ready = Signal(int, object, object)  # generation, rows it was computed for, rows in order

    def __init__(self, parent=None):
        super().__init__(parent)
        self.columns: list[str] = []
        self.all_rows: list[list[Any]] = []
        self.rows: list[list[Any]] = []
        self.percent_columns: set[int] = set()
        self.colour_column: int = -1  # a signed delta column: red when positive, green when negative
        self._needle = ""
        self._texts: dict[int, str] | None = None
        self._generation = 0  # bumps on every new rows or sort request: late results are dropped
        self._pending: tuple[int, bool] | None = None
        self.sorting = False
        self._order_ready.connect(self._on_order_ready)

    def set_rows(self, columns: list[str], rows: list[list[Any]], percent: tuple[str, ...] = (),
                 colour: str | None = None) -> None:
        self.beginResetModel()
        self._generation += 1
        self.sorting = False
        self.columns, self.all_rows = list(columns), list(rows)
        self.percent_columns = {i for i, c in enumerate(columns) if c in percent}
        self.colour_column = columns.index(colour) if colour in columns else -1
        self._texts = None
        self.rows = self._filtered()
        self.endResetModel()

    def set_filter(self, text: str) -> None:
        """Show only rows with ``text`` (case-insensitive) in any cell."""
        self.beginResetModel()
        self._needle = text.strip().lower()
        self.rows = self._filtered()
        self.endResetModel()

    def _filtered(self) -> list[list[Any]]:
        if not self._needle:
            return self.all_rows  # the same list: sorting it sorts what is shown
        if self._texts is None:  # once per table: one lower-case string per row (values as str)
            self._texts = {id(row): "\t".join(map(str, row)).lower() for row in self.all_rows}
        needle, texts = self._needle, self._texts
        return [row for row in self.all_rows if needle in texts[id(row)]]

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:  # Qt override
        """Sort by ``column``: numbers as numbers, blanks and N/A first (ascending)."""
        if not 0 <= column < len(self.columns):
            return
        descending = order == Qt.SortOrder.DescendingOrder
        if self.sorting and self._pending == (column, descending):
            return  # QTableView asks twice (sort indicator, then sortByColumn): one sort is enough
        self._generation += 1
        self._pending = (column, descending)
        if len(self.all_rows) <= ASYNC_SORT_ROWS:
            self.layoutAboutToBeChanged.emit()
            self.all_rows.sort(key=lambda row: _sort_key(row[column]), reverse=descending)
            self.rows = self._filtered()
            self.layoutChanged.emit()
            self.sorting = False
            self.sorted.emit()
            return
        self.sorting = True
        generation, rows = self._generation, self.all_rows

        def work() -> None:  # a plain thread: Python code and short C calls only
            # 100k key tuples would trigger full collections, which stop every thread (the GUI's
            # too) while they walk all the rows: the collector waits until the sort is done.
            with paused_gc():
                keys = [_sort_key(row[column] if column < len(row) else None) for row in rows]
                ordered = [rows[i] for i in sorted_order(keys, descending)]
                del keys
            try:
                self._order_ready.emit(generation, rows, ordered)
            except RuntimeError:  # the table was closed meanwhile
                pass

        threading.Thread(target=work, name="table-sort", daemon=True).start()

    def _on_order_ready(self, generation: int, rows: list, ordered: list) -> None:
        if generation != self._generation or rows is not self.all_rows:
            return  # new rows or another sort came meanwhile
        # A reset, not layoutChanged: for 100k rows the view's per-row persistent-index bookkeeping
        # of a layout change costs ~0.3 s here; a reset costs nothing (the selection is cleared).
        self.beginResetModel()
        self.all_rows = ordered
        self.rows = self._filtered()
        self.endResetModel()
        self.sorting = False
        self.sorted.emit()

    def rowCount(self, parent=QModelIndex()) -> int:  # Qt override
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # Qt override
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # Qt override
        if orientation == Qt.Orientation.Horizontal and role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return self.columns[section] if section < len(self.columns) else None
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):  # Qt override
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        value = row[index.column()] if index.column() < len(row) else None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.display(value, index.column())
        if role == Qt.ItemDataRole.ToolTipRole:  # long names are never cut without a way to read them
            text = self.display(value, index.column())
            return text if len(text) > 24 else None
        if role == Qt.ItemDataRole.TextAlignmentRole and isinstance(value, (int, float)):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and index.column() == self.colour_column and isinstance(value, (int, float)):
            return QColor("#C62828") if value > 0 else QColor("#2E7D32") if value < 0 else None
        return None

    def display(self, value: Any, column: int) -> str:
        if value is None:
            return "—"
        if isinstance(value, float):
            return f"{value * 100:.2f} %" if column in self.percent_columns else number(value)
        return str(value)


def _sort_key(value: Any) -> tuple:
    if isinstance(value, (int, float)):
        return (1, float(value), "")
    if value is None or value in ("", "N/A"):
        return (0, 0.0, "")
    return (2, 0.0, str(value).lower())


class TableWidget(QWidget):
    """A filter box, the table, a row count and an Export CSV button. Signal row_activated(list)."""

    row_activated = Signal(object)

    def __init__(self, empty_text: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = RowsModel(self)
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText("Filter rows…")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._on_filter)
        self.count = QLabel(self)
        self.export = QPushButton("Export CSV…", self)
        self.export.clicked.connect(self._on_export)
        self.view = QTableView(self)
        self.view.setModel(self.model)
        self.view.setSortingEnabled(True)
        self.view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.view.setAlternatingRowColors(True)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(20)
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.view.horizontalHeader().setStretchLastSection(True)
        self.view.clicked.connect(self._on_clicked)
        self.empty = QLabel(empty_text, self)
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.empty.setStyleSheet("color: palette(mid); padding: 8px;")
        self.note = QLabel(self)  # a line above the table (e.g. an area's compute / communication split)
        self.note.setWordWrap(True)
        self.note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.note.hide()
        self.tools = QHBoxLayout()
        self.tools.addWidget(self.filter, 1)
        self.tools.addWidget(self.count)
        self.tools.addWidget(self.export)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.note)
        layout.addLayout(self.tools)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.empty, 1)
        self.set_rows([], [])

    def set_note(self, text: str) -> None:
        """The line above the table ("" hides it)."""
        self.note.setText(text)
        self.note.setVisible(bool(text))

    def set_rows(self, columns: list[str], rows: list[list[Any]], sort: str | None = None,
                 percent: tuple[str, ...] = (), colour: str | None = None, first_width: int = 320) -> None:
        """Show ``rows``: sorted by column ``sort`` descending when given, else in the given order."""
        header = self.view.horizontalHeader()
        header.blockSignals(True)  # no sort of the old rows on the way
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        header.blockSignals(False)
        self.model.set_rows(columns, rows, percent, colour)
        has_rows = bool(rows)
        self.view.setVisible(has_rows)
        self.empty.setVisible(not has_rows)
        self.export.setEnabled(has_rows)
        if columns:
            self.view.setColumnWidth(0, first_width)
            metrics = self.view.fontMetrics()
            sample = rows[:200]  # enough to size columns, cheap for tables of any length
            for column in range(1, len(columns)):
                texts = [columns[column]] + [self.model.display(r[column], column) for r in sample if column < len(r)]
                longest = sorted(set(texts), key=len)[-4:]  # measuring every cell's text cost 20+ ms
                widest = max(metrics.horizontalAdvance(t) for t in longest) + 12
                self.view.setColumnWidth(column, max(48, min(260, widest)))
        if sort in columns:
            self.view.sortByColumn(columns.index(sort), Qt.SortOrder.DescendingOrder)
        self._update_count()

    def shown_rows(self) -> list[list[Any]]:
        """The rows as shown now (filtered and sorted)."""
        return list(self.model.rows)

    def _on_filter(self, text: str) -> None:
        self.model.set_filter(text)
        self._update_count()

    def _update_count(self) -> None:
        self.count.setText(f"{self.model.rowCount():,} of {len(self.model.all_rows):,} rows")

    def _on_clicked(self, index) -> None:
        self.row_activated.emit(self.model.rows[index.row()])

    def _on_export(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export table as CSV", "profile_table.csv", "CSV files (*.csv)")
        if path:
            self.export_csv(Path(path))

    def export_csv(self, path: Path) -> None:
        """Write the rows as they are filtered and sorted now."""
        with Path(path).open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(self.model.columns)
            for row in self.model.rows:
                writer.writerow(["" if v is None else v for v in row])
