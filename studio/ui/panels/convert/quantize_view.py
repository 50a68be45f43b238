"""The Quantize page's result: a summary line, the measured table (FP32, INT8, mixed: cosine, the
task metrics measured, latency against FP32), both rollback searches (set size, runs), the
sensitivity ranking, with "Show in graph" (the sensitivity overlay on the FP32 model) and "Open
mixed model in graph", the run's notes, and, when the Ascend files were written, AMCT's
configuration, the amct_onnx and atc lines and where they ran — each list in a tab of its own.

Cells come from :mod:`~studio.ui.panels.convert.quantize_state`; long cells keep their full text as
a tooltip.

Signals: show_in_graph(), open_mixed(), layer_clicked(str).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QTableWidget,
    QTabWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.ui import style
from studio.ui.panels.convert import quantize_state as qs
from studio.ui.panels.convert.form_parts import push

_EMPTY = ("Choose the model on page 1 and calibration data on the left, then press <b>Quantize</b>: the "
          "layers are ranked by the error their INT8 adds, the fewest are left in float to meet the target, "
          "and FP32, INT8 and the mixed model are measured side by side.<br>From the command line: "
          "<code>studio quantize MODEL -o OUT.onnx --calib DIR|FILE.npz</code>.")


class QuantizeView(QWidget):
    """The latest quantisation's result (empty until one finishes)."""

    show_in_graph = Signal()
    open_mixed = Signal()
    layer_clicked = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.summary = QLabel(_EMPTY, self)
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = _table(self, qs.table_columns(None))
        self.searches = _table(self, qs.SEARCH_COLUMNS)
        self.sensitivity = _table(self, qs.SENSITIVITY_COLUMNS, stretch=0)  # long layer names get the width
        self.sensitivity.cellClicked.connect(
            lambda row, _col: self.layer_clicked.emit(self.sensitivity.item(row, 0).text()))
        self.sensitivity.setToolTip("Each layer quantised alone, every other in float: 1 − min cosine of the outputs "
                                    "against FP32; kurtosis and MSE of its input activation and weight explain a rank")
        self.graph_button = push(self, "Show in graph", self.show_in_graph,
                                 "Colour each quantised layer of the FP32 model by its error; rolled-back layers are "
                                 "marked beside their box")
        self.mixed_button = push(self, "Open mixed model in graph", self.open_mixed)
        self.notes = _text_box(self, wrap=True)
        self.ascend = _text_box(self, wrap=False)
        buttons = QHBoxLayout()
        buttons.addWidget(self.graph_button)
        buttons.addWidget(self.mixed_button)
        buttons.addStretch(1)
        self.sections = [_title("Measured together", self), _title("Rollback search", self)]
        result = QWidget(self)
        column = QVBoxLayout(result)
        column.addWidget(self.summary)
        for title, table in zip(self.sections, (self.table, self.searches)):
            column.addWidget(title)
            column.addWidget(table)
        column.addLayout(buttons)
        column.addStretch(1)
        # Tabs: the measured table and the searches stay in sight on a 720-pixel screen; the long
        # lists (every layer, the notes, AMCT's files) each get the whole height of their own tab.
        self.tabs = QTabWidget(self)
        for widget, title, tip in ((result, "Result", ""),
                                   (self.sensitivity, "Sensitivity", "Every layer, most sensitive first"),
                                   (self.notes, "Notes", "What was assumed or left out, said"),
                                   (self.ascend, "Ascend", "AMCT's configuration, the amct_onnx and atc lines, and "
                                                           "where they ran")):
            self.tabs.addTab(widget, title)
            self.tabs.setTabToolTip(self.tabs.count() - 1, tip)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(style.MARGIN, 0, 0, 0)
        layout.addWidget(self.tabs)
        self.set_result(None)

    def set_result(self, result) -> None:
        """Show ``result`` (a QuantizeResult), or the empty state for None."""
        shown = result is not None
        for widget in (*self.sections, self.table, self.searches, self.graph_button, self.mixed_button):
            widget.setVisible(shown)
        ascend = qs.ascend_text(result) if shown else ""
        notes = list(result.notes) if shown else []
        self.ascend.setPlainText(ascend)
        self.notes.setPlainText("\n".join(notes))
        for index, on, title in ((1, shown and bool(result.sensitivity), "Sensitivity"),
                                 (2, bool(notes), f"Notes ({len(notes)})" if notes else "Notes"),
                                 (3, bool(ascend), "Ascend")):
            self.tabs.setTabEnabled(index, on)
            self.tabs.setTabText(index, title)
        if not shown:
            self.summary.setText(_EMPTY)
            self.tabs.setCurrentIndex(0)
            return
        self.summary.setText(_escape(qs.summary(result, names=False)))  # the names: the table below
        self.summary.setToolTip(f"{qs.summary(result)}\n{result.out}")
        columns = qs.table_columns(result)
        self.table.setColumnCount(len(columns))
        self.table.setHorizontalHeaderLabels(columns)
        for index, name in enumerate(columns):
            self.table.horizontalHeaderItem(index).setToolTip(qs.COLUMN_TIPS.get(name, name))
        _fill(self.table, [cells for cells, _ in qs.table_rows(result)], [tips for _, tips in qs.table_rows(result)])
        search_rows = qs.search_rows(result)
        _fill(self.searches, [cells for cells, _ in search_rows])
        for row, (_cells, chosen) in enumerate(search_rows):
            if chosen:
                for col in range(self.searches.columnCount()):
                    font = QFont(self.searches.item(row, col).font())
                    font.setBold(True)
                    self.searches.item(row, col).setFont(font)
        _fill(self.sensitivity, qs.sensitivity_rows(result))
        for table in (self.table, self.searches):
            _fit_height(table)
        self.graph_button.setEnabled(bool(result.sensitivity))

    def cell(self, table: QTableWidget, row: int, column: str) -> str:
        """The text of ``column`` (a header) in ``row`` of ``table`` (for tests and exports)."""
        headers = [table.horizontalHeaderItem(i).text() for i in range(table.columnCount())]
        return table.item(row, headers.index(column)).text()


