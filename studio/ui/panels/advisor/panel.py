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
    QMessageBox,
    QPushButton,
    QSplitter,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from studio.formats import Detected
from studio.ui.links import Overlay
from studio.ui.panels.advisor.findings_view import FindingsTree, finding_html
from studio.ui.panels.base import Panel

INPUTS = (("model", "Model", "ONNX or OM model"),
          ("profile", "Profile", "studio profile run folder, PROF_* / ASCEND_PROFILER_OUTPUT folder, trace JSON or CSV"),
          ("accuracy", "Accuracy", "comparison CSV (studio compare, fp16-check, msaccucmp) or its JSON"),
          ("bench", "Benchmark", "benchmark JSON (studio profile run --json, ais_bench summary)"))
AUTO_DEVICE = "automatic"
_EMPTY = ("<p>No report yet.</p><p>Give any of a model, a profile, an accuracy result and a benchmark, then "
          "<b>Advise</b>. From the command line: <code>studio advise --model M --profile P --accuracy R "
          "-o report.html</code>.</p>")


class AdvisorPanel(Panel):
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
        self.detail.setHtml(_EMPTY)
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

        def job(cancel):
            import json

            from studio.jobs import Progress
            from studio.tools.advisor.model import Report

            yield Progress(None, f"reading {path.name}")
            return Report.from_json(json.loads(path.read_text(encoding="utf-8")))

        handle = self.runner.start(f"Opening {path.name}", job, key="advisor-open")
        handle.finished.connect(self.show_report)
        handle.failed.connect(lambda exc, _tb: self.verdict.setText(f"Could not open {path.name}: "
                                                                    f"{str(exc).splitlines()[0]}"))

    # ------------------------------------------------------------------ running
    def run_advisor(self) -> None:
        """Advise on the inputs given (a job)."""
        from studio.tools.advisor.engine import advise

        paths = self.inputs()
        if not any(paths.values()):
            self.verdict.setText("Give at least one input: a model, a profile, an accuracy result or a benchmark.")
            return
        device = self.device.currentText()
        device = None if device in ("", AUTO_DEVICE) else device
        self.verdict.setText("Advising…")
        self.advise_button.setEnabled(False)
        handle = self.runner.start("Advising", lambda cancel: advise(paths["model"], paths["profile"], paths["accuracy"],
                                                                     paths["bench"], device, cancel=cancel),
                                   key="advisor")
        handle.finished.connect(self.show_report)
        handle.failed.connect(self._on_failed)
        handle.cancelled.connect(lambda: (self.verdict.setText("Cancelled"), self.advise_button.setEnabled(True)))

    def _on_failed(self, exc, _tb) -> None:
        self.advise_button.setEnabled(True)
        self.verdict.setText(f"Advisor failed: {str(exc).splitlines()[0]}")

    def show_report(self, report) -> None:
        """Show a report: verdict, findings tree, roofline, performance (and a loop's before / after)."""
        from studio.tools.advisor.render_html import loop_html

        self.report = report
        self.advise_button.setEnabled(True)
        self.export_button.setEnabled(True)
        summary = report.summary()
        counts = ", ".join(f"{n} {k}" for k, n in summary["by_severity"].items() if n)
        self.verdict.setText(f"<b>{summary['verdict']}</b> — {summary['findings']} finding(s)"
                             + (f" ({counts})" if counts else ""))
        self.verdict.setToolTip("\n".join(report.notes))
        for key, value in (("model", report.model_path), ("profile", report.profile_path),
                           ("accuracy", report.inputs.get("accuracy")), ("bench", report.inputs.get("bench"))):
            if value and not self.edits[key].text():
                self.edits[key].setText(str(value))
        self.tree.show_findings(report.sorted_findings())
        self.apply_button.setEnabled(bool(report.model_path and str(report.model_path).endswith(".onnx")
                                          and any(f.fix for f in report.findings)))
        first = report.sorted_findings()[:1]
        # the first finding is shown, not selected: opening a report must not move the graph's selection
        self.detail.setHtml(_EMPTY if not first else finding_html(first[0]) +
                            "<p><i>Click a finding to read its evidence; its nodes are selected in the graph and "
                            "its time range in the timeline (double click: go there).</i></p>")
        self.performance.setHtml(performance_html(report))
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
        model = Path(self.report.model_path) if self.report and self.report.model_path else None
        profile = Path(self.report.profile_path) if self.report and self.report.profile_path else None
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
        model = Path(self.report.model_path) if self.report and self.report.model_path else None
        self.links.show_node.emit(model, name)
        self.status.emit(f"Advisor: {name} selected in the graph")

    # ------------------------------------------------------------------ fixes and export
    def apply_fixes(self, output: Path | None = None) -> None:
        """Apply the ticked fixes with the closed loop (a job); ``output`` asked for when None."""
        from studio.tools.advisor.fixes import FIXES

        if self.report is None or not self.report.model_path:
            return
        ticked = self.tree.ticked()
        fixes = list(dict.fromkeys(f.fix for f in ticked))
        if not fixes:
            self.verdict.setText("Tick at least one finding with an automatic fix.")
            return
        model = Path(self.report.model_path)
        if output is None:
            start = (self.workspace_folder or model.parent) / f"{model.stem}_fixed.onnx"
            name, _ = QFileDialog.getSaveFileName(self, "Save the fixed model", str(start), "ONNX models (*.onnx)")
            if not name:
                return
            output = Path(name)
        risky = [f for f in fixes if FIXES[f].changes_accuracy]
        profile = Path(self.report.profile_path) if self.report.profile_path else None
        baseline = profile if profile is not None and (profile / "studio_profile.json").is_file() else None
        from studio.tools.advisor.loop import closed_loop

        self.verdict.setText(f"Applying {', '.join(fixes)}, profiling again, checking accuracy…")
        self.apply_button.setEnabled(False)
        handle = self.runner.start("Applying fixes", lambda cancel: closed_loop(
            model, output, fixes, allow_accuracy_change=bool(risky), baseline=baseline, cancel=cancel),
            key=f"advisor-loop:{model}")
        handle.finished.connect(self._on_looped)
        handle.failed.connect(lambda exc, _tb: (self.verdict.setText(f"Apply failed: {str(exc).splitlines()[0]}"),
                                                self.apply_button.setEnabled(True)))

    def _on_looped(self, result) -> None:
        self.loop_result = result
        self.apply_button.setEnabled(True)
        if self.report is not None:
            self.report.loop = result.to_json()
        from studio.tools.advisor.render_html import loop_html

        self.before_after.setHtml(loop_html(result.to_json()))
        self.tabs.setCurrentWidget(self.before_after)
        from html import escape

        from studio.tools.advisor.loop import change_text

        latency = change_text(result.to_json())
        cosines = ", ".join(f"{o['output']} {o['cosine']:.6f}" for o in result.outputs)
        grew = "".join(f" <b>Warning:</b> {escape(w)}." for w in result.applied.warnings)
        self.verdict.setText(f"<b>{escape(result.applied.describe())}</b>.{grew} Latency {escape(latency)}; "
                             f"cosine {cosines} — {'accuracy OK' if result.accuracy_passed else 'ACCURACY CHANGED'}")
        self.status.emit(f"Advisor: fixed model {result.fixed} ({latency.split(';')[0]})")

    def export_report(self, path: Path | None = None) -> Path | None:
        """Write the report (HTML / Markdown / JSON by suffix); asks for the path when None."""
        from studio.tools.advisor import write_report

        if self.report is None:
            return None
        if path is None:
            start = (self.workspace_folder or Path.home()) / "advisor_report.html"
            name, _ = QFileDialog.getSaveFileName(self, "Export the report", str(start),
                                                  "HTML (*.html);;Markdown (*.md);;JSON (*.json)")
            if not name:
                return None
            path = Path(name)
        try:
            written = write_report(self.report, path)
        except Exception as exc:  # noqa: BLE001 - a user error (bad suffix, unwritable) is shown, not raised
            QMessageBox.warning(self, "Export", str(exc))
            return None
        self.status.emit(f"Advisor: report written to {written}")
        return written


