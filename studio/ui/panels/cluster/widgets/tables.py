"""Small read-only tables (blocks at the peak, module peaks, matrix links) over a plain-rows model:
numbers shown with three decimals and sorted as numbers, the engine's order kept until the user
sorts. A model rather than a QTableWidget: refilling 5,000 table items with the header sized to
its contents took minutes (each item re-measured every row); a model reset takes milliseconds.

Columns are sized once per fill from their widest text, found from the values (a number's text
grows with its magnitude: the largest and smallest say it) and measured once; Qt's ResizeToContents
asked the model for each sampled cell's text, font, alignment and colours at every layout, and
made a tab's first showing on 16 ranks hold the window for tens of milliseconds."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyle, QTableView, QWidget

VALUE_ROLE = Qt.ItemDataRole.UserRole + 2
# data() is asked ~10 roles per cell painted: the roles as plain ints, compared without enum lookups
_DISPLAY, _TOOLTIP = int(Qt.ItemDataRole.DisplayRole), int(Qt.ItemDataRole.ToolTipRole)
_ALIGN, _VALUE = int(Qt.ItemDataRole.TextAlignmentRole), int(VALUE_ROLE)
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
STRETCH = "stretch"  # small_table's stretch=: the column that takes the width the others leave


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
        role = int(role)
        if role == _DISPLAY or role == _TOOLTIP:
            return text(self.rows[index.row()][index.column()])
        if role == _ALIGN:
            return _RIGHT if isinstance(self.rows[index.row()][index.column()], (int, float)) else None
        if role == _VALUE:
            return self.rows[index.row()][index.column()]
        return None

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:  # Qt override
        if not 0 <= column < len(self.headers):
            return  # no sort column: the engine's order stays
        self.layoutAboutToBeChanged.emit()
        self.rows.sort(key=lambda r: _key(r[column]), reverse=order == Qt.SortOrder.DescendingOrder)
        self.layoutChanged.emit()


def small_table(headers: list[str], parent: QWidget, stretch: int = 0, model=RowsModel) -> QTableView:
    """A read-only, sortable table view over a ``model`` (a RowsModel class); column ``stretch`` (-1:
    the last) takes the width the others leave, the others are as wide as their widest text at each
    :func:`fill` (and then as the user drags them)."""
    table = QTableView(parent)
    table.setModel(model(headers, table))
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.verticalHeader().setVisible(False)
    table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # rows never measured
    table.verticalHeader().setDefaultSectionSize(22)
    table.setAlternatingRowColors(True)
    table.setWordWrap(False)
    header = table.horizontalHeader()
    header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
    table.setSortingEnabled(True)
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    table.setProperty(STRETCH, stretch)
    fit_columns(table)
    return table


def fill(table: QTableView, rows: list[list], headers: list[str] | None = None) -> None:
    """Show ``rows`` in their order (floats right-aligned, ``1,234.500``, ``2.4e-05``), each column
    as wide as its widest text."""
    table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
    table.model().set_rows(rows, headers)
    fit_columns(table)


def fit_columns(table: QTableView) -> None:
    """Each column but the stretching one as wide as its header or its widest text, measured once."""
    model, header, metrics = table.model(), table.horizontalHeader(), table.fontMetrics()
    pad = cell_padding(table)
    # again at each fill: new headers of another length make new sections, of the default mode
    stretch = table.property(STRETCH) % max(1, model.columnCount())
    header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    for column in range(model.columnCount()):
        if column != stretch:
            texts = widest_texts([row[column] for row in model.rows])
            widest = max((metrics.horizontalAdvance(t) for t in texts), default=0)
            header.resizeSection(column, max(header.sectionSizeHint(column), widest + pad))


def cell_padding(view: QAbstractItemView) -> int:
    """What a cell's text needs beyond its width: the item's margins, as QStyledItemDelegate pads it."""
    return 2 * (view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1) + 4


def widest_texts(values: list) -> list[str]:
    """The few texts among which the widest of ``values`` (as the table shows them) is, formatting
    only those: the longest text, and of the numbers the largest, the most negative and the smallest
    non-zero magnitude (``2.4e-05``) — a number's text grows with its magnitude and its sign."""
    numbers = [v for v in values if isinstance(v, (int, float))]
    others = [str(v) for v in values if not isinstance(v, (int, float))]
    texts = [max(others, key=len)] if others else []
    if numbers:
        tiny = [v for v in numbers if v]
        texts += [text(max(numbers)), text(min(numbers))] + ([text(min(tiny, key=abs))] if tiny else [])
    return texts


def text(value) -> str:
    """A cell's text: a float with three decimals (a tiny one keeps its digits), anything else as str."""
    return _number(value) if isinstance(value, float) else str(value)


def cell_values(table: QTableView) -> list[list]:
    """The values of the table as shown (top to bottom), for tests and export."""
    return [list(r) for r in table.model().rows]


def _number(value: float) -> str:
    # three decimals, but a tiny transfer (24 bytes is 2.4e-05 MB) keeps its digits instead of "0.000"
    return f"{value:.3g}" if 0 < abs(value) < 0.001 else f"{value:,.3f}"


def _key(value) -> tuple:
    # numbers as numbers, before text ("not released", "end")
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))
