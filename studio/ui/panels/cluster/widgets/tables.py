"""Small read-only tables (blocks at the peak, module peaks, matrix links): numbers shown with three
decimals and sorted as numbers, the engine's order kept until the user sorts."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

VALUE_ROLE = Qt.ItemDataRole.UserRole + 2


class SortItem(QTableWidgetItem):
    """A cell that sorts by its value (numbers as numbers, text after them) and shows its text."""

    def __lt__(self, other: QTableWidgetItem) -> bool:  # Qt override
        a, b = self.data(VALUE_ROLE), other.data(VALUE_ROLE)
        a_num, b_num = isinstance(a, (int, float)), isinstance(b, (int, float))
        if a_num and b_num:
            return a < b
        if a_num != b_num:
            return a_num
        return str(a) < str(b)


def small_table(headers: list[str], parent: QWidget) -> QTableWidget:
    """A read-only table whose first column stretches; sorting is turned on by :func:`fill`."""
    table = QTableWidget(0, len(headers), parent)
    table.setHorizontalHeaderLabels(headers)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.verticalHeader().setVisible(False)
    table.verticalHeader().setDefaultSectionSize(22)
    table.setAlternatingRowColors(True)
    header = table.horizontalHeader()
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    for column in range(1, len(headers)):
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
    return table


def fill(table: QTableWidget, rows: list[list], headers: list[str] | None = None) -> None:
    """Put ``rows`` in ``table`` in their order (floats right-aligned, ``1,234.500``, ``2.4e-05``)."""
    table.setSortingEnabled(False)
    table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # the engine's order
    if headers:
        table.setHorizontalHeaderLabels(headers)
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            text = _number(value) if isinstance(value, float) else str(value)
            item = SortItem(text)
            item.setData(VALUE_ROLE, value)
            if isinstance(value, (int, float)):
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            item.setToolTip(text)
            table.setItem(r, c, item)
    table.setSortingEnabled(True)


def _number(value: float) -> str:
    # three decimals, but a tiny transfer (24 bytes is 2.4e-05 MB) keeps its digits instead of "0.000"
    return f"{value:.3g}" if 0 < abs(value) < 0.001 else f"{value:,.3f}"


def cell_values(table: QTableWidget) -> list[list]:
    """The values of the table as shown (top to bottom), for tests and export."""
    return [[table.item(r, c).data(VALUE_ROLE) for c in range(table.columnCount())] for r in range(table.rowCount())]
