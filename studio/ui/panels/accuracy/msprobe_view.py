"""Two msprobe dumps compared: the module tree (failing calls per module) beside the table of arguments.

Selecting a module shows only the calls inside it; the first mismatching API and its stack are
in the summary above. "Module graph" draws both dumps' module trees (construct.json) side by side
in the graph panel, each node coloured by the worst verdict under it and overflowing ones labelled;
a node clicked there shows that module's (or call's) rows here. The table is a light model over the comparison's rows (thousands of rows
fill it without creating an item per cell).
"""

from __future__ import annotations

import html

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableView,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.core.serial import to_json
from studio.ui.widgets.table_model import HeaderedRows


COLUMNS = ("API", "argument", "result", "norm rel. err", "dtype", "shape", "why")
_RESULT_COLOURS = {"error": QColor("#e6007e"), "warning": QColor("#b8860b")}


class MsprobeRows(HeaderedRows):
    """The comparison's rows, optionally only those of calls inside one module."""

    HEADERS = COLUMNS

    def __init__(self, parent=None):
        super().__init__(parent)
        self.result = None
        self.rows: list = []

    def show(self, result, module: str | None = None) -> None:
        """Show ``result``'s rows (those of calls inside ``module`` when given)."""
        self.beginResetModel()
        self.result = result
        if result is None:
            self.rows = []
        elif module is None:
            self.rows = list(result.rows)
        else:
            inside = {r.target_api for r in result.rows if module in result.target.module_path(r.target_api)}
            # nothing inside: an API call (a leaf of the module graph), or a module dumped as one call
            self.rows = [r for r in result.rows if r.target_api in inside] if inside else \
                [r for r in result.rows if r.target_api == module]
        self.endResetModel()

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):  # Qt override
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        column = index.column()
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            values = (row.target_api, row.slot, row.result,
                      "" if row.norm_relative is None else f"{row.norm_relative:.2%}",
                      row.target_dtype if row.target_dtype == row.golden_dtype
                      else f"{row.target_dtype} / {row.golden_dtype}",
                      str(row.target_shape), row.message)
            text = values[column]
            if role == Qt.ItemDataRole.ToolTipRole:
                return f"{row.target_api}.{row.slot} (golden: {row.golden_api})\n{row.message or row.result}"
            return text
        if role == Qt.ItemDataRole.ForegroundRole and column == 2:
            return _RESULT_COLOURS.get(row.result)
        return None


class MsprobeView(QWidget):
    """Summary, module tree and rows of an msprobe comparison. ``graph_requested``: the "Module
    graph" button was pressed."""

    graph_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.graph_button = QPushButton("Module graph", self)
        self.graph_button.setToolTip("Both dumps' module trees (construct.json) side by side in the graph panel, "
                                     "coloured by the worst verdict under each module; click a node to see its rows")
        self.graph_button.clicked.connect(self.graph_requested)
        self.graph_button.setEnabled(False)
        self.shown = QLabel(self)  # which module's rows the table shows
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tree = QTreeWidget(self)
        self.tree.setHeaderLabels(["module", "errors", "warnings"])
        self.tree.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.tree.currentItemChanged.connect(self._on_module)
        self.rows = MsprobeRows(self)
        self.table = QTableView(self)
        self.table.setModel(self.rows)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideLeft)
        self.table.horizontalHeader().setStretchLastSection(True)
        for column, width in ((0, 260), (1, 90), (2, 70), (3, 100)):
            self.table.setColumnWidth(column, width)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        left = QWidget(self)
        column = QVBoxLayout(left)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.graph_button)
        column.addWidget(self.tree, 1)
        column.addWidget(self.shown)
        split.addWidget(left)
        split.addWidget(self.table)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        self.result = None

    def show_result(self, result) -> None:
        """Show an :class:`~studio.tools.accuracy.msprobe_compare.MsprobeComparison`."""
        self.result = result
        data = to_json(result)
        first = data["first_mismatch"]
        if result.golden.path == result.target.path:  # a comparison CSV read back
            sides = f"<b>{html.escape(result.target.path.name)}</b> (a saved comparison)"
        else:
            sides = (f"<b>{html.escape(result.golden.path.name)}</b> ({html.escape(result.golden.framework)}) vs "
                     f"<b>{html.escape(result.target.path.name)}</b> ({html.escape(result.target.framework)})")
        text = (f"{sides}: {data['apis_matched']} APIs matched, {data['pass']} pass, {data['warning']} warning, "
                f"{data['error']} error")
        if first:
            text += (f"<br>First mismatch: <b>{html.escape(first['api'])}</b> {html.escape(first['slot'])} — "
                     f"{html.escape(first['message'])}")
            if first["stack"]:
                text += f"<br><span style='color:gray'>{html.escape(first['stack'][-1].splitlines()[0])}</span>"
        self.summary.setText(text)
        self.summary.setToolTip("\n".join(first["stack"]) if first else "")
        self.tree.clear()
        everything = QTreeWidgetItem(["(all calls)", str(data["error"]), str(data["warning"])])
        self.tree.addTopLevelItem(everything)
        items: dict[str, QTreeWidgetItem] = {}
        for module in sorted(data["modules"], key=lambda m: m["depth"]):
            path = result.target.module_path(module["module"])
            parent = items.get(path[-1]) if path else None
            item = QTreeWidgetItem([module["module"].split(".forward")[0].split(".backward")[0],
                                    str(module["errors"]), str(module["warnings"])])
            item.setToolTip(0, module["module"])
            item.setData(0, Qt.ItemDataRole.UserRole, module["module"])
            (parent.addChild(item) if parent is not None else self.tree.addTopLevelItem(item))
            items[module["module"]] = item
        self.tree.expandToDepth(1)
        self.rows.show(result)
        self.shown.setText("")
        self.graph_button.setEnabled(result.golden.path != result.target.path
                                     and bool(result.golden.parents) and bool(result.target.parents))

    def _on_module(self, current, _previous) -> None:
        if self.result is not None:
            module = current.data(0, Qt.ItemDataRole.UserRole) if current is not None else None
            self.rows.show(self.result, module)
            self.shown.setText(f"<small>{len(self.rows.rows):,} rows in {html.escape(module)}</small>" if module else "")

    def select_node(self, name: str) -> None:
        """Show the rows of module or API call ``name`` (a node of the module graph), selecting it
        in the tree where the tree holds it (modules with failing calls)."""
        if self.result is None:
            return
        found = self.tree.findItems("*", Qt.MatchFlag.MatchWildcard | Qt.MatchFlag.MatchRecursive)
        item = next((i for i in found if i.data(0, Qt.ItemDataRole.UserRole) == name), None)
        if item is not None:
            self.tree.setCurrentItem(item)
            return
        self.tree.blockSignals(True)  # no module of the tree: its selection goes, the table follows the graph
        self.tree.setCurrentItem(None)
        self.tree.clearSelection()
        self.tree.blockSignals(False)
        self.rows.show(self.result, name)
        self.shown.setText(f"<small>{len(self.rows.rows):,} rows in {html.escape(name)}</small>")
