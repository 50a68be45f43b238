"""The communication tab: a group picker, the heat map of the chosen step's links and the slow links."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from studio.ui.panels.cluster.jobs import heat_job
from studio.ui.panels.cluster.state import ALL, ClusterState
from studio.ui.panels.cluster.widgets.heatmap import HeatMap
from studio.ui.panels.cluster.widgets.tables import fill, small_table
from studio.ui.panels.cluster.widgets.when_shown import WhenShown

LINK_HEADERS = ["Group", "Src", "Dst", "Transport", "Size (MB)", "Time (ms)", "GB/s"]
TABLE_ROWS = 5000  # a table item per cell: a few hundred ranks' matrix would take seconds to list in full
# Slow links written under the map: a wrapped label lays its rich text out again at each layout pass,
# and 190 of them (16 ranks x 95 steps, all steps) held the window for a few hundred ms
LABEL_LINKS = 10
NO_SLOW_LINK = "Slow links: none (every bandwidth spread within 5 %, transfers of 1 MB or more compared)."


class CommTab(QWidget):
    """The links of the step and group picked (``state.group``): the map is computed by a job on
    ``runner`` (a few hundred ranks take a good part of a second), the table and findings here."""

    def __init__(self, state: ClusterState, runner, parent=None):
        super().__init__(parent)
        self.state = state
        self.runner = runner
        self.handle = None
        self._generation = 0
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
        self.view = WhenShown(self, self.refresh)  # drawn when on screen, not behind another tab

    def refresh(self):
        """New report or step: the group list again (all groups chosen) and the map (returns its job)."""
        self.group_combo.blockSignals(True)
        self.group_combo.clear()
        self.group_combo.addItem("all groups", ALL)
        for name in self.state.group_names():
            self.group_combo.addItem(name, name)
        self.group_combo.blockSignals(False)
        self.state.group = ALL
        return self.refresh_map()

    def refresh_map(self):
        """Show the chosen links; returns the handle of the job that colours the map."""
        rows = self.state.matrix_rows()
        self._generation += 1
        generation = self._generation
        if self.handle is not None:
            self.handle.cancel()
        ranks = self.state.matrix_ranks()
        self.handle = self.runner.start("Drawing the communication matrix", lambda cancel: heat_job(ranks, rows))
        self.handle.finished.connect(lambda data: self._on_heat(generation, data))
        fill(self.table, [[str(m["group"]), m["src"], m["dst"], m["transport"], m["size_mb"], m["time_ms"],
                           m["bandwidth_gbps"]] for m in rows[:TABLE_ROWS]])
        self.table.setVisible(bool(rows))  # no matrix: the map's message says why, across the tab
        links = [f for f in self.state.findings() if f["kind"] == "slow link"]
        text = "<br>".join(f"<b>{f['title']}</b>: {f['evidence']}" for f in links[:LABEL_LINKS]) or NO_SLOW_LINK
        if len(links) > LABEL_LINKS:
            text += (f"<br>… and {len(links) - LABEL_LINKS:,} more slow links: the Step time tab's findings list "
                     "every one (pick a step to see its own).")
        if len(rows) > TABLE_ROWS:
            text += f"<br>The links table lists the first {TABLE_ROWS:,} of {len(rows):,} links; the map shows all."
        self.links_label.setText(text)
        return self.handle

    def _on_heat(self, generation: int, data) -> None:
        if generation == self._generation:  # a later choice's map is on its way: skip this one
            self.heatmap.set_data(data)

    def _on_group_changed(self, _index: int) -> None:
        self.state.group = self.group_combo.currentData()
        self.refresh_map()
