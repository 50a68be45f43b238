"""The communication tab: a group picker, the heat map of the chosen step's links and the slow links."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from studio.ui.panels.cluster.state import ALL, ClusterState
from studio.ui.panels.cluster.widgets.heatmap import HeatMap
from studio.ui.panels.cluster.widgets.tables import fill, small_table

LINK_HEADERS = ["Group", "Src", "Dst", "Transport", "Size (MB)", "Time (ms)", "GB/s"]
TABLE_ROWS = 5000  # a table item per cell: a few hundred ranks' matrix would take seconds to list in full
NO_SLOW_LINK = "Slow links: none (every bandwidth spread within 5 %, transfers of 1 MB or more compared)."


class CommTab(QWidget):
    """Shows :meth:`ClusterState.heat_cells` for the group picked here (``state.group``)."""

    def __init__(self, state: ClusterState, parent=None):
        super().__init__(parent)
        self.state = state
        self.group_combo = QComboBox(self)
        self.group_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.group_combo.currentIndexChanged.connect(self._on_group_changed)
        self.heatmap = HeatMap(self)
        self.table = small_table(LINK_HEADERS, self)
        self.links_label = QLabel("", self)
        self.links_label.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(QLabel("Group", self))
        top.addWidget(self.group_combo)
        hint = QLabel("Cell: bandwidth in GB/s (size / time of the links from src to dst); "
                      "hover for the transport, click to select the src rank.", self)
        hint.setWordWrap(True)  # wraps on a laptop instead of widening the window
        top.addWidget(hint, 1)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self.heatmap)
        split.addWidget(self.table)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setSizes([560, 640])  # the map is square: the links table takes the width it leaves
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        layout.addWidget(self.links_label)

    def refresh(self) -> None:
        """New report or step: the group list again (all groups chosen) and the map."""
        self.group_combo.blockSignals(True)
        self.group_combo.clear()
        self.group_combo.addItem("all groups", ALL)
        for name in self.state.group_names():
            self.group_combo.addItem(name, name)
        self.group_combo.blockSignals(False)
        self.state.group = ALL
        self.refresh_map()

    def refresh_map(self) -> None:
        self.heatmap.set_cells(self.state.matrix_ranks(), self.state.heat_cells())
        rows = self.state.matrix_rows()
        fill(self.table, [[str(m["group"]), m["src"], m["dst"], m["transport"], m["size_mb"], m["time_ms"],
                           m["bandwidth_gbps"]] for m in rows[:TABLE_ROWS]])
        self.table.setVisible(bool(rows))  # no matrix: the map's message says why, across the tab
        links = [f for f in self.state.findings() if f["kind"] == "slow link"]
        text = "<br>".join(f"<b>{f['title']}</b>: {f['evidence']}" for f in links) or NO_SLOW_LINK
        if len(rows) > TABLE_ROWS:
            text += f"<br>The links table lists the first {TABLE_ROWS:,} of {len(rows):,} links; the map shows all."
        self.links_label.setText(text)

    def _on_group_changed(self, _index: int) -> None:
        self.state.group = self.group_combo.currentData()
        self.refresh_map()
