"""The advisor panel: pick a model, a profile, an accuracy result and a benchmark, read one report.

Findings are grouped by severity with their evidence and estimated gain; clicking one selects its
nodes in the graph and its time range in the profiler's timeline (through ``links``; a double
click also brings that panel to the front). The roofline is a pyqtgraph scatter (click a point ->
the op in the graph). Ticked automatic fixes are applied by the closed loop (apply, profile again,
check accuracy), whose before / after joins the report. Everything runs as jobs.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from studio.core.formats import Detected
from studio.ui.links import Overlay
from studio.ui.panels.advisor import state as st
from studio.ui.panels.advisor.findings_view import FindingsTree, finding_html
from studio.ui.panels.advisor.fixing import Fixing
from studio.ui.panels.advisor.state import AUTO_DEVICE, EMPTY, INPUTS
from studio.ui.panels.base import Panel


class AdvisorPanel(Fixing, Panel):
    """One report over graph, profile, accuracy and benchmark, with a roofline and a fix loop."""

    NAME = "advisor"
    TITLE = "Advisor"

    def __init__(self, runner, parent=None, links=None):
        super().__init__(runner, parent, links)
        self.report = None
        self.loop_result = None
        self.roofline = None  # made on first report (imports pyqtgraph)
        self._build()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        grid = QGridLayout()
        grid.setContentsMargins(4, 4, 4, 0)
        self.edits: dict[str, QLineEdit] = {}
        for row, (key, label, tip) in enumerate(INPUTS):
            edit = QLineEdit(self)
            edit.setPlaceholderText(tip)
            edit.setClearButtonEnabled(True)
            self.edits[key] = edit
            pick = QPushButton("…", self)
            pick.setFixedWidth(28)
            pick.setToolTip(f"Pick the {label.lower()} file")
            pick.clicked.connect(lambda _=False, k=key: self._on_pick(k, folder=False))
            grid.addWidget(QLabel(label, self), row, 0)
            grid.addWidget(edit, row, 1)
            grid.addWidget(pick, row, 2)
            if key == "profile":
                folder = QPushButton("Folder…", self)
                folder.setToolTip("Pick a profile folder")
                folder.clicked.connect(lambda _=False: self._on_pick("profile", folder=True))
                grid.addWidget(folder, row, 3)
        self.device = QComboBox(self)
        self.device.setToolTip("Roofline device: automatic = named by the profile, this computer for a local run, "
                               "else Ascend 310 (said so in the report)")
        self.device.addItem(AUTO_DEVICE)
        self.devices_button = QPushButton("Devices…", self)
        self.devices_button.setToolTip("Edit the roofline's device table (peaks, bandwidth, sources) or measure "
                                       "this computer")
        self.devices_button.clicked.connect(self.edit_devices)
        self.advise_button = QPushButton("Advise", self)
        self.advise_button.setToolTip("Run the advisor on the inputs above (as `studio advise`)")
        self.advise_button.clicked.connect(self.run_advisor)
        self.apply_button = QPushButton("Apply fixes…", self)
        self.apply_button.setToolTip("Apply the ticked automatic fixes to the ONNX model, profile it again with the "
                                     "same settings and check its outputs against the original")
        self.apply_button.clicked.connect(lambda: self.apply_fixes())
        self.apply_button.setEnabled(False)
        self.export_button = QPushButton("Export…", self)
        self.export_button.setToolTip("Save the report as self-contained HTML, Markdown or JSON")
        self.export_button.clicked.connect(lambda: self.export_report())
        self.export_button.setEnabled(False)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Device", self))
        bar.addWidget(self.device)
        bar.addWidget(self.devices_button)
        bar.addStretch(1)
        for button in (self.advise_button, self.apply_button, self.export_button):
            bar.addWidget(button)
        grid.addLayout(bar, len(INPUTS), 0, 1, 4)
        grid.setColumnStretch(1, 1)

        self.verdict = QLabel("", self)
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.verdict.setContentsMargins(6, 2, 6, 2)
        self.tree = FindingsTree(self)
        self.tree.finding_selected.connect(self._on_finding)
        self.tree.itemDoubleClicked.connect(lambda item, _c: self._on_finding(item.data(0, Qt.ItemDataRole.UserRole + 1),
                                                                              focus=True))
        self.detail = QTextBrowser(self)
        self.detail.setOpenExternalLinks(True)
        self.detail.setHtml(EMPTY)
        self.performance = QTextBrowser(self)
        self.before_after = QTextBrowser(self)
        self.before_after.setHtml("<p>Tick findings with an automatic fix and press <b>Apply fixes…</b>: the fixed "
                                  "model is profiled with the same settings and checked against the original.</p>")
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.detail, "Finding")
        self.roofline_box = QWidget(self)
        QVBoxLayout(self.roofline_box).setContentsMargins(0, 0, 0, 0)
        self.tabs.addTab(self.roofline_box, "Roofline")
        self.tabs.addTab(self.performance, "Performance")
        self.tabs.addTab(self.before_after, "Before / after")
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self.tree)
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setSizes([520, 560])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(grid)
        layout.addWidget(self.verdict)
        layout.addWidget(split, 1)

    def showEvent(self, event) -> None:  # Qt override: fill the device list lazily (reads the user file)
        super().showEvent(event)
        if self.device.count() == 1:
            self.refresh_devices()

    def refresh_devices(self) -> None:
        """The device table's names (built-in and the user's file) plus this computer."""
        from studio.tools.advisor.devices import THIS_COMPUTER, load_devices

        try:
            names = list(load_devices())
        except Exception as exc:  # noqa: BLE001 - a broken user file must not break the panel
            self.status.emit(f"Advisor: {exc}".splitlines()[0])
            names = []
        current = self.device.currentText()
        self.device.clear()
        self.device.addItems([AUTO_DEVICE, *names, THIS_COMPUTER])
        if current in names:
            self.device.setCurrentText(current)

    def edit_devices(self) -> None:
        """The device table dialog; the list refreshes after a save."""
        from studio.ui.panels.advisor.devices_dialog import DevicesDialog

        dialog = DevicesDialog(self.runner, self)
        if dialog.exec():
            self.refresh_devices()

    # ------------------------------------------------------------------ inputs
    def set_inputs(self, **paths) -> None:
        """Fill the input fields (model=, profile=, accuracy=, bench=); None clears one."""
        for key, value in paths.items():
            self.edits[key].setText("" if value is None else str(value))

    def inputs(self) -> dict[str, Path | None]:
        return {key: Path(edit.text().strip()) if edit.text().strip() else None for key, edit in self.edits.items()}

    def _on_pick(self, key: str, folder: bool) -> None:
        start = str(self.workspace_folder) if self.workspace_folder is not None else ""
        if folder:
            name = QFileDialog.getExistingDirectory(self, "Pick a profile folder", start)
        else:
            name, _ = QFileDialog.getOpenFileName(self, f"Pick the {key}", start)
        if name:
            self.edits[key].setText(name)

    def open_file(self, detected: Detected) -> None:
        """A saved report (JSON) opens as it is."""
        path = detected.path

        handle = self.runner.start(f"Opening {path.name}", lambda cancel: st.read_report_job(path), key="advisor-open")
        handle.finished.connect(self.show_report)
        handle.failed.connect(lambda exc, _tb: self.verdict.setText(f"Could not open {path.name}"))  # why: the board

    # ------------------------------------------------------------------ running
    def run_advisor(self) -> None:
        """Advise on the inputs given (a job)."""
        from studio.tools.advisor.engine import advise

        paths = self.inputs()
        if not any(paths.values()):
            self.verdict.setText("Give at least one input: a model, a profile, an accuracy result or a benchmark.")
            return
        device = st.chosen_device(self.device.currentText())
        self.verdict.setText("Advising…")
        self.advise_button.setEnabled(False)
        handle = self.runner.start("Advising", lambda cancel: advise(paths["model"], paths["profile"], paths["accuracy"],
                                                                     paths["bench"], device, cancel=cancel),
                                   key="advisor")
        handle.finished.connect(self.show_report)
        handle.failed.connect(self._on_failed)
        handle.cancelled.connect(lambda: (self.verdict.setText("Cancelled"), self.advise_button.setEnabled(True)))

    def _on_failed(self, exc, _tb) -> None:
        # Why it failed is on the notice board (the runner posts it); the verdict only stops
        # saying "Advising…" and the button comes back.
        self.advise_button.setEnabled(True)
        self.verdict.setText("Advisor failed")

    def show_report(self, report) -> None:
        """Show a report: verdict, findings tree, roofline, performance (and a loop's before / after)."""
        from studio.tools.advisor.render_html import loop_html

        self.report = report
        self.advise_button.setEnabled(True)
        self.export_button.setEnabled(True)
        summary = report.summary()
        self.verdict.setText(st.verdict_text(summary))
        self.verdict.setToolTip("\n".join(report.notes))
        for key, value in st.report_inputs(report).items():
            if value and not self.edits[key].text():
                self.edits[key].setText(str(value))
        self.tree.show_findings(report.sorted_findings())
        self.apply_button.setEnabled(st.can_apply_fixes(report))
        first = report.sorted_findings()[:1]
        # the first finding is shown, not selected: opening a report must not move the graph's selection
        self.detail.setHtml(EMPTY if not first else finding_html(first[0]) +
                            "<p><i>Click a finding to read its evidence; its nodes are selected in the graph and "
                            "its time range in the timeline (double click: go there).</i></p>")
        self.performance.setHtml(st.performance_html(report))
        if self.roofline is None:
            from studio.ui.panels.advisor.roofline_plot import RooflinePlot

            self.roofline = RooflinePlot(self.roofline_box)
            self.roofline.op_clicked.connect(self._on_op_clicked)
            self.roofline_box.layout().addWidget(self.roofline)
        self.roofline.show_report(report)
        if report.loop:
            self.before_after.setHtml(loop_html(report.loop))
        self.status.emit(f"Advisor: {summary['findings']} finding(s); {summary['verdict']}")

    # ------------------------------------------------------------------ links
    def _on_finding(self, finding, focus: bool = False) -> None:
        if finding is None:
            return
        self.detail.setHtml(finding_html(finding))
        self.tabs.setCurrentWidget(self.detail)
        model, profile = st.report_model(self.report), st.report_profile(self.report)
        graph_nodes = [n for n in finding.nodes if n]
        if graph_nodes and model is not None and finding.category != "msprof-analyze":
            self.links.show_node.emit(model, graph_nodes[0])
            self.links.overlay.emit(Overlay(f"Advisor: {finding.title}", {n: 1.0 for n in graph_nodes}, [0.5],
                                            False, "", model))
        if finding.time_ranges and profile is not None:
            t0, t1 = finding.time_ranges[0]
            self.links.show_time_range.emit(profile, int(t0), int(t1))
        if focus:
            if finding.time_ranges and profile is not None:
                self.links.focus.emit("profiler")
            elif graph_nodes and model is not None:
                self.links.focus.emit("graph")

    def _on_op_clicked(self, name: str) -> None:
        self.links.show_node.emit(st.report_model(self.report), name)
        self.status.emit(f"Advisor: {name} selected in the graph")

    # ------------------------------------------------------------------ fixes and export
