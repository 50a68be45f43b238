"""The accuracy panel: advisor findings, the per-op table, a metric scatter and a drill-down.

Opens comparison CSVs, dump folders (two make a comparison), NPU dump files and acl.json dump
configurations. Every read, dump, comparison and drill-down runs as a job; the GUI thread only
draws what the jobs return.
"""

from __future__ import annotations

import hashlib
import html
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QItemSelectionModel, Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from studio.formats import Detected
from studio.tools.accuracy.advisor import CONSISTENT, GOLDEN_NONFINITE, OVERFLOW, PROBLEM, UNDERFLOW
from studio.tools.accuracy.dumpset import MODE_LABELS
from studio.ui import style
from studio.ui.links import Overlay
from studio.ui.panels.accuracy.fp16_tools import Fp16Tools
from studio.ui.panels.accuracy.msprobe_view import MsprobeOpening, MsprobeView
from studio.ui.panels.accuracy.rows_model import ROW_ROLE, RowsFilter, RowsModel, verdict_label
from studio.ui.panels.base import Panel
from studio.ui.widgets.empty_state import EmptyState
from studio.ui.widgets.tool_row import ToolRow

if TYPE_CHECKING:  # the engine (numpy) is imported by the jobs, not when the window opens
    from studio.tools.accuracy.compare import CompareResult

_FINDING_COLOURS = {OVERFLOW: "#d73a49", UNDERFLOW: "#d73a49", GOLDEN_NONFINITE: "#d73a49", PROBLEM: "#d73a49",
                    CONSISTENT: "#2ea043"}
_EMPTY_TITLE = "No comparison yet"
_EMPTY = ("Open a comparison CSV, or two dump folders (golden first, then target): folders written by "
          "<code>studio dump</code>, .npy dump folders or Ascend NPU dumps. The Graph panel's <b>FP16 check</b> "
          "makes both dumps of an ONNX model for you.<br>From the command line: <code>studio dump MODEL -o DIR "
          "[--fp16-sim]</code>, then <code>studio compare GOLDEN TARGET -o result.csv</code>.")


