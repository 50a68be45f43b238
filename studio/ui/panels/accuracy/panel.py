"""The accuracy panel: advisor findings, the per-op table, a metric scatter and a drill-down.

Opens comparison CSVs, dump folders (two make a comparison), NPU dump files and acl.json dump
configurations. Every read, dump, comparison and drill-down runs as a job; the GUI thread only
draws what the jobs return. What the panel shows lives in :class:`~.state.AccuracyState` (Qt-free);
this module lays the widgets out and wires them to it.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFileDialog, QLabel, QPushButton, QSizePolicy, QSplitter, QVBoxLayout

from studio.core.formats import Detected
from studio.ui import style
from studio.ui.links import Overlay
from studio.ui.panels.accuracy import state as st
from studio.ui.panels.accuracy.fp16_tools import Fp16Tools
from studio.ui.panels.accuracy.actions import ComparingActions
from studio.ui.panels.accuracy.thresholds_dialog import thresholds_button
from studio.ui.panels.accuracy.msprobe_view import MsprobeOpening, MsprobeView
from studio.ui.panels.accuracy.rows_model import ROW_ROLE, verdict_label
from studio.ui.panels.accuracy.state import AccuracyState, as_job
from studio.ui.panels.accuracy.widgets.plot_tabs import PlotTabs
from studio.ui.panels.accuracy.widgets.plots_loading import plots_imported_first
from studio.ui.panels.accuracy.widgets.report_area import ReportArea
from studio.ui.panels.accuracy.widgets.rows_table import RowsTable
from studio.ui.panels.base import Panel, state_property
from studio.ui.widgets.empty_state import EmptyState
from studio.ui.widgets.tool_row import ToolRow

_EMPTY_TITLE = "No comparison yet"
_EMPTY = ("Open a comparison CSV, or two dump folders (golden first, then target): folders written by "
          "<code>studio dump</code>, .npy dump folders or Ascend NPU dumps. The Graph panel's <b>FP16 check</b> "
          "makes both dumps of an ONNX model for you.<br>From the command line: <code>studio dump MODEL -o DIR "
          "[--fp16-sim]</code>, then <code>studio compare GOLDEN TARGET -o result.csv</code>.")


class AccuracyPanel(ComparingActions, Fp16Tools, MsprobeOpening, Panel):
    """Compare two runs op by op and find the first op that goes wrong."""

    NAME = "accuracy"
    TITLE = "Accuracy"

    result = state_property("result", "The comparison shown (a CompareResult), or None.")
    pending = state_property("pending", "Dump folders waiting for a partner.")
    last_pair = state_property("last_pair", "The dumps of the comparison shown, or None.")

    def __init__(self, runner, parent=None, links=None):
        super().__init__(runner, parent, links)
        self.state = AccuracyState()
        self.input_dialog = None              # the last "sizes of dynamic inputs" dialog
        self._build()
        self.links.compare_models.connect(self._on_compare_models)
        self.links.check_fp16.connect(self.check_fp16_where)

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.sources = QLabel(self)
        self.sources.setWordWrap(True)
        self.sources.setTextFormat(Qt.TextFormat.RichText)
        self.sources.setContentsMargins(style.GAP, 0, style.GAP, 0)
        self.export_button = _button("Export CSV…", "", lambda: self.export_csv(), self)
        self.graph_button = _button("Show in graph", "Select the op in the graph panel and colour every op by its "
                                    "verdict (pass / fail); ops not compared are greyed out", self.show_in_graph, self)
        self.clear_button = _button("Clear", "", self.clear, self)
        self.dumps_button = _button("Compare dumps…", "Pick the golden dump folder, then the target dump folder",
                                    self._on_pick_dumps, self)
        self.mapping_button = _button("Mapping…", 'Compare again through a fused-op mapping: the converter\'s '
                                      'report ("node_mapping") or {"converted op": ["original op", ...]}',
                                      self._on_pick_mapping, self)
        from studio.ui.widgets.host_button import host_button

        # the host actions, shared with the Run menu
        self.host_button, self.host_actions = host_button(self, self.links, {
            "dump": "Run a run configuration on its host with a dump acl.json and open the NPU dumps here",
            "dump_compare": "Dump on the host, and the original .onnx here with the same inputs, then compare "
                            "them op by op here"})
        # Any Linux host (no CANN): the same .onnx dumped here and by Studio's engine there.
        self.host_button.menu().addSeparator()
        self.here_and_host_action = self.host_button.menu().addAction("Compare an .onnx here and on a host…")
        self.here_and_host_action.setToolTip("Dump an ONNX model here and with Studio's engine on any SSH host (e.g. "
                                             "with its GPU provider), same input, and compare the two op by op")
        self.here_and_host_action.triggered.connect(lambda: self._on_pick_here_and_host())
        bar = ToolRow(self, "accuracy")  # the tools that do not fit go under its "More" menu
        self.thresholds_button = thresholds_button(self)
        # Apply sits beside FP16 ▾ (a row of its own made the window taller than a 720 px screen)
        for button in (self.dumps_button, self.host_button, self._build_fp16_tools(), self.apply_button,
                       self.graph_button, self.thresholds_button, self.mapping_button, self.export_button,
                       self.clear_button):
            bar.addWidget(button)
        self.tool_row = bar
        bar.set_shown(self.apply_button, False)  # until a set is found
        self.findings = QLabel(self)
        self.findings.setWordWrap(True)
        self.findings.setTextFormat(Qt.TextFormat.RichText)
        self.findings.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.findings.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.findings.setContentsMargins(6, 4, 6, 4)
        self.empty = EmptyState(_EMPTY_TITLE, _EMPTY, self)
        self.empty.add_action("Open a comparison CSV…", self._on_pick_csv,
                              "A CSV written by studio compare, or by Ascend's msaccucmp")
        self.empty.add_action("Compare dumps…", self._on_pick_dumps, self.dumps_button.toolTip())

        self.rows_table = RowsTable(self)
        self.filter_edit, self.status_filter = self.rows_table.filter_edit, self.rows_table.status_filter
        self.model, self.proxy, self.table = self.rows_table.model, self.rows_table.proxy, self.rows_table.table
        self.table.selectionModel().currentRowChanged.connect(self._on_current_row)
        self.tabs = PlotTabs(self.runner, self)  # the scatter and the drill-down, made on first use
        self.tabs.row_clicked.connect(self.select_row)
        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.splitter.addWidget(self.rows_table)
        self.splitter.addWidget(self.tabs)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setSizes([600, 400])  # the table first: on a 720 px screen the plots' hint took most
        layout = QVBoxLayout(self)
        layout.setContentsMargins(style.GAP, style.GAP, style.GAP, style.GAP)
        layout.addWidget(bar)
        layout.addWidget(self.sources)
        layout.addWidget(ReportArea(self.findings, self))  # long reports scroll; the table keeps its rows
        layout.addWidget(self.empty, 1)
        layout.addWidget(self.splitter, 1)
        self.msprobe_view = MsprobeView(self)  # two msprobe dumps compared: module tree and arguments
        layout.addWidget(self.msprobe_view, 1)
        self._show_state()

    def _show_state(self) -> None:
        has = self.state.result is not None
        msprobe = self.msprobe_result is not None and not has
        self.msprobe_view.setVisible(msprobe)
        self.splitter.setVisible(has)
        self.empty.setVisible(not has and not msprobe)
        self.export_button.setEnabled(has)
        self.graph_button.setEnabled(has)
        self.thresholds_button.setEnabled(has)
        self.mapping_button.setEnabled(self.state.can_remap())
        self.fp16_button.setEnabled(self.state.can_reduce_fp16())  # a failing one
        self.findings.setVisible(bool(self.findings.text()))
        waiting = self.state.waiting_text()
        if waiting is not None:
            self.sources.setText(waiting)
            if self.state.pending:
                self.sources.setToolTip(str(self.state.pending[0]))

    # ------------------------------------------------------------------ opening
    def open_file(self, detected: Detected) -> None:
        fmt, path = detected.format.id, detected.path
        if fmt == "compare_csv":
            from studio.tools.accuracy.report_csv import read_csv

            self._start("Reading " + path.name, lambda cancel: as_job(read_csv, path), self.set_result)
        elif fmt in ("dump_dir", "npu_dump"):
            self.add_dump(path)
        elif fmt in ("msprobe_dump", "msprobe_dir", "msprobe_result"):
            self.add_msprobe(path)
        elif fmt == "acl_json":
            from studio.tools.accuracy.acl_config import read_acl_config

            self._start("Reading " + path.name, lambda cancel: as_job(read_acl_config, path), self._on_acl_config)
        else:  # a single .npy: its folder is what can be compared
            self.status.emit(f"{path.name}: open its folder (a dump) to compare it with another run")
            self.add_dump(path.parent)

    def add_dump(self, path: Path) -> None:
        """Queue a dump as golden; the second one becomes the target and starts the comparison."""
        pair = self.state.queue_dump(path)
        if pair is not None:
            self.compare(*pair)
            return
        self.model.set_result(None)
        self.findings.setText("")
        self._show_state()
        from studio.tools.accuracy.dumpset import load_dump

        self._start(f"Reading {path.name}", lambda cancel: as_job(load_dump, path),
                    lambda dump: self._on_pending_read(path, dump))

    def _on_pending_read(self, path: Path, dump) -> None:
        """Say what the waiting golden dump is (its mode: FP32, FP16 simulation, NPU...)."""
        text = self.state.golden_read_text(path, dump.describe())
        if text is not None:
            self.sources.setText(text)

    def _start(self, title: str, make_job, on_done):
        first_use = not self.tabs.made
        job = (lambda cancel: plots_imported_first(make_job(cancel))) if first_use else make_job
        handle = self.runner.start(title, job, key=f"accuracy:{title}")
        if first_use:  # the job imported pyqtgraph; the views are made in steps before the result
            handle.finished.connect(lambda result: self.tabs.when_made(lambda: on_done(result)))
        else:
            handle.finished.connect(on_done)
        # a failure is the runner's to report (the notice board, which the status line shows)
        self.status.emit(title + "…")
        return handle

    def _on_acl_config(self, config) -> None:
        self.findings.setText(f"<b>acl.json</b> {html.escape(str(config.path))}<pre>{html.escape(config.describe())}</pre>"
                              "When the dump is done, open its folder here (or run `studio compare`).")
        self._show_state()

    # ------------------------------------------------------------------ result
    def set_result(self, result, pair: tuple[Path, Path] | None = None) -> None:
        """Show a comparison: findings, table, scatter. ``pair``: the dump folders it came from."""
        self.tabs.ensure()
        self.state.show(result, pair)
        self.model.set_result(result)
        # The scatter is drawn one event-loop turn later: the table's first paint and the plot's
        # then come in two turns instead of one 50 ms stall (measured with 512 compared tensors).
        QTimer.singleShot(0, self, lambda: self._draw_scatter(result))
        self.drilldown.clear("Select a compared row (table or scatter) to see its tensors.")
        self.sources.setText(st.sources_text(result))
        self.sources.setToolTip(f"golden: {result.golden}\ntarget: {result.target}")
        self.findings.setText(st.findings_text(result))
        self._show_state()
        self.status.emit(f"Accuracy: {result.summary()}")
        first = st.first_finding_row(result)
        if first is not None:
            self.select_row(first)

    def clear(self) -> None:
        self.state.clear()
        self.msprobe_result, self.msprobe_pending = None, []
        self.model.set_result(None)
        self.findings.setText("")
        self.forget_fp32_set()
        if self.scatter is not None:
            self.scatter.set_result(None)
            self.drilldown.clear("")
        self._show_state()

    # ------------------------------------------------------------------ selection and drill-down
    def select_row(self, row_index: int) -> None:
        """Select the row with this index in the table (clearing a filter that hides it)."""
        self.rows_table.select(row_index)

    def _draw_scatter(self, result) -> None:
        if self.state.result is not result:  # another result came first: it draws its own
            return
        self.scatter.set_result(result)
        row = self.selected_row
        if row is not None:  # a row selected before the points existed gets its ring now
            self.scatter.focus_row(row)

    @property
    def scatter(self):
        """The metric scatter (pyqtgraph), or None until first used."""
        return self.tabs.scatter

    @property
    def drilldown(self):
        """The drill-down of the selected row (pyqtgraph), or None until first used."""
        return self.tabs.drilldown

    @property
    def selected_row(self):
        index = self.table.selectionModel().currentIndex()
        return index.data(ROW_ROLE) if index.isValid() else None

    def _on_current_row(self, current, _previous) -> None:
        self.tabs.show_row(current.data(ROW_ROLE) if current.isValid() else None)

    # ------------------------------------------------------------------ actions
    def export_csv(self, path: Path | None = None) -> None:
        """Write the comparison as msaccucmp-style CSV (asks where when no path is given)."""
        if self.state.result is None:
            return
        if path is None:
            name, _ = QFileDialog.getSaveFileName(self, "Export comparison", "comparison.csv", "CSV (*.csv)")
            if not name:
                return
            path = Path(name)
        result = self.state.result
        self._start(f"Exporting {Path(path).name}", lambda cancel: as_job(result.write_csv, path),
                    lambda written: self.status.emit(f"Wrote {written}"))

    def show_in_graph(self) -> None:
        """Select the current op in the graph panel and colour all ops by their verdict (see emit_overlay)."""
        if self.state.result is None:
            return
        side, model = self.emit_overlay()
        target = st.graph_target(self.state.result, self.selected_row, side, model)
        if target is not None:
            self.links.show_node.emit(*target)
        self.links.focus.emit("graph")

    def emit_overlay(self) -> tuple[str, Path | None]:
        """Send each compared op's verdict to the graph (pass / fail by every threshold, inf/NaN
        included; the text beside the box names the failing metrics and the cosine); ops the
        comparison did not cover are greyed out there. Returns (side whose names are used, its model)."""
        result = self.state.result
        found = st.verdicts(result, verdict_label)
        self.links.overlay.emit(Overlay("Accuracy verdict", found.values, [result.thresholds.cosine],
                                        higher_is_better=True, model=found.model, verdicts=found.verdicts,
                                        labels=found.labels))
        return found.side, found.model


def _button(text: str, tip: str, slot, parent) -> QPushButton:
    button = QPushButton(text, parent)
    button.setToolTip(tip)  # '' clears it
    button.clicked.connect(slot)
    return button
