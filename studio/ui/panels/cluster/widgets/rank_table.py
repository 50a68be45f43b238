"""The per-rank table: rank, step, stage, each part of the step in ms, and the step as a stacked bar.

Every bar is drawn to the scale of the longest step shown, so a rank that computes longer or idles
longer stands out at a glance; the bar's tooltip gives each part in ms and in % of that rank's step.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QStyledItemDelegate,
    QTableView,
    QWidget,
)

from studio.ui.panels.cluster.state import BAR_PARTS, PARTS, ClusterState, ms, step_label
from studio.ui.panels.cluster.widgets.tables import cell_padding, widest_texts
from studio.ui.widgets.table_model import HeaderedRows

COLOURS = {"computing_us": QColor(61, 111, 182), "communication_not_overlapped_us": QColor(214, 125, 46),
           "free_us": QColor(170, 174, 181), "preparing_us": QColor(140, 190, 140)}
TITLES = dict(PARTS)
HEADERS = ["Rank", "Step", "Stage"] + [f"{title} (ms)" for _, title in PARTS] + ["Step breakdown"]
FIRST_PART = 3
BAR_COLUMN = len(HEADERS) - 1
ROW_ROLE = Qt.ItemDataRole.UserRole + 1
BAR_MIN = 180  # px: the parts of a bar stay readable, and "Step breakdown" fits its header


class RankTableModel(HeaderedRows):
    """One row per rank and step of :meth:`ClusterState.rank_rows`; sortable by any column."""

    HEADERS = HEADERS

    def __init__(self, state: ClusterState, parent=None):
        super().__init__(parent)
        self.state = state
        self.rows: list[dict] = []
        self.scale = 0.0

    def refresh(self) -> None:
        self.beginResetModel()
        self.rows = self.state.rank_rows()
        self.scale = self.state.bar_scale(self.rows)  # the rows just chosen, not chosen and sorted again
        self.endResetModel()

    def value(self, row: dict, column: int):
        """The cell's value (µs for the parts), as the table sorts it."""
        if column == 0:
            return row["rank"]
        if column == 1:
            return row["step"]
        if column == 2:
            return row.get("pp_stage")
        if column == BAR_COLUMN:
            return self.state.bar_total(row)
        return row.get(PARTS[column - FIRST_PART][0])

    def text(self, row: dict, column: int) -> str:
        """The cell's text as shown (the bar column has none)."""
        if column == BAR_COLUMN:
            return ""
        value = self.value(row, column)
        if column == 1:
            return step_label(value)
        if column >= FIRST_PART:
            return ms(value)
        return "-" if value is None else str(value)

    def texts_to_fit(self, column: int) -> list[str]:
        """Texts among which the column's widest is: of a number column, those of its largest and
        smallest value (``1,234.567``: the text grows with the magnitude) and "-" for a missing one —
        not 1,500 texts formatted to measure 16 ranks x 95 steps."""
        if column < FIRST_PART:  # rank, step, stage: whole numbers (or "-"), widest at their extremes
            values = [self.value(row, column) for row in self.rows]
            return widest_texts(["-" if v is None else v if isinstance(v, int) else str(v) for v in values])
        key = PARTS[column - FIRST_PART][0]
        values = [row.get(key) for row in self.rows]
        numbers = [v for v in values if v is not None]
        missing = ["-"] if len(numbers) < len(values) else []
        return [ms(max(numbers)), ms(min(numbers))] + missing if numbers else missing

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):  # Qt override
        row, column = self.rows[index.row()], index.column()
        if role == ROW_ROLE:
            return row
        if role == Qt.ItemDataRole.DisplayRole and column != BAR_COLUMN:
            return self.text(row, column)
        if role == Qt.ItemDataRole.TextAlignmentRole and column >= FIRST_PART:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            return bar_tooltip(row, self.state.bar_total(row)) if column == BAR_COLUMN else row.get("source")
        return None

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:  # Qt override
        self.layoutAboutToBeChanged.emit()
        key = lambda r: (self.value(r, column) is None, str(self.value(r, column)) if column == 1  # noqa: E731
                         else (self.value(r, column) or 0))
        self.rows.sort(key=key, reverse=order == Qt.SortOrder.DescendingOrder)
        self.layoutChanged.emit()


