"""The Deployment panel's dry run, apply, conflict choices and diff, each a job on the host's
queue; a mixin of :class:`~studio.ui.panels.deploy.panel.DeployPanel`."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from studio.tools.deploy.deployments import Deployment
from studio.tools.deploy.plan import Plan
from studio.ui.panels.deploy.state import actionable, deletions, deletions_question, failure_text, plan_text


class Syncing:
    """Plan, apply and compare a deployment; the window never waits on the host."""

    def _connector(self, deployment: Deployment):
        from studio.tools.deploy.sync import host_connector

        # The host's pooled connection; typed secrets go to the system keyring once the login works.
        return host_connector(self.host_context, deployment)

    def dry_run(self) -> None:
        """Scan both sides and show the plan (a job on the host's queue)."""
        deployment = self.current_deployment()
        if deployment is None or self._busy():
            return
        from studio.tools.deploy.sync import plan_job

        mode, delete, checksum = self.mode.currentData(), self.delete.isChecked(), self.checksum.isChecked()
        connector = self._connector(deployment)
        self._start(f"Planning {mode} of {deployment.name}",
                    lambda cancel: plan_job(deployment, mode, connector, delete, checksum, cancel=cancel),
                    deployment, self._on_plan_ready)

    def apply(self) -> None:
        """Carry out the plan on screen, conflicts as chosen per row."""
        deployment, plan = self.current_deployment(), self.plan
        if deployment is None or plan is None or self._busy() or not actionable(plan):
            return
        counts = plan.counts()
        if deletions(counts) and not self.confirm_deletions(deployment, counts):
            return
        from studio.tools.deploy.sync import apply_job

        connector = self._connector(deployment)
        self._start(f"Applying {plan.mode} of {deployment.name}",
                    lambda cancel: apply_job(deployment, plan, connector, cancel=cancel), deployment,
                    self._on_applied)

    def confirm_deletions(self, deployment: Deployment, counts: dict[str, int]) -> bool:
        """Ask before an apply that deletes files (the CLI asks the same, or takes --yes)."""
        answer = QMessageBox.question(
            self, "Delete files?", deletions_question(deployment, counts, self.plan.mode if self.plan else "sync"),
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def choose(self, choice: str | None) -> None:
        """Settle the selected conflict rows: "local", "remote" or "skip"."""
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        if self.plan is not None and self.model.set_choice(rows, choice):
            self.summary.setText(self.plan.summary())
            self._update_buttons()

    def show_diff(self) -> None:
        """Fetch the selected file from both sides (a job) and show their unified diff."""
        deployment = self.current_deployment()
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()}) if self.plan else []
        if deployment is None or len(rows) != 1 or self._busy():
            return
        from studio.tools.deploy.sync import text_diff

        path = self.plan.items[rows[0]].path
        connector = self._connector(deployment)
        self._start(f"Comparing {path}", lambda cancel: text_diff(deployment, path, connector, cancel),
                    deployment, lambda text, p=path: self._on_diff_ready(p, text))

    def _on_diff_ready(self, path: str, text: str) -> None:
        from studio.ui.panels.deploy.diff_view import DiffDialog

        self.last_diff = text
        dialog = DiffDialog(f"local ↔ remote: {path}", text, self)
        dialog.setModal(False)
        dialog.show()

    def _start(self, title: str, make_job, deployment: Deployment, on_finished) -> None:
        handle = self.runner.start(title, make_job, key=f"host:{deployment.host}")
        self._handle = handle
        handle.progress.connect(self._on_progress)
        handle.finished.connect(on_finished)
        handle.failed.connect(self._on_failed)
        handle.cancelled.connect(lambda: self.summary.setText("Cancelled. Files already moved are complete; "
                                                              "the others are untouched."))
        handle.ended.connect(self._on_ended)
        self.progress.setRange(0, 0)
        self.progress.show()
        self.progress_label.setText(title)
        self._update_buttons()

    def _busy(self) -> bool:
        return self._handle is not None and self._handle.active

    def _on_progress(self, step) -> None:
        if step.fraction is None:
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(step.fraction * 1000))
        metrics = self.progress_label.fontMetrics()
        self.progress_label.setText(metrics.elidedText(step.message, Qt.TextElideMode.ElideMiddle,
                                                       max(50, self.progress_label.width())))
        self.progress_label.setToolTip(step.message)

    def _on_plan_ready(self, plan: Plan) -> None:
        self._set_plan(plan)
        text = plan_text(plan)
        self.summary.setText(text)
        self.status.emit(f"Deployment: {text}")

    def _on_applied(self, result) -> None:
        self.last_result = result
        text = result.summary()
        self.summary.setText(text)
        self.status.emit(f"Deployment: {text}")
        self._handle = None
        self.dry_run()  # show what is left (conflicts, failures) straight away

    def _on_failed(self, exc, _traceback: str) -> None:
        self.summary.setText(f"<span style='color:#c62828'>{failure_text(exc)}</span>")

    def _on_ended(self) -> None:
        if self._handle is not None and not self._handle.active:
            self._handle = None
        if self._handle is None:
            self.progress.hide()
            self.progress_label.setText("")
        self._update_buttons()

    def _on_cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