def performance_html(report) -> str:
    """The Model Performance Report section as rich text."""
    from html import escape

    perf = report.performance
    rows = [("verdict", perf.get("verdict", ""))]
    if perf.get("step_ms"):
        rows += [("step", f"{perf['step_ms']:.3f} ms ({perf.get('step_source', '')})"),
                 ("throughput", f"{perf.get('throughput_per_s', 0):.1f}/s at batch {perf.get('batch') or '?'}")]
    rows += [(f"latency {k}", f"{v:.3f} ms") for k, v in (perf.get("latency_ms") or {}).items()]
    for key in ("compute_utilisation", "bandwidth_utilisation"):
        if key in perf:
            rows.append((key.replace("_", " "), f"{perf[key]:.2%} (estimate)"))
    if perf.get("time_by_bound"):
        rows.append(("op time by bound", ", ".join(f"{k} {v:.0%}" for k, v in perf["time_by_bound"].items())))
    dev = report.device
    rows.append(("roofline device", f"{dev.get('name')}{' (estimate)' if dev.get('estimate') else ''}: "
                                    f"{dev.get('source', '')}"))
    out = ["<table cellpadding='3'>"] + [f"<tr><th align='left'>{escape(a)}</th><td>{escape(str(b))}</td></tr>"
                                         for a, b in rows] + ["</table>"]
    if perf.get("time_by_category"):
        out.append("<h4>Time by op category</h4><table cellpadding='3'>")
        out += [f"<tr><td>{escape(c['category'])}</td><td align='right'>{c['ms']:.3f} ms</td>"
                f"<td align='right'>{c['share']:.1%}</td></tr>" for c in perf["time_by_category"]]
        out.append("</table>")
    if perf.get("top_ops"):
        out.append("<h4>Top ops</h4><table cellpadding='3'>")
        out += [f"<tr><td><code>{escape(o['name'])}</code></td><td>{escape(o['op_type'])}</td>"
                f"<td align='right'>{o['ms']:.3f} ms</td><td align='right'>{o['share']:.1%}</td></tr>"
                for o in perf["top_ops"]]
        out.append("</table>")
    if report.notes:
        out.append("<h4>Notes</h4><ul>" + "".join(f"<li>{escape(n)}</li>" for n in report.notes) + "</ul>")
    return "".join(out)