def bar_tooltip(row: dict, total: float) -> str:
    lines = [f"rank {row['rank']}, step {step_label(row['step'])}: {ms(total)} ms"]
    for key in BAR_PARTS:
        value = row.get(key)
        if value is not None:
            share = f" ({value / total * 100:.1f} %)" if total > 0 else ""
            lines.append(f"{TITLES[key]}: {ms(value)} ms{share}")
    lines.append(f"(overlapped {ms(row.get('overlapped_us'))} ms is inside computing, "
                 f"bubble {ms(row.get('bubble_us'))} ms inside communication)")
    return "\n".join(lines)


class BarDelegate(QStyledItemDelegate):
    """Paints the breakdown column: computing | communication not overlapped | free | preparing."""

    def paint(self, painter: QPainter, option, index) -> None:  # Qt override
        super().paint(painter, option, index)
        model = index.model()
        row = index.data(ROW_ROLE)
        if not row or model.scale <= 0:
            return
        rect = QRectF(option.rect).adjusted(4, 4, -4, -4)
        x = rect.left()
        painter.save()
        for key in BAR_PARTS:
            width = (row.get(key) or 0.0) / model.scale * rect.width()
            if width > 0:
                painter.fillRect(QRectF(x, rect.top(), width, rect.height()), COLOURS[key])
                x += width
        painter.restore()

    def sizeHint(self, option, index) -> QSize:  # Qt override
        return QSize(220, 20)


class Legend(QWidget):
    """The bar's colours, with the rule that the parts add up to the step."""

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for key in BAR_PARTS:
            swatch = QLabel(self)
            swatch.setFixedSize(12, 12)
            swatch.setStyleSheet(f"background: {COLOURS[key].name()};")
            layout.addWidget(swatch)
            layout.addWidget(QLabel(TITLES[key], self))
            layout.addSpacing(8)
        note = QLabel("— together the step; one scale", self)
        note.setToolTip("The parts of a bar add up to the rank's step; every bar shares one scale (the longest "
                        "step shown)")
        note.setStyleSheet("color: palette(mid);")
        note.setMinimumWidth(0)
        layout.addWidget(note)
        layout.addStretch(1)


class RankTable(QTableView):
    """The table view: one row selected at a time, the bar column stretching."""

    def __init__(self, model: RankTableModel, parent=None):
        super().__init__(parent)
        self.setModel(model)
        self.setItemDelegateForColumn(BAR_COLUMN, BarDelegate(self))
        self.setSortingEnabled(True)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(22)
        header = self.horizontalHeader()
        # Sized to the contents once per refresh (the panel calls fit_columns), not on
        # every resize: ResizeToContents reads every row's cells at each layout change, and showing
        # a 16-rank table held the window for a third of a second.
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        # The bars sit right after the stage, where a narrow screen still shows them (as the last,
        # stretching column they were squeezed to 45 px, or scrolled off to the right at 1,024 px);
        # they take the room the numbers leave, never less than BAR_MIN.
        header.setSectionResizeMode(BAR_COLUMN, QHeaderView.ResizeMode.Fixed)
        header.moveSection(header.visualIndex(BAR_COLUMN), FIRST_PART)
        header.setStretchLastSection(False)
        header.sectionResized.connect(lambda index, _old, _new: index != BAR_COLUMN and self.fit_bars())
        model.modelReset.connect(self.fit_bars)
        self.fit_bars()

    def fit_columns(self) -> None:
        """Each column of text as wide as its longest text (or its header). The longest is found
        from the rows in one pass and measured once: resizeColumnsToContents asked the model for
        each cell's text, font and alignment and measured each (16 ranks x 94 steps held the window)."""
        model, header, metrics = self.model(), self.horizontalHeader(), self.fontMetrics()
        pad = cell_padding(self)
        for column in range(model.columnCount()):
            if column == BAR_COLUMN:
                continue
            longest = max(model.texts_to_fit(column), key=len, default="")
            header.resizeSection(column, max(header.sectionSizeHint(column), metrics.horizontalAdvance(longest) + pad))
        self.fit_bars()

    def fit_bars(self) -> None:
        """Give the bar column the width the number columns leave (at least BAR_MIN)."""
        header = self.horizontalHeader()
        others = sum(header.sectionSize(c) for c in range(header.count()) if c != BAR_COLUMN)
        width = max(BAR_MIN, self.viewport().width() - others)
        if header.sectionSize(BAR_COLUMN) != width:
            header.resizeSection(BAR_COLUMN, width)

    def resizeEvent(self, event) -> None:  # Qt override
        super().resizeEvent(event)
        self.fit_bars()

    def selected_row(self) -> dict | None:
        """The engine's row of the current rank, or None."""
        index = self.currentIndex()
        return index.data(ROW_ROLE) if index.isValid() else None