def _escape(text: str) -> str:
    import html

    return html.escape(text)


def _text_box(parent: QWidget, wrap: bool) -> QPlainTextEdit:
    """Read-only text; unwrapped (commands, configuration) in the fixed-width font."""
    box = QPlainTextEdit(parent)
    box.setReadOnly(True)
    if not wrap:
        box.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    return box


def _title(text: str, parent: QWidget) -> QLabel:
    label = QLabel(f"<b>{text}</b>", parent)
    label.setContentsMargins(0, style.GAP, 0, 0)
    return label


def _table(parent: QWidget, columns, stretch: int | None = None) -> QTableWidget:
    """A read-only table sized to its contents; column ``stretch`` (default the last) takes the rest."""
    table = QTableWidget(0, len(columns), parent)
    table.setHorizontalHeaderLabels(list(columns))
    table.verticalHeader().hide()
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setWordWrap(False)
    table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 8)  # compact rows
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    if stretch is None:
        header.setStretchLastSection(True)
    else:
        header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    return table


def _fill(table: QTableWidget, rows: list[list[str]], tips: list[list[str]] | None = None) -> None:
    table.setRowCount(len(rows))
    for r, cells in enumerate(rows):
        for c, text in enumerate(cells):
            item = QTableWidgetItem(text)
            tip = tips[r][c] if tips else ""
            item.setToolTip(tip or text)  # a cut cell is one hover away
            if c > 0 and _numeric(text):
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            table.setItem(r, c, item)


def _numeric(text: str) -> bool:
    try:
        float(text.replace(" %", ""))
        return True
    except ValueError:
        return False


def _fit_height(table: QTableWidget) -> None:
    """A short table as tall as its rows, so the sensitivity list below gets the rest."""
    height = table.horizontalHeader().height() + sum(table.rowHeight(r) for r in range(table.rowCount()))
    table.setFixedHeight(height + 2 * table.frameWidth() + 2)
