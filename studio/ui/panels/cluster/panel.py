"""The cluster panel: the ranks of a multi-rank profile side by side (see docs/profiler.md, "Cluster and memory").

Layout and wiring only: the engines run as jobs (:mod:`.jobs`), what is shown is computed by
:mod:`.state` (Qt-free), the table, heat map and memory tab live in :mod:`.widgets`.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from studio.core.errors import UserError
from studio.core.formats import Detected
from studio.ui.panels.base import Panel
from studio.ui.panels.cluster.jobs import cluster_job, comm_job, memory_job
from studio.ui.panels.cluster.state import ALL, ClusterState, step_label
from studio.ui.panels.cluster.widgets.findings import FindingsView, layout_html
from studio.ui.panels.cluster.widgets.parts import message_label, titled
from studio.ui.panels.cluster.widgets.collectives_tab import CollectivesTab
from studio.ui.panels.cluster.widgets.comm_tab import CommTab
from studio.ui.panels.cluster.widgets.compare_tab import CompareTab
from studio.ui.panels.cluster.widgets.free_tab import FreeTab
from studio.ui.panels.cluster.widgets.op_links_tab import OpLinksTab
from studio.ui.panels.cluster.widgets.rank_notice import RankNotice
from studio.ui.panels.cluster.widgets.rank_table import Legend, RankTable, RankTableModel
from studio.ui.panels.cluster.widgets.when_shown import WhenShown
from studio.ui.widgets.empty_state import EmptyState

EMPTY_TITLE = "No cluster open"
EMPTY_TEXT = ("Open a folder of ranks — the *_ascend_pt (or PROF_*) folders of one job, or msprof-analyze's "
              "cluster_analysis_output — to see each rank's step time, the communication matrix and device "
              "memory side by side. Or drop the folder here, or use File > Open Folder.<br>"
              "From a terminal: <code>studio profile cluster DIR</code>.")


class ClusterPanel(Panel):
    """Per-rank step time, findings, the communication heat map and device memory of a cluster."""

    NAME = "cluster"
    TITLE = "Cluster"
    AREA = Qt.DockWidgetArea.RightDockWidgetArea

    def __init__(self, runner, parent=None, links=None):
        super().__init__(runner, parent, links)
        self.state = ClusterState()
        self.handle = self.memory_handle = self.comm_handle = None
        self._generation = 0
        self.memory_tab = None
        self._build()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        open_button = QPushButton("Open…", self)
        open_button.setToolTip("Open a folder of ranks (as `studio profile cluster DIR` reads)")
        open_button.clicked.connect(self._on_open_clicked)
        self.folder_label = QLabel("", self)
        self.step_combo = QComboBox(self)
        self.step_combo.currentIndexChanged.connect(self._on_step_changed)
        self.step_label = QLabel("Step", self)
        self.profiler_button = QPushButton("Open rank in Profiler", self)
        self.profiler_button.setToolTip("Open the selected rank's own folder in the Profiler (its timeline)")
        self.profiler_button.clicked.connect(lambda: self.open_selected_rank())
        self.lanes_button = QPushButton("All ranks' timelines", self)
        self.lanes_button.setToolTip("Every rank's timeline in the Profiler, a lane group per rank on one clock")
        self.lanes_button.clicked.connect(self.open_rank_timelines)
        bar = QHBoxLayout()
        for widget in (open_button, self.folder_label):
            bar.addWidget(widget)
        bar.addStretch(1)
        for widget in (self.step_label, self.step_combo, self.profiler_button, self.lanes_button):
            bar.addWidget(widget)
        self.source_label = QLabel("", self)
        self.source_label.setWordWrap(True)
        self.source_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.rank_notice = RankNotice(self)  # a rank with no timeline: why, and what to look at instead
        self.rank_notice.open_rank.connect(self.open_selected_rank)
        self.rank_notice.show_comm.connect(lambda _rank: self.tabs.setCurrentWidget(self.comm))

        self.model = RankTableModel(self.state, self)
        self.table = RankTable(self.model, self)
        self.table.selectionModel().currentRowChanged.connect(lambda *_: self._update_buttons())
        self.table.doubleClicked.connect(lambda _index: self.open_selected_rank())
        ranks_box = QWidget(self)
        ranks_layout = QVBoxLayout(ranks_box)
        ranks_layout.setContentsMargins(0, 0, 0, 0)
        ranks_layout.addWidget(Legend(ranks_box))
        ranks_layout.addWidget(self.table, 1)
        self.findings = FindingsView(self)
        self.findings.rank_clicked.connect(self.select_rank)
        self.layout_view = QTextBrowser(self)
        lower = QSplitter(Qt.Orientation.Horizontal, self)
        lower.addWidget(titled("Findings (spread over 5 %)", self.findings, lower))
        lower.addWidget(titled("Stages and parallel groups", self.layout_view, lower))
        lower.setStretchFactor(0, 3)
        lower.setStretchFactor(1, 2)
        self.step_split = QSplitter(Qt.Orientation.Vertical, self)
        self.step_split.addWidget(ranks_box)
        self.step_split.addWidget(lower)
        # filled when on screen: the rank table, then the findings and the layout, each on its own turn;
        # the split between table and findings last (set before the text, the text's layout squeezed it)
        self.step_view = WhenShown(self.step_split, self.table.fit_columns,
                                   lambda: self.findings.show_findings(self.state.findings()),
                                   lambda: self.layout_view.setHtml(layout_html(self.state.layout_lines())),
                                   self._split_step)

        self.comm = CommTab(self.state, self.runner, self)
        self.comm.heatmap.cell_clicked.connect(lambda src, _dst: self.select_rank(src, switch=False))

        self.memory_stack = QStackedWidget(self)
        self.memory_message = message_label("", self.memory_stack)
        self.memory_stack.addWidget(self.memory_message)
        self.memory_view = WhenShown(self.memory_stack, self._render_memory)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.step_split, "Step time")
        self.tabs.addTab(self.comm, "Communication")
        self.collectives = CollectivesTab(self)
        self.collectives.jump.connect(self.show_in_timeline)
        self.tabs.addTab(self.collectives, "Collectives")
        self.op_links = OpLinksTab(self)
        self.tabs.addTab(self.op_links, "Links by op")
        self.free = FreeTab(self.runner, self)
        self.free.jump.connect(self.collectives.jump)  # the same way to the timeline
        self.tabs.addTab(self.free, "Idle gaps")
        self.tabs.addTab(self.memory_stack, "Memory")
        self.compare = CompareTab(self.runner, self)  # this folder against another run's
        self.tabs.addTab(self.compare, "Compare")
        self.stack = QStackedWidget(self)
        self.empty = EmptyState(EMPTY_TITLE, EMPTY_TEXT, self.stack)
        self.empty.add_action("Open folder of ranks…", self._on_open_clicked)
        self.stack.addWidget(self.empty)
        self.message = message_label("", self.stack)
        self.stack.addWidget(self.message)
        self.stack.addWidget(self.tabs)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.source_label)
        layout.addWidget(self.rank_notice)
        layout.addWidget(self.stack, 1)
        self._show_message("")

    # ------------------------------------------------------------------ opening
    def open_file(self, detected: Detected) -> None:
        self.open_folder(detected.path)

    def _on_open_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open a folder of ranks", str(self.state.folder or ""))
        if folder:
            self.open_folder(Path(folder))

    def open_folder(self, folder: Path):
        """Read ``folder``'s ranks and memory as two jobs; returns the cluster job's handle."""
        folder = Path(folder)
        self._generation += 1
        generation = self._generation
        for handle in (self.handle, self.memory_handle, self.comm_handle):
            if handle is not None:
                handle.cancel()
        self.state.folder, self.state.report, self.state.memory = folder, None, None
        self.folder_label.setText("/".join(folder.parts[-2:]))
        self.folder_label.setToolTip(str(folder))
        self._show_message(f"Reading the ranks of {folder} …")
        self.handle = self.runner.start(f"Reading the cluster {folder.name}",
                                        lambda cancel: cluster_job(folder, cancel))
        self.handle.finished.connect(lambda report: self._on_cluster(generation, report))
        self.handle.failed.connect(lambda exc, _tb: self._on_failed(generation, exc))
        self.memory_handle = self.runner.start(f"Reading the memory of {folder.name}",
                                               lambda cancel: memory_job(folder))
        self.memory_handle.finished.connect(lambda result: self._on_memory(generation, *result))
        self.memory_handle.failed.connect(lambda exc, _tb: self._on_memory(generation, None, _error_text(exc)))
        self.collectives.show_report(None, "Reading the collectives' times …")
        self.comm_handle = self.runner.start(f"Splitting the collectives of {folder.name}",
                                             lambda cancel: comm_job(folder, cancel))
        self.comm_handle.finished.connect(lambda result: generation == self._generation
                                          and self.collectives.show_report(*result))
        self.comm_handle.failed.connect(lambda exc, _tb: generation == self._generation
                                        and self.collectives.show_report(None, _error_text(exc)))
        self.free.open_folder(folder)
        self.compare.set_base(folder)
        return self.handle

    def _show_message(self, text: str) -> None:
        """``text`` in place of the tabs (no text: the empty state, with its Open button)."""
        self.message.setText(text)
        self.stack.setCurrentWidget(self.message if text else self.empty)
        self.source_label.setVisible(False)
        for widget in (self.step_label, self.step_combo):
            widget.setVisible(False)
        self._update_buttons()

    def _on_failed(self, generation: int, exc: BaseException) -> None:
        # The runner posts the failure on the notice board (dialog and status line). The page
        # says it too, in place of the tabs it cannot fill: a folder that is no cluster is a
        # dead end the user reads here, where its views would be.
        if generation == self._generation:
            self._show_message(f"Cannot show this folder as a cluster.\n\n{_error_text(exc)}")

    def _on_cluster(self, generation: int, report: dict) -> None:
        if generation != self._generation:
            return
        self.state.report, self.state.step, self.state.group = report, ALL, ALL
        warnings = report.get("warnings", [])
        self.source_label.setText(self.state.source_text() + "".join(f"<br>⚠ {w}" for w in warnings))
        self.source_label.setVisible(True)
        steps = self.state.steps()
        self.step_combo.blockSignals(True)
        self.step_combo.clear()
        self.step_combo.addItem("all steps", ALL)
        for step in steps:
            self.step_combo.addItem(f"step {step_label(step)}", step)
        self.step_combo.setCurrentIndex(1 if len(steps) == 1 else 0)
        self.step_combo.blockSignals(False)
        for widget in (self.step_label, self.step_combo):
            widget.setVisible(len(steps) > 1)
        self.state.step = self.step_combo.currentData()
        self._refresh()
        self.stack.setCurrentWidget(self.tabs)
        self.status.emit(f"Cluster: {self.state.source_text()}")

    # ------------------------------------------------------------------ views
    def _refresh(self) -> None:
        """A new report or step: the rank rows now (selecting a rank reads them), each tab's view when
        it is on screen — a tab behind another is filled when it is first shown."""
        self.model.refresh()
        self.step_view.request()
        self.comm.view.request()
        self.collectives.set_step(self.state.step, self.state.step is ALL)
        self.op_links.show_report(self.state.report, self.state.step, self.state.step is ALL)
        self._update_buttons()

    def _split_step(self) -> None:
        # The table takes the height of its rows (up to 60 %), the findings the rest.
        total = max(300, self.step_split.height())
        wanted = 30 + self.table.horizontalHeader().height() + 22 * max(3, len(self.model.rows)) + 6
        self.step_split.setSizes([min(wanted, int(total * 0.6)), total - min(wanted, int(total * 0.6))])

    def _on_step_changed(self, _index: int) -> None:
        self.state.step = self.step_combo.currentData()
        self._refresh()

    def _on_memory(self, generation: int, memory: dict | None, message: str) -> None:
        if generation != self._generation:
            return
        self.state.memory, self.state.memory_message = memory, message
        self.memory_view.request()

    def _render_memory(self) -> None:
        # the chart (and pyqtgraph, with its first data) is built when the Memory tab is first shown
        memory, message = self.state.memory, self.state.memory_message
        if memory is None:
            self.memory_message.setText(f"No memory view for this folder.\n\n{message}")
            self.memory_stack.setCurrentWidget(self.memory_message)
            return
        if self.memory_tab is None:  # pyqtgraph is imported with the first memory data
            from studio.ui.panels.cluster.widgets.memory_tab import MemoryTab

            self.memory_tab = MemoryTab(self.memory_stack)
            self.memory_stack.addWidget(self.memory_tab)
        self.memory_tab.show_report(memory)
        self.memory_stack.setCurrentWidget(self.memory_tab)

    # ------------------------------------------------------------------ ranks
    def select_rank(self, rank: int, switch: bool = True) -> None:
        """Select the first row of ``rank`` (and show the step-time tab)."""
        for row, data in enumerate(self.model.rows):
            if data["rank"] == rank:
                self.table.selectionModel().setCurrentIndex(
                    self.model.index(row, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                    | QItemSelectionModel.SelectionFlag.Rows)
                if switch:
                    self.tabs.setCurrentIndex(0)
                return

    def _update_buttons(self) -> None:
        row = self.table.selected_row()
        folder = self.state.rank_folder(row) if row else None
        self.profiler_button.setEnabled(folder is not None)
        kind = ((self.state.report or {}).get("source") or {}).get("kind", "")
        self.lanes_button.setEnabled(bool(self.state.report) and kind != "cluster_analysis_output")
        if self.rank_notice.rank is not None and (row is None or row["rank"] != self.rank_notice.rank):
            self.rank_notice.hide()  # it spoke of another rank
        no_timeline = folder is not None and not self.state.has_timeline(row)
        self.profiler_button.setToolTip(
            f"Rank {row['rank']} has no timeline in this export (statistics and communication only): "
            "click to see what it holds and the nearest rank that has one" if no_timeline else
            f"Open {folder} in the Profiler" if folder else
            "Select a rank first" if row is None and self.state.report else
            "msprof-analyze's output holds no rank's timeline: open the ranks' folders for that"
            if row else "Open a cluster first")

    def open_selected_rank(self, row: dict | None = None) -> None:
        """Ask the window to open the folder of ``row``'s rank (default: the selected one) in the Profiler;
        a rank whose folder holds no timeline gets a notice instead (what it holds, which rank to open)."""
        row = row or self.table.selected_row()
        folder = self.state.rank_folder(row) if row else None
        if folder is None:
            return
        if not self.state.has_timeline(row):
            files = self.state.folder_files(row)["files"]
            self.rank_notice.show_for(row, files, self.state.timeline_stand_in(row))
            self.status.emit(f"Cluster: rank {row['rank']} has no timeline in this export")
            return
        self.rank_notice.hide()
        self.request_open.emit(folder)

    def show_in_timeline(self, folder, t0: int, t1: int) -> None:
        """Bring the Profiler to the front on [t0, t1] of the rank at ``folder`` (its own clock, ns):
        a double-clicked collective or idle gap is a jump, not a load in the background."""
        if self.links is not None:
            self.links.show_wall_range.emit(Path(folder), t0, t1)
            self.links.focus.emit("profiler")

    def open_rank_timelines(self) -> None:
        """Ask the Profiler for every rank's timeline of the folder on screen."""
        if self.state.folder is not None and self.links is not None:
            self.links.rank_timelines.emit(self.state.folder)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, UserError):
        return exc.format()
    return f"Unexpected error: {type(exc).__name__}: {exc}\n(This is a bug in Studio; the log has the details.)"
