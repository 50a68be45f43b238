"""The comparison table: one row per tensor pair, every metric, pass/fail colours, filter and sort."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QBrush, QColor

from studio.ui.widgets.table_model import HeaderedRows

if TYPE_CHECKING:
    from studio.tools.accuracy.compare import CompareResult, Row

COLUMNS = [("#", "index"), ("Op", "name"), ("Type", "op_type"), ("Status", "status"),
           ("Cosine", "cosine"), ("Max abs", "max_abs_err"), ("Mean abs", "mean_abs_err"), ("RMSE", "rmse"),
           ("Max rel", "max_rel_err"), ("Mean rel", "mean_rel_err"), ("Acc rel", "acc_rel_err"),
           ("Rel. Euclid", "rel_euclidean"), ("KL", "kl_div"), ("Mean g / t", "means"), ("Std g / t", "stds"),
           ("Golden shape", "golden_shape"), ("Target shape", "target_shape"),
           ("Golden dtype", "golden_dtype"), ("Target dtype", "target_dtype"), ("Reason / note", "reason")]
METRIC_COLUMNS = {key: i for i, (_, key) in enumerate(COLUMNS)}
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
ROW_ROLE = Qt.ItemDataRole.UserRole + 2

_SHORT = {"cosine": "cos", "rel_euclidean": "RED", "kl_div": "KL", "rmse": "RMSE", "mean_rel_err": "MRE",
          "nonfinite": "inf/NaN"}
PASS_BG, FAIL_BG = QColor(46, 160, 67, 40), QColor(218, 54, 51, 60)
ONE_SIDE_FG = QColor(128, 128, 128)
_PASS_BRUSH, _FAIL_BRUSH, _ONE_SIDE_BRUSH = QBrush(PASS_BG), QBrush(FAIL_BG), QBrush(ONE_SIDE_FG)
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


def _fmt(value: float) -> str:
    if value is None:
        return ""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    return f"{value:.6f}" if 1e-3 <= abs(value) < 1e4 else f"{value:.3e}"


def violation_text(row: Row, thresholds=None) -> str:
    """The metrics a row fails, each with its value and limit, and why when known:
    ``inf/NaN (target 2, golden 0), MRE 2.05 >= 1 (near-zero golden)``."""
    m = row.metrics
    parts = []
    for name in row.violations:
        if name == "nonfinite":
            parts.append(f"inf/NaN (target {m.target_nonfinite}, golden {m.golden_nonfinite})")
            continue
        value = getattr(m, name, math.nan)
        limit = getattr(thresholds, name, None) if thresholds is not None else None
        text = f"{_SHORT.get(name, name)} {value:.6f}" if name == "cosine" else f"{_SHORT.get(name, name)} {value:.3g}"
        if limit is not None:
            text += f" {'<=' if name == 'cosine' else '>='} {limit:g}"
        if name == "mean_rel_err" and m.rel_err_near_zero:
            text += " (near-zero golden)"
        parts.append(text)
    return ", ".join(parts)


def verdict_label(row: Row, thresholds=None) -> str:
    """What the graph shows beside an op: ``fail: MRE 2.05 (near-zero golden) · cos 0.999991`` or ``pass · cos 1``."""
    m = row.metrics
    head = f"fail: {violation_text(row, thresholds)}" if row.violations else "pass"
    if "cosine" not in row.violations and m.cosine == m.cosine:
        head += f" · cos {m.cosine:.6f}"
    return head


class RowsModel(HeaderedRows):
    """Rows of a CompareResult for a QTableView."""

    HEADERS = COLUMNS

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[Row] = []
        self._keys: dict[int, list] = {}  # column -> sort key per row, made on the first sort by it
        self._order: tuple[int, Qt.SortOrder] = (0, Qt.SortOrder.AscendingOrder)
        self._base: list[Row] = []
        self._texts: dict[int, tuple[list[str], list[bool]]] = {}  # id(row) -> its cells (see _cells)
        self.thresholds = None  # the result's limits, quoted in the status column

    def set_result(self, result: CompareResult | None) -> None:
        self.beginResetModel()
        self.thresholds = result.thresholds if result is not None else None
        self._base = list(result.rows) if result is not None else []  # op order: ties keep it
        self.rows = list(self._base)
        self._texts = {}
        self._keys = {}
        self._sort_rows(*self._order)  # a new result keeps the column the user sorted by
        self.endResetModel()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:  # Qt override
        """Sort the rows here, with Python's sort over keys computed once per column.

        The proxy forwards its sort here: its own sort calls a Python ``lessThan`` n·log n times,
        which for a thousand rows held the GUI thread for tens of milliseconds on every new result.
        """
        self._order = (column, order)
        if not self.rows:
            return
        self.layoutAboutToBeChanged.emit()
        before = {id(row): i for i, row in enumerate(self.rows)}
        self._sort_rows(column, order)
        old = self.persistentIndexList()  # the selection and current row follow their rows
        if old:
            now = {before[id(row)]: i for i, row in enumerate(self.rows)}
            self.changePersistentIndexList(old, [self.index(now[index.row()], index.column()) for index in old])
        self.layoutChanged.emit()

    def _sort_rows(self, column: int, order: Qt.SortOrder) -> None:
        if not self.rows:
            return
        self.rows, self._keys = list(self._base), {}  # from op order, so equal keys stay in op order
        keys = self.sort_keys(column)
        # Numbers (NaN and missing as -inf) before texts; a stable sort keeps ties in index order.
        ranked = [(1, str(k)) if isinstance(k, str) else (0, k) for k in keys]
        positions = sorted(range(len(self.rows)), key=ranked.__getitem__,
                           reverse=order == Qt.SortOrder.DescendingOrder)
        self.rows = [self.rows[i] for i in positions]
        self._keys = {}  # keys are per position: made again for the next sort

    def sort_keys(self, column: int) -> list:
        """The sort key of every row in ``column`` (what ``SORT_ROLE`` gives), computed once: the
        proxy's comparisons then cost a list lookup, not two ``data()`` calls each."""
        keys = self._keys.get(column)
        if keys is None:
            key = COLUMNS[column][1]
            keys = self._keys[column] = [self._sort_value(row, key) for row in self.rows]
        return keys

    def _sort_value(self, row: Row, key: str):
        value = self._value(row, key)
        if isinstance(value, float) and math.isnan(value):
            return -math.inf
        return value if value is not None else -math.inf

    def header(self, section: int) -> str:
        return COLUMNS[section][0]

    def _value(self, row: Row, key: str):
        m, g, t = row.metrics, row.golden, row.target
        if key == "index":
            return row.index
        if key in ("name", "op_type"):
            return getattr(row, key)
        if key == "status":
            return row.status + (": " + violation_text(row, self.thresholds) if row.violations else "")
        if key == "golden_shape":
            return str(list(g.shape)) if g else ""
        if key == "target_shape":
            return str(list(t.shape)) if t else ""
        if key == "golden_dtype":
            return g.dtype if g else ""
        if key == "target_dtype":
            return t.dtype if t else ""
        if key == "reason":
            return (m.reason if m else "") or row.note
        if m is None:
            return None
        if key == "means":
            return f"{_fmt(m.golden_mean)} / {_fmt(m.target_mean)}"
        if key == "stds":
            return f"{_fmt(m.golden_std)} / {_fmt(m.target_std)}"
        return getattr(m, key)

    def _cells(self, row: Row) -> tuple[list[str], list[bool]]:
        """The texts of a row's cells and which are numbers, made once per row: a paint asks each
        visible cell for several roles, and formatting twenty metrics per ask added up to tens of
        milliseconds on the first paint of a comparison."""
        cells = self._texts.get(id(row))
        if cells is None:
            values = [self._value(row, key) for _, key in COLUMNS]
            texts = [_fmt(v) if isinstance(v, float) else ("" if v is None else str(v)) for v in values]
            cells = self._texts[id(row)] = (texts, [isinstance(v, (int, float)) for v in values])
        return cells

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):  # Qt override
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        key = COLUMNS[index.column()][1]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._cells(row)[0][index.column()]
        if role == Qt.ItemDataRole.ToolTipRole:  # long names are never cut without a way to read them
            g, t = row.golden, row.target
            return "\n".join(filter(None, [
                f"{row.name} ({row.op_type})", f"golden: {g.label} {list(g.shape)} {g.dtype}" if g else "golden: —",
                f"target: {t.label} {list(t.shape)} {t.dtype}" if t else "target: —",
                f"matched by {row.how}" if g and t else row.status,
                _why(row, self.thresholds), row.note,
                row.metrics.reason if row.metrics else ""]))
        if role == SORT_ROLE:
            return self._sort_value(row, key)
        if role == ROW_ROLE:
            return row
        if role == Qt.ItemDataRole.BackgroundRole and row.metrics is not None:
            return _FAIL_BRUSH if row.violations else _PASS_BRUSH
        if role == Qt.ItemDataRole.ForegroundRole and row.metrics is None:
            return _ONE_SIDE_BRUSH
        if role == Qt.ItemDataRole.TextAlignmentRole and self._cells(row)[1][index.column()]:
            return _RIGHT
        return None


