"""The accuracy panel: advisor findings, the per-op table, a metric scatter and a drill-down.

Opens comparison CSVs, dump folders (two make a comparison), NPU dump files and acl.json dump
configurations. Every read, dump, comparison and drill-down runs as a job; the GUI thread only
draws what the jobs return. What the panel shows lives in :class:`~.state.AccuracyState` (Qt-free);
this module lays the widgets out and wires them to it and to the parts the panel is composed of,
each with one job, joined by signals: :class:`~.result_jobs.ResultJobs`, :class:`~.actions.Comparisons`,
:class:`~.fp16_tools.Fp16Steps` and :class:`~.msprobe_compare.MsprobeCompare`.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFileDialog, QLabel, QSplitter, QVBoxLayout

from studio.core.formats import Detected
from studio.ui import style
from studio.ui.links import Overlay
from studio.ui.panels.accuracy import state as st
from studio.ui.panels.accuracy.actions import Comparisons
from studio.ui.panels.accuracy.fp16_tools import Fp16Steps
from studio.ui.panels.accuracy.msprobe_compare import MsprobeCompare
from studio.ui.panels.accuracy.msprobe_view import MsprobeView
from studio.ui.panels.accuracy.result_jobs import ResultJobs
from studio.ui.panels.accuracy.rows_model import ROW_ROLE, verdict_label
from studio.ui.panels.accuracy.state import AccuracyState, as_job
from studio.ui.panels.accuracy.widgets.plot_tabs import PlotTabs
from studio.ui.panels.accuracy.widgets.report_area import ReportArea, findings_label
from studio.ui.panels.accuracy.widgets.rows_table import RowsTable
from studio.ui.panels.accuracy.widgets.toolbar import build_toolbar, empty_state
from studio.ui.panels.base import Panel, forward, state_property


class AccuracyPanel(Panel):
    """Compare two runs op by op and find the first op that goes wrong."""

    NAME = "accuracy"
    TITLE = "Accuracy"

    result = state_property("result", "The comparison shown (a CompareResult), or None.")
    pending = state_property("pending", "Dump folders waiting for a partner.")
    last_pair = state_property("last_pair", "The dumps of the comparison shown, or None.")
    # the parts' attributes and methods, under the panel's own names (tests and the main window use them)
    compare, compare_with_mapping, check_fp16, compare_here_and_on_host = (
        forward("comparisons", n) for n in ("compare", "compare_with_mapping", "check_fp16", "compare_here_and_on_host"))
    input_dialog, host_compare_dialog, run_on_dialog = (
        forward("comparisons", n) for n in ("input_dialog", "host_compare_dialog", "run_on_dialog"))
    reduce_failure, find_fp32_set, apply_fp32_set, reduce_action, precision_action, apply_button = (
        forward("fp16", n) for n in ("reduce_failure", "find_fp32_set", "apply_fp32_set", "reduce_action",
                                     "precision_action", "apply_button"))
    fp16_sim_action, fp16_onnx_action, fp16_button, _found_set = (
        forward("fp16", n) for n in ("fp16_sim_action", "fp16_onnx_action", "button", "_found_set"))
    msprobe_result = forward("msprobe", "result")

    def __init__(self, runner, parent=None, links=None):
        super().__init__(runner, parent, links)
        self.state = AccuracyState()
        self.tabs = PlotTabs(self.runner, self)  # the scatter and the drill-down, made on first use
        self.jobs = ResultJobs(runner, self.tabs, self)
        context = lambda: (self.host_context, self.workspace_folder)  # noqa: E731 (both change at run time)
        self.comparisons = Comparisons(self.jobs, self.state, self.links, context, self)
        self.fp16 = Fp16Steps(runner, self.state, self.links, lambda: self.workspace_folder, self)
        self.msprobe_view = MsprobeView(self)  # two msprobe dumps compared: module tree and arguments
        self.msprobe = MsprobeCompare(runner, self.msprobe_view, self.links, self)
        self._build()
        self._wire()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.sources = QLabel(self)
        self.sources.setWordWrap(True)
        self.sources.setTextFormat(Qt.TextFormat.RichText)
        self.sources.setContentsMargins(style.GAP, 0, style.GAP, 0)
        bar = build_toolbar(self)
        self.findings = findings_label(self)
        self.empty = empty_state(self.comparisons, self.dumps_button.toolTip(), self)

        self.rows_table = RowsTable(self)
        self.filter_edit, self.status_filter = self.rows_table.filter_edit, self.rows_table.status_filter
        self.model, self.proxy, self.table = self.rows_table.model, self.rows_table.proxy, self.rows_table.table
        self.table.selectionModel().currentRowChanged.connect(self._on_current_row)
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
        layout.addWidget(self.msprobe_view, 1)
        self._show_state()

    def _wire(self) -> None:
        comparisons, fp16, msprobe = self.comparisons, self.fp16, self.msprobe
        for part in (self.jobs, comparisons, fp16, msprobe):
            part.status.connect(self.status)
        for signal, slot in ((comparisons.compared, self.set_result), (comparisons.fp16_checked, self._on_fp16_checked),
                             (comparisons.note, self._on_note), (comparisons.open_requested, self.request_open),
                             (fp16.applied, self._on_applied), (fp16.report, self.add_report),
                             (fp16.load_requested, self.request_load), (msprobe.shown, self._show_state),
                             (msprobe.waiting, self.sources.setText),
                             (self.links.compare_models, comparisons.compare_models),
                             (self.links.check_fp16, comparisons.check_fp16_where)):
            signal.connect(slot)
        fp16.apply_ready.connect(lambda ready: self.tool_row.set_shown(self.apply_button, ready))

    def _on_note(self, text: str, tooltip: str) -> None:
        self.sources.setText(text)
        if tooltip:
            self.sources.setToolTip(tooltip)

    def _on_fp16_checked(self, result, pair: tuple[Path, Path]) -> None:
        self.fp16.forget_fp32_set()  # a set found for the last check is not this one's
        self.set_result(result, pair)
        self.emit_overlay()
        self.links.focus.emit(self.NAME)

    def _on_applied(self, comparison, pair: tuple[Path, Path]) -> None:
        self.set_result(comparison, pair)
        self.emit_overlay()

    def add_report(self, text: str) -> None:
        """Add a line (rich text) under the findings; its plain text goes to the status bar."""
        self.findings.setText(self.findings.text() + f"<div>{text}</div>")
        # The status bar shows plain text: every tag goes (a raw <code> showed there), entities are read.
        plain = html.unescape(re.sub(r"<[^>]+>", "", text.split("<br>")[0]))
        self.status.emit("Accuracy: " + plain[:160])

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
        self.fp16.button.setEnabled(self.state.can_reduce_fp16())  # a failing one
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

            self.jobs.start("Reading " + path.name, lambda cancel: as_job(read_csv, path), self.set_result)
        elif fmt in ("dump_dir", "npu_dump"):
            self.add_dump(path)
        elif fmt in ("msprobe_dump", "msprobe_dir", "msprobe_result"):
            self.msprobe.add(path)
        elif fmt == "acl_json":
            from studio.tools.accuracy.acl_config import read_acl_config

            self.jobs.start("Reading " + path.name, lambda cancel: as_job(read_acl_config, path), self._on_acl_config)
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

        self.jobs.start(f"Reading {path.name}", lambda cancel: as_job(load_dump, path),
                    lambda dump: self._on_pending_read(path, dump))

    def _on_pending_read(self, path: Path, dump) -> None:
        """Say what the waiting golden dump is (its mode: FP32, FP16 simulation, NPU...)."""
        text = self.state.golden_read_text(path, dump.describe())
        if text is not None:
            self.sources.setText(text)

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
        self.msprobe.result, self.msprobe.pending = None, []
        self.model.set_result(None)
        self.findings.setText("")
        self.fp16.forget_fp32_set()
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
        self.jobs.start(f"Exporting {Path(path).name}", lambda cancel: as_job(result.write_csv, path),
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