class AccuracyPanel(Fp16Tools, MsprobeOpening, Panel):
    """Compare two runs op by op and find the first op that goes wrong."""

    NAME = "accuracy"
    TITLE = "Accuracy"

    def __init__(self, runner, parent=None, links=None):
        super().__init__(runner, parent, links)
        self.result: CompareResult | None = None
        self.pending: list[Path] = []          # dump folders waiting for a partner
        self.last_pair: tuple[Path, Path] | None = None  # the dumps of the comparison shown
        self._drill_handle = None
        self.input_dialog = None              # the last "sizes of dynamic inputs" dialog
        self.scatter = self.drilldown = None   # pyqtgraph views, made on first use
        self._drilldown_plots: list = []  # the drill-down's plots, made one per turn before it
        self._build()
        self.links.compare_models.connect(self._on_compare_models)
        self.links.check_fp16.connect(self.check_fp16_where)

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.sources = QLabel(self)
        self.sources.setWordWrap(True)
        self.sources.setTextFormat(Qt.TextFormat.RichText)
        self.sources.setContentsMargins(style.GAP, 0, style.GAP, 0)
        self.export_button = QPushButton("Export CSV…", self)
        self.export_button.clicked.connect(lambda: self.export_csv())
        self.graph_button = QPushButton("Show in graph", self)
        self.graph_button.setToolTip("Select the op in the graph panel and colour every op by its verdict (pass / "
                                     "fail); ops not compared are greyed out")
        self.graph_button.clicked.connect(self.show_in_graph)
        self.clear_button = QPushButton("Clear", self)
        self.clear_button.clicked.connect(self.clear)
        self.dumps_button = QPushButton("Compare dumps…", self)
        self.dumps_button.setToolTip("Pick the golden dump folder, then the target dump folder")
        self.dumps_button.clicked.connect(self._on_pick_dumps)
        self.mapping_button = QPushButton("Mapping…", self)
        self.mapping_button.setToolTip('Compare again through a fused-op mapping: the converter\'s report '
                                       '("node_mapping") or {"converted op": ["original op", ...]}')
        self.mapping_button.clicked.connect(self._on_pick_mapping)
        from studio.ui.panels.run.host_button import host_button

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
        for button in (self.dumps_button, self.host_button, self._build_fp16_tools(), self.graph_button,
                       self.mapping_button, self.export_button, self.clear_button):
            bar.addWidget(button)
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
        self.table = QTableView(self)
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideLeft)  # op paths differ at their end
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(22)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for column, width in ((0, 44), (1, 230), (2, 140), (3, 215)):
            self.table.setColumnWidth(column, width)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_row)
        filters = QHBoxLayout()
        filters.addWidget(self.filter_edit, 1)
        filters.addWidget(QLabel("Show:", self))
        filters.addWidget(self.status_filter)
        table_box = QWidget(self)
        table_layout = QVBoxLayout(table_box)
        table_layout.setContentsMargins(0, 0, 0, 0)
        table_layout.addLayout(filters)
        table_layout.addWidget(self.table, 1)
        self.tabs = QTabWidget(self)
        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.splitter.addWidget(table_box)
        self.splitter.addWidget(self.tabs)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setSizes([600, 400])  # the table first: on a 720 px screen the plots' hint took most
        layout = QVBoxLayout(self)
        layout.setContentsMargins(style.GAP, style.GAP, style.GAP, style.GAP)
        layout.addWidget(bar)
        layout.addWidget(self.sources)
        layout.addWidget(self.findings)
        layout.addWidget(self.empty, 1)
        layout.addWidget(self.splitter, 1)
        self.msprobe_view = MsprobeView(self)  # two msprobe dumps compared: module tree and arguments
        layout.addWidget(self.msprobe_view, 1)
        self._show_state()

    def _ensure_plots(self) -> None:
        while self._build_next_plot():
            pass

    def _build_next_plot(self) -> bool:
        """Make the next missing piece of the pyqtgraph views; False when both exist (each piece takes
        20-30 ms)."""
        from studio.ui.panels.accuracy.plots import DrilldownView, MetricScatter  # pyqtgraph: on first use

        if self.scatter is None:
            self.scatter = MetricScatter(self)
            self.scatter.row_clicked.connect(self.select_row)
            self.tabs.addTab(self.scatter, "Scatter by op")
            return True
        if self.drilldown is None:
            import pyqtgraph as pg

            if len(self._drilldown_plots) < DrilldownView.PLOTS:
                self._drilldown_plots.append(pg.PlotWidget())
                return True
            self.drilldown = DrilldownView(self, self._drilldown_plots)
            self.tabs.addTab(self.drilldown, "Drill-down")
            return True
        return False

    def _when_plots_exist(self, then) -> None:
        """Call ``then`` once both views exist, making them one per event-loop turn (together with
        the result they would hold the window up for a tenth of a second)."""
        if self._build_next_plot():
            # A real 10 ms timer, not 0: zero-delay calls run back to back before any timer or
            # paint, so two 30 ms plots made one "turn" apart still held the window up for 70 ms.
            QTimer.singleShot(10, self, lambda: self._when_plots_exist(then))
        else:
            then()

    def _show_state(self) -> None:
        has = self.result is not None
        msprobe = self.msprobe_result is not None and not has
        self.msprobe_view.setVisible(msprobe)
        self.splitter.setVisible(has)
        self.empty.setVisible(not has and not msprobe)
        self.export_button.setEnabled(has)
        self.graph_button.setEnabled(has)
        self.mapping_button.setEnabled(has and self.last_pair is not None)
        self.fp16_button.setEnabled(has and self.last_pair is not None and not self.result)  # a failing one
        self.findings.setVisible(bool(self.findings.text()))
        if not has and not self.pending:
            self.sources.setText("<b>Accuracy</b> — compare two runs op by op")
        elif not has:
            self.sources.setText(f"Golden: <b>{html.escape(self.pending[0].name)}</b> — open a second dump "
                                 "folder as the target to compare")
            self.sources.setToolTip(str(self.pending[0]))

    # ------------------------------------------------------------------ opening
    def open_file(self, detected: Detected) -> None:
        fmt, path = detected.format.id, detected.path
        if fmt == "compare_csv":
            from studio.tools.accuracy.report_csv import read_csv

            self._start("Reading " + path.name, lambda cancel: _as_job(read_csv, path), self.set_result)
        elif fmt in ("dump_dir", "npu_dump"):
            self.add_dump(path)
        elif fmt in ("msprobe_dump", "msprobe_dir"):
            self.add_msprobe(path)
        elif fmt == "acl_json":
            from studio.tools.accuracy.acl_config import read_acl_config

            self._start("Reading " + path.name, lambda cancel: _as_job(read_acl_config, path), self._on_acl_config)
        else:  # a single .npy: its folder is what can be compared
            self.status.emit(f"{path.name}: open its folder (a dump) to compare it with another run")
            self.add_dump(path.parent)

    def add_dump(self, path: Path) -> None:
        """Queue a dump as golden; the second one becomes the target and starts the comparison."""
        self.pending = [p for p in self.pending if p != path] + [path]
        if len(self.pending) >= 2:
            golden, target = self.pending[-2:]
            self.pending = []
            self.compare(golden, target)
        else:
            self.result = None
            self.model.set_result(None)
            self.findings.setText("")
            self._show_state()
            from studio.tools.accuracy.dumpset import load_dump

            self._start(f"Reading {path.name}", lambda cancel: _as_job(load_dump, path),
                        lambda dump: self._on_pending_read(path, dump))

    def _on_pending_read(self, path: Path, dump) -> None:
        """Say what the waiting golden dump is (its mode: FP32, FP16 simulation, NPU...)."""
        if self.pending == [path] and self.result is None:
            self.sources.setText(f"Golden: <b>{html.escape(path.name)}</b> — "
                                 f"{html.escape(dump.describe())}<br>Open a second dump folder as the target "
                                 "to compare")

    def compare(self, golden: Path, target: Path, mapping: dict | None = None) -> None:
        """Compare two dumps as a job and show the result."""
        from studio.tools.accuracy.compare import compare_dumps

        pair = (Path(golden), Path(target))
        self._start(f"Comparing {pair[0].name} with {pair[1].name}",
                    lambda cancel: compare_dumps(pair[0], pair[1], mapping=mapping, cancel=cancel),
                    lambda result: self._on_compared(result, pair))

    def compare_with_mapping(self, mapping_file: Path) -> None:
        """Compare the shown dumps again through a mapping file (read in the job)."""
        if self.last_pair is None:
            return
        from studio.tools.accuracy.compare import compare_dumps
        from studio.tools.accuracy.matching import load_mapping

        golden, target = self.last_pair

        def job(cancel):
            mapping = load_mapping(mapping_file)
            return (yield from compare_dumps(golden, target, mapping=mapping, cancel=cancel))

        self._start(f"Comparing {target.name} with {golden.name} through {Path(mapping_file).name}", job,
                    lambda result: self._on_compared(result, (golden, target)))

    def _on_compared(self, result, pair: tuple[Path, Path]) -> None:
        self.set_result(result, pair)

    def _on_pick_csv(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Open a comparison CSV", str(self.workspace_folder or ""),
                                              "Comparison CSV (*.csv);;All files (*)")
        if name:
            self.request_open.emit(Path(name))

    def _on_pick_dumps(self) -> None:
        golden = QFileDialog.getExistingDirectory(self, "Golden dump folder (e.g. the FP32 run)")
        if not golden:
            return
        target = QFileDialog.getExistingDirectory(self, "Target dump folder (FP16, NPU, converted model)",
                                                  str(Path(golden).parent))
        if target:
            self.compare(Path(golden), Path(target))

    def _on_pick_mapping(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Fused-op mapping", "", "JSON (*.json)")
        if name:
            self.compare_with_mapping(Path(name))

    def _on_compare_models(self, golden_model, target_model, shapes=None, files=None) -> None:
        """The converter's "compare against original": dump both with the same inputs, compare.

        Dynamic dims of the original take the converted model's fixed sizes when it has them;
        any left open are asked for (a dim is never guessed).
        """
        golden_model, target_model = Path(golden_model), Path(target_model)
        if shapes is None and files is None:
            self._ask_inputs(golden_model, lambda s, f: self._on_compare_models(golden_model, target_model, s, f),
                             sizes_from=target_model)
            return
        from studio.paths import cache_dir

        key = hashlib.sha1(f"{golden_model.resolve()}|{target_model.resolve()}".encode()).hexdigest()[:10]
        folder = cache_dir() / "accuracy" / f"{target_model.stem}-{key}"
        self.links.focus.emit(self.NAME)
        self._start(f"Comparing {target_model.name} with {golden_model.name}",
                    lambda cancel: _dump_and_compare(golden_model, target_model, folder, cancel, shapes, files),
                    lambda result: self._on_compared(result, (folder / "golden", folder / "target")))

    def _on_pick_here_and_host(self) -> None:
        start = str(self.workspace_folder) if self.workspace_folder is not None else ""
        name, _ = QFileDialog.getOpenFileName(self, "Compare an ONNX model here and on a host", start,
                                              "ONNX models (*.onnx)")
        if name:
            self.compare_here_and_on_host(Path(name))

    def compare_here_and_on_host(self, model, host: str | None = None, providers: list[str] | None = None,
                                 shapes=None, files=None) -> None:
        """Dump ``model`` here and with Studio's engine on ``host``, compare (asks for the host, and
        for dynamic input sizes, first)."""
        model = Path(model)
        if host is None:
            hosts = sorted(self.host_context.store.hosts)
            if not hosts:
                self.status.emit("Accuracy: add a host first (Hosts panel, or `studio ssh add`)")
                self.sources.setText("No SSH host is set up: add one in the Hosts panel (or with `studio ssh add "
                                     "NAME --host ADDRESS`), then compare again.")
                return
            from studio.ui.panels.accuracy.host_compare_dialog import HostCompareDialog

            dialog = self.host_compare_dialog = HostCompareDialog(model.name, hosts, self)
            dialog.accepted.connect(lambda: self.compare_here_and_on_host(model, dialog.host(), dialog.providers()))
            dialog.open()
            return
        if shapes is None and files is None:
            self.links.focus.emit(self.NAME)
            self._ask_inputs(model, lambda s, f: self.compare_here_and_on_host(model, host, providers, s, f))
            return
        from studio.ui.panels.accuracy.on_engine import cross_check_job, here_and_host_folders

        here, there = here_and_host_folders(model, host, self.workspace_folder)
        context, workspace = self.host_context, self.workspace_folder
        self._start(f"Comparing {model.name} here and on {host}",
                    lambda cancel: cross_check_job(context, host, model, workspace, cancel, providers, files, shapes),
                    lambda result: self._on_compared(result, (here, there)))

    def check_fp16_where(self, model) -> None:
        """The graph's "FP16 check": asks where it runs (this computer or a host) when hosts exist."""
        model = Path(model)
        hosts = sorted(self.host_context.store.hosts)
        if not hosts:
            self.check_fp16(model)
            return
        from studio.ui.widgets.run_on import RunOnDialog

        dialog = self.run_on_dialog = RunOnDialog(model.name, hosts, self, verb="Check FP16 of",
                                                  what="each dump comes back here", ok_text="Check")
        dialog.accepted.connect(lambda: self.check_fp16(model, host=dialog.host()))
        dialog.open()

    def check_fp16(self, model, shapes=None, files=None, host: str | None = None) -> None:
        """Dump ``model`` in FP32 and FP16 simulation, compare, show; the verdict overlay goes to the graph.

        Inputs with dynamic dims are asked for first (``shapes`` / ``files`` skip the question).
        With ``host``, both dumps are made by Studio's engine on that SSH host and compared here.
        """
        from studio.tools.accuracy.fp16_check import fp16_folders

        model = Path(model)
        if shapes is None and files is None:
            self.links.focus.emit(self.NAME)
            self._ask_inputs(model, lambda s, f: self.check_fp16(model, s, f, host),
                             on_failed=lambda exc: self._on_fp16_ended(model, f"failed: {str(exc).splitlines()[0]}"))
            return
        golden, target = fp16_folders(model, self.workspace_folder)
        self.links.focus.emit(self.NAME)
        if self.result is None:  # a comparison on screen stays until the new one replaces it
            self.sources.setText(f"FP16 check of <b>{html.escape(model.name)}</b>: dumping FP32 and FP16 "
                                 "simulation…")
            self.sources.setToolTip(str(model))

        def job(cancel):
            from studio.ui.panels.accuracy.on_engine import fp16_check_job

            return (yield from fp16_check_job(context, host, model, workspace, cancel, files, shapes))

        context, workspace = (self.host_context if host else None), self.workspace_folder
        where = f" on {host}" if host else ""
        handle = self._start(f"FP16 check of {model.name}{where}", job,
                             lambda result: self._on_fp16_checked(result, (golden, target)))
        handle.failed.connect(lambda exc, _tb: self._on_fp16_ended(model, f"failed: {str(exc).splitlines()[0]}"))
        handle.cancelled.connect(lambda: self._on_fp16_ended(model, "cancelled"))

    def _ask_inputs(self, model: Path, then, sizes_from: Path | None = None, on_failed=None) -> None:
        """Read the model's dynamic inputs (a job); ask for their sizes when there are any, then ``then``."""
        from studio.tools.accuracy.local_dump import inputs_to_ask, static_shapes

        def job(cancel):
            yield from ()
            asked = inputs_to_ask(model)
            known = static_shapes(sizes_from) if (asked and sizes_from is not None) else {}
            return asked, known

        def on_read(found) -> None:
            asked, known = found
            dynamic = [entry for entry in asked if any(not isinstance(d, int) for d in entry[1])]
            shapes = {name: known[name] for name, dims, _ in dynamic if name in known and len(known[name]) == len(dims)}
            open_dims = [entry for entry in dynamic if entry[0] not in shapes]
            valued = [entry for entry in asked if not entry[2].startswith("float")]
            # Ask when a size is missing, or when an integer/boolean input would get random values.
            left = [entry for entry in asked if entry[0] not in shapes] if (open_dims or valued) else []
            if not left:
                if shapes:
                    self.status.emit("Input sizes taken from the converted model: "
                                     + "; ".join(f"{n} {v}" for n, v in shapes.items()))
                then(shapes, {})
                return
            from studio.ui.panels.accuracy.input_dialog import InputShapesDialog

            dialog = InputShapesDialog(model, left, self)
            self.input_dialog = dialog

            def accepted() -> None:
                more, files = dialog.values()
                then({**shapes, **more}, files)

            dialog.accepted.connect(accepted)
            dialog.rejected.connect(lambda: self.status.emit(f"{model.name}: not run (no input sizes given)"))
            dialog.open()

        handle = self._start(f"Reading the inputs of {model.name}", job, on_read)
        if on_failed is not None:
            handle.failed.connect(lambda exc, _tb: on_failed(exc))

    def _on_fp16_ended(self, model: Path, what: str) -> None:
        """A failed or cancelled check: say so where the "dumping…" line was (a shown result stays)."""
        if self.result is None:
            self.sources.setText(f"FP16 check of <b>{html.escape(model.name)}</b> {html.escape(what)}")
        self.status.emit(f"FP16 check of {model.name} {what}")

    def _on_fp16_checked(self, result, pair: tuple[Path, Path]) -> None:
        self.set_result(result, pair)
        self.emit_overlay()
        self.links.focus.emit(self.NAME)

    def _start(self, title: str, make_job, on_done):
        first_use = self.scatter is None or self.drilldown is None
        job = (lambda cancel: _plots_imported_first(make_job(cancel))) if first_use else make_job
        handle = self.runner.start(title, job, key=f"accuracy:{title}")
        if first_use:  # the job imported pyqtgraph; the views are made in steps before the result
            handle.finished.connect(lambda result: self._when_plots_exist(lambda: on_done(result)))
        else:
            handle.finished.connect(on_done)
        handle.failed.connect(lambda exc, _tb: self.status.emit(f"{title} failed: {exc}"))
        self.status.emit(title + "…")
        return handle

    def _on_acl_config(self, config) -> None:
        self.findings.setText(f"<b>acl.json</b> {html.escape(str(config.path))}<pre>{html.escape(config.describe())}</pre>"
                              "When the dump is done, open its folder here (or run `studio compare`).")
        self._show_state()

    # ------------------------------------------------------------------ result
    def set_result(self, result: CompareResult, pair: tuple[Path, Path] | None = None) -> None:
        """Show a comparison: findings, table, scatter. ``pair``: the dump folders it came from."""
        self._ensure_plots()
        self.result = result
        if pair is None:  # e.g. read from a CSV: its rows name the dump folders
            golden, target = Path(result.golden), Path(result.target)
            pair = (golden, target) if golden.is_dir() and target.is_dir() else None
        self.last_pair = pair
        self.model.set_result(result)
        # The scatter is drawn one event-loop turn later: the table's first paint and the plot's
        # then come in two turns instead of one 50 ms stall (measured with 512 compared tensors).
        QTimer.singleShot(0, self, lambda: self._draw_scatter(result))
        self.drilldown.clear("Select a compared row (table or scatter) to see its tensors.")
        g_mode = MODE_LABELS.get(result.golden_mode, result.golden_mode)
        t_mode = MODE_LABELS.get(result.target_mode, result.target_mode)
        self.sources.setText(f"Golden: <b>{html.escape(Path(result.golden).name)}</b> <i>({html.escape(g_mode)})</i>"
                             f" &nbsp;vs&nbsp; Target: <b>{html.escape(Path(result.target).name)}</b> "
                             f"<i>({html.escape(t_mode)})</i><br>{html.escape(result.summary())}")
        self.sources.setToolTip(f"golden: {result.golden}\ntarget: {result.target}")
        parts = []
        for f in result.findings:
            colour = _FINDING_COLOURS.get(f.type, "#d29922")
            parts.append(f"<div><span style='color:{colour}'>●</span> {html.escape(f.message)}"
                         f"<br><span style='color:gray'>{html.escape(f.advice)}</span></div>")
        self.findings.setText("".join(parts))
        self._show_state()
        self.status.emit(f"Accuracy: {result.summary()}")
        first = next((f.row for f in result.findings if f.row is not None), None)
        if first is not None:
            self.select_row(first)

    def clear(self) -> None:
        self.result, self.pending, self.last_pair = None, [], None
        self.msprobe_result, self.msprobe_pending = None, []
        self.model.set_result(None)
        self.findings.setText("")
        if self.scatter is not None:
            self.scatter.set_result(None)
            self.drilldown.clear("")
        self._show_state()

    # ------------------------------------------------------------------ selection and drill-down
    def select_row(self, row_index: int) -> None:
        """Select the row with this index in the table (clearing a filter that hides it)."""
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

    def _draw_scatter(self, result) -> None:
        if self.result is not result:  # another result came first: it draws its own
            return
        self.scatter.set_result(result)
        row = self.selected_row
        if row is not None:  # a row selected before the points existed gets its ring now
            self.scatter.focus_row(row)

    @property
    def selected_row(self):
        index = self.table.selectionModel().currentIndex()
        return index.data(ROW_ROLE) if index.isValid() else None

    def _on_current_row(self, current, _previous) -> None:
        row = current.data(ROW_ROLE) if current.isValid() else None
        if row is None or self.scatter is None:
            return
        self.scatter.focus_row(row)  # shows the metric the row fails, e.g. MRE at cosine 0.999998
        if row.golden_file and row.target_file:
            from studio.tools.accuracy.drilldown import compute_drilldown

            if self._drill_handle is not None:
                self._drill_handle.cancel()
            self.drilldown.clear(f"Loading {row.name}…")
            self._drill_handle = self.runner.start(
                f"Drill-down {row.name}",
                lambda cancel, r=row: compute_drilldown(r.name, r.golden_file, r.target_file, cancel=cancel))
            self._drill_handle.finished.connect(self.drilldown.show_drilldown)
            self._drill_handle.failed.connect(lambda exc, _tb: self.drilldown.clear(f"Cannot load {row.name}: {exc}"))
        else:
            self.drilldown.clear(f"{row.name}: {row.status} — only one side has this tensor"
                                 + (f" ({row.note})" if row.note else ""))

    # ------------------------------------------------------------------ actions
    def export_csv(self, path: Path | None = None) -> None:
        """Write the comparison as msaccucmp-style CSV (asks where when no path is given)."""
        if self.result is None:
            return
        if path is None:
            name, _ = QFileDialog.getSaveFileName(self, "Export comparison", "comparison.csv", "CSV (*.csv)")
            if not name:
                return
            path = Path(name)
        result = self.result
        self._start(f"Exporting {Path(path).name}", lambda cancel: _as_job(result.write_csv, path),
                    lambda written: self.status.emit(f"Wrote {written}"))

    def show_in_graph(self) -> None:
        """Select the current op in the graph panel and colour all ops by their verdict (see emit_overlay).

        Names are those of the side whose model is known (the target's first: the converted
        model; else the golden one, e.g. for an NPU dump against an ONNX run).
        """
        if self.result is None:
            return
        r = self.result
        side, model = self.emit_overlay()
        row = self.selected_row or next((x for x in r.rows if x.passed is False), None)
        if row is not None:
            entry = (row.target if side == "target" else row.golden) or row.target or row.golden
            own_side = entry is (row.target if side == "target" else row.golden)
            # A one-side-only op of the other side is not in this model: let the graph panel
            # look it up in the model on screen.
            self.links.show_node.emit(model if own_side else None, entry.op_name)
        self.links.focus.emit("graph")


    def emit_overlay(self) -> tuple[str, Path | None]:
        """Send each compared op's verdict to the graph (pass / fail by every threshold, inf/NaN
        included; the text beside the box names the failing metrics and the cosine); ops the
        comparison did not cover are greyed out there. Returns (side whose names are used, its model)."""
        r = self.result
        side = "target" if r.model else "golden"
        model = Path(r.model) if r.model else (Path(r.golden_model) if r.golden_model else None)
        values, verdicts, labels = {}, {}, {}
        for row in r.compared:
            entry = row.target if side == "target" else row.golden
            values[entry.op_name] = float(row.metrics.cosine)
            verdicts[entry.op_name] = "fail" if row.violations else "pass"
            labels[entry.op_name] = verdict_label(row)
        self.links.overlay.emit(Overlay("Accuracy verdict", values, [r.thresholds.cosine], higher_is_better=True,
                                        model=model, verdicts=verdicts, labels=labels))
        return side, model


def _as_job(func, *args):
    """Run a plain function as a one-step job."""
    yield from ()
    return func(*args)


def _load_inputs(files: dict | None) -> dict:
    """The arrays of the .npy files the input dialog named (read in the job)."""
    from studio.npyfile import load_npy

    return {name: load_npy(path, what=f"input {name}") if isinstance(path, Path) else path
            for name, path in (files or {}).items()}


def _dump_and_compare(golden_model: Path, target_model: Path, folder: Path, cancel, shapes=None, files=None):
    """Dump both models with the same inputs, compare through the converter's report if any."""
    from studio.tools.accuracy.compare import compare_dumps
    from studio.tools.accuracy.local_dump import dump_model, reusable_inputs
    from studio.tools.accuracy.matching import find_converter_report, load_mapping

    inputs = _load_inputs(files)
    golden = yield from dump_model(golden_model, folder / "golden", inputs=inputs, seed=0, cancel=cancel,
                                   shapes=shapes)
    # The converted model gets the very arrays the original got, where its inputs accept them.
    same = reusable_inputs(golden, target_model)
    target = yield from dump_model(target_model, folder / "target", inputs=same, seed=0, cancel=cancel)
    report = find_converter_report(target_model)
    mapping = load_mapping(report) if report else None
    return (yield from compare_dumps(golden, target, mapping=mapping, cancel=cancel))


def _plots_imported_first(job):
    """Run ``job`` after importing the pyqtgraph views (half a second of imports, in the job's
    thread rather than the GUI's) and loading the colour map they use."""
    from studio.jobs import Progress

    yield Progress(None, "loading the plots")
    import pyqtgraph as pg

    import studio.ui.panels.accuracy.plots  # noqa: F401

    pg.colormap.get("viridis")  # read from a file once, then cached by pyqtgraph
    return (yield from job)