class RowsFilter(QSortFilterProxyModel):
    """Filter by text (op name or type) and by status; sorting is the source model's."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self._text = ""
        self._status = "all"

    def set_text(self, text: str) -> None:
        self._change_filter("_text", text.strip().lower())

    def set_status(self, status: str) -> None:
        """``all``, ``fail``, ``pass`` or ``one side``."""
        self._change_filter("_status", status)

    def _change_filter(self, attr: str, value: str) -> None:
        # Qt 6.10 replaced invalidateFilter() with a begin/end pair around the change.
        if hasattr(self, "beginFilterChange"):
            self.beginFilterChange()
            setattr(self, attr, value)
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:
            setattr(self, attr, value)
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex) -> bool:  # Qt override
        row = self.sourceModel().rows[source_row]
        if self._text and self._text not in row.name.lower() and self._text not in row.op_type.lower():
            return False
        if self._status == "fail":
            return row.passed is False
        if self._status == "pass":
            return row.passed is True
        if self._status == "one side":
            return row.passed is None
        return True

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:  # Qt override
        """Sorting is the source model's (see :meth:`RowsModel.sort`); this proxy only filters."""
        self.sourceModel().sort(column, order)


def _why(row: Row, thresholds) -> str:
    """The tooltip's lines on a failing row: each broken limit with its value and cause."""
    if not row.violations:
        return ""
    from studio.tools.accuracy.advisor import explain_violation

    return "fails: " + "; ".join(explain_violation(row.metrics, name, thresholds) for name in row.violations)
