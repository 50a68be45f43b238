"""The Advisor panel's automatic fixes (the closed loop: apply, profile again, check accuracy) and
the report's export; a mixin of :class:`~studio.ui.panels.advisor.panel.AdvisorPanel`."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox

from studio.core.serial import to_json
from studio.ui.panels.advisor.state import loop_verdict


class Fixing:
    """Apply the ticked fixes as a job and show the before / after; write the report to a file."""

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
        # Why it failed is on the notice board (the runner posts it); the verdict only stops
        # saying "Applying…" and the button comes back.
        handle.failed.connect(lambda exc, _tb: (self.verdict.setText("Apply failed"),
                                                self.apply_button.setEnabled(True)))

    def _on_looped(self, result) -> None:
        self.loop_result = result
        self.apply_button.setEnabled(True)
        if self.report is not None:
            self.report.loop = to_json(result)
        from studio.tools.advisor.render_html import loop_html

        self.before_after.setHtml(loop_html(to_json(result)))
        self.tabs.setCurrentWidget(self.before_after)
        from studio.tools.advisor.loop import change_text

        self.verdict.setText(loop_verdict(result))
        self.status.emit(f"Advisor: fixed model {result.fixed} ({change_text(to_json(result)).split(';')[0]})")

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
