"""The Accuracy panel's per-op table with its filter row (name or type, verdict)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QItemSelectionModel, Qt
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QTableView,
                               QVBoxLayout, QWidget)

from studio.ui.panels.accuracy.rows_model import RowsFilter, RowsModel

MIN_ROWS = 3


class RowsTable(QWidget):
    """The compared rows (``model``) seen through a filter (``proxy``) in ``table``."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.filter_edit = QLineEdit(self)
        self.filter_edit.setPlaceholderText("Filter ops by name or type…")
        self.filter_edit.setClearButtonEnabled(True)
        self.status_filter = QComboBox(self)
        self.status_filter.addItems(["all", "fail", "pass", "one side"])
        self.model = RowsModel(self)
        self.proxy = RowsFilter(self)
        self.proxy.setSourceModel(self.model)
        self.filter_edit.textChanged.connect(self.proxy.set_text)
        self.status_filter.currentTextChanged.connect(self.proxy.set_status)
        self.table = table = QTableView(self)
        table.setModel(self.proxy)
        table.setSortingEnabled(True)
        table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        table.setWordWrap(False)
        table.setTextElideMode(Qt.TextElideMode.ElideLeft)  # op paths differ at their end
        table.verticalHeader().hide()
        table.verticalHeader().setDefaultSectionSize(22)
        header = table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for column, width in ((0, 44), (1, 230), (2, 140), (3, 215)):
            table.setColumnWidth(column, width)
        # Three rows stay in sight however long the reports above grow (they scroll instead).
        table.setMinimumHeight(header.sizeHint().height() + MIN_ROWS * 22 + table.horizontalScrollBar().sizeHint().height()
                               + 2 * table.frameWidth())
        table.viewport().installEventFilter(self)
        filters = QHBoxLayout()
        filters.addWidget(self.filter_edit, 1)
        filters.addWidget(QLabel("Show:", self))
        filters.addWidget(self.status_filter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(filters)
        layout.addWidget(table, 1)

    def select(self, row_index: int) -> None:
        """Select the row with this index (clearing a filter that hides it)."""
        source = next((i for i, r in enumerate(self.model.rows) if r.index == row_index), None)
        if source is None:
            return
        proxy_index = self.proxy.mapFromSource(self.model.index(source, 0))
        if not proxy_index.isValid():
            self.filter_edit.clear()
            self.status_filter.setCurrentText("all")
            proxy_index = self.proxy.mapFromSource(self.model.index(source, 0))
        self.table.selectionModel().setCurrentIndex(
            proxy_index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
        self.table.scrollTo(proxy_index)

    def eventFilter(self, watched, event) -> bool:  # Qt override
        # The table shrinks when reports are added above it: the selected row must not slip out of
        # sight below the last visible row.
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize:
            current = self.table.currentIndex()
            if current.isValid():
                rect = self.table.visualRect(current)
                if not self.table.viewport().rect().contains(rect):
                    self.table.scrollTo(current)
        return super().eventFilter(watched, event)
