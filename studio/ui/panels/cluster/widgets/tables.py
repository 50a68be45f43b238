"""Small read-only tables (blocks at the peak, module peaks, matrix links) over a plain-rows model:
numbers shown with three decimals and sorted as numbers, the engine's order kept until the user
sorts. A model rather than a QTableWidget: refilling 5,000 table items with the header sized to
its contents took minutes (each item re-measured every row); a model reset takes milliseconds."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

VALUE_ROLE = Qt.ItemDataRole.UserRole + 2
SIZED_ROWS = 40


class RowsModel(QAbstractTableModel):
    """Rows of values under headers; ``rows`` is the order shown."""

    def __init__(self, headers: list[str], parent=None):
        super().__init__(parent)
        self.headers = list(headers)
        self.rows: list[list] = []

    def set_rows(self, rows: list[list], headers: list[str] | None = None) -> None:
        self.beginResetModel()
        self.rows = [list(r) for r in rows]
        if headers:
            self.headers = list(headers)
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # Qt override
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # Qt override
        return 0 if parent.isValid() else len(self.headers)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # Qt override
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.headers[section]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):  # Qt override
        value = self.rows[index.row()][index.column()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return _number(value) if isinstance(value, float) else str(value)
        if role == VALUE_ROLE:
            return value
        if role == Qt.ItemDataRole.TextAlignmentRole and isinstance(value, (int, float)):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:  # Qt override
        if not 0 <= column < len(self.headers):
            return  # no sort column: the engine's order stays
        self.layoutAboutToBeChanged.emit()
        self.rows.sort(key=lambda r: _key(r[column]), reverse=order == Qt.SortOrder.DescendingOrder)
        self.layoutChanged.emit()


def small_table(headers: list[str], parent: QWidget) -> QTableView:
    """A read-only, sortable table view whose first column stretches."""
    table = QTableView(parent)
    table.setModel(RowsModel(headers, table))
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.verticalHeader().setVisible(False)
    table.verticalHeader().setDefaultSectionSize(22)
    table.setAlternatingRowColors(True)
    header = table.horizontalHeader()
    header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
    table.setSortingEnabled(True)
    # ResizeToContents reads the cells of this many rows (Qt's default: 1,000) at every layout, on
    # the window's thread: a few dozen rows beside the visible ones are a fair sample of a column's
    # width (a longer text is cut with "…" and its tooltip holds it whole)
    header.setResizeContentsPrecision(SIZED_ROWS)
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    for column in range(1, len(headers)):
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
    return table


def fill(table: QTableView, rows: list[list], headers: list[str] | None = None) -> None:
    """Show ``rows`` in their order (floats right-aligned, ``1,234.500``, ``2.4e-05``)."""
    table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
    table.model().set_rows(rows, headers)


def cell_values(table: QTableView) -> list[list]:
    """The values of the table as shown (top to bottom), for tests and export."""
    return [list(r) for r in table.model().rows]


def _number(value: float) -> str:
    # three decimals, but a tiny transfer (24 bytes is 2.4e-05 MB) keeps its digits instead of "0.000"
    return f"{value:.3g}" if 0 < abs(value) < 0.001 else f"{value:,.3f}"


def _key(value) -> tuple:
    # numbers as numbers, before text ("not released", "end")
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))
