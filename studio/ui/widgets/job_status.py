"""The status-bar widget for running jobs: what runs, how far it is, and a cancel button."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QProgressBar, QToolButton, QWidget

from studio.core.jobs import Progress
from studio.ui.jobs import JobHandle, JobRunner


class JobStatusWidget(QWidget):
    """Shows the newest active job with its progress; a menu lists and cancels all of them."""

    def __init__(self, runner: JobRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self.runner = runner
        self.label = QLabel(self)
        self.label.setMinimumWidth(260)
        self.bar = QProgressBar(self)
        self.bar.setFixedWidth(160)
        self.bar.setTextVisible(False)
        self.cancel_button = QToolButton(self)
        self.cancel_button.setText("Cancel")
        self.cancel_button.setToolTip("Cancel this job")
        self.cancel_button.clicked.connect(self._on_cancel_clicked)
        self.jobs_button = QToolButton(self)
        self.jobs_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.jobs_button.setToolTip("All running jobs")
        self.jobs_button.setMenu(QMenu(self.jobs_button))
        self.jobs_button.menu().aboutToShow.connect(self._fill_menu)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 4, 0)
        for widget in (self.label, self.bar, self.cancel_button, self.jobs_button):
            layout.addWidget(widget)
        runner.job_added.connect(self._on_job_changed)
        runner.job_ended.connect(self._on_job_changed)
        self._shown: JobHandle | None = None
        self._refresh()

    @property
    def shown_job(self) -> JobHandle | None:
        """The job whose progress is on display."""
        return self._shown

    def _on_job_changed(self, handle: JobHandle) -> None:
        self._refresh()

    def _refresh(self) -> None:
        jobs = self.runner.active_jobs
        if self._shown is not None:
            try:
                self._shown.progress.disconnect(self._on_progress)
            except (RuntimeError, TypeError):
                pass
        self._shown = jobs[-1] if jobs else None
        visible = self._shown is not None
        for widget in (self.label, self.bar, self.cancel_button, self.jobs_button):
            widget.setVisible(visible)
        if not visible:
            return
        self._shown.progress.connect(self._on_progress)
        self.jobs_button.setText(f"{len(jobs)} job{'s' if len(jobs) != 1 else ''}")
        self._on_progress(self._shown.last_progress)

    def _on_progress(self, step: Progress) -> None:
        job = self._shown
        if job is None:
            return
        text = f"{job.title}: {step.message}" if step.message else job.title
        self.label.setText(self.label.fontMetrics().elidedText(text, Qt.TextElideMode.ElideMiddle, 300))
        self.label.setToolTip(text)  # the full text is always one hover away
        if step.fraction is None:
            self.bar.setRange(0, 0)  # busy indicator
        else:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(max(0.0, min(1.0, step.fraction)) * 1000))

    def _on_cancel_clicked(self) -> None:
        if self._shown is not None:
            self._shown.cancel()

    def _fill_menu(self) -> None:
        menu = self.jobs_button.menu()
        menu.clear()
        for job in self.runner.active_jobs:
            action = menu.addAction(f"Cancel: {job.title} ({job.state.value})")
            action.triggered.connect(job.cancel)
        if self.runner.active_jobs:
            menu.addSeparator()
            menu.addAction("Cancel all", self.runner.cancel_all)
