"""The status bar's job widget (progress, cancel) and the log panel (live records, log file path)."""

from __future__ import annotations

import logging
import time

from PySide6.QtWidgets import QLabel

from studio.core.jobs import Progress
from studio.core.logs import log_file_path, setup_logging
from studio.ui.jobs import JobRunner, JobState
from studio.ui.widgets.job_status import JobStatusWidget
from studio.ui.widgets.log_view import LogView


def slow_job(cancel):
    for i in range(10_000):
        time.sleep(0.005)
        yield Progress(i / 10_000, f"chunk {i}")


def test_status_widget_shows_progress_and_cancels(qtbot):
    runner = JobRunner()
    widget = JobStatusWidget(runner)
    qtbot.addWidget(widget)
    widget.show()
    assert widget.label.isHidden(), "nothing running: nothing shown"
    handle = runner.start("Parsing trace.json", slow_job)
    qtbot.waitUntil(lambda: "chunk" in widget.label.text(), timeout=5000)
    assert widget.shown_job is handle
    assert widget.label.text().startswith("Parsing trace.json")
    assert widget.bar.maximum() == 1000 and widget.cancel_button.isVisible()
    with qtbot.waitSignal(handle.ended, timeout=5000):
        widget.cancel_button.click()
    assert handle.state is JobState.CANCELLED
    qtbot.waitUntil(widget.label.isHidden, timeout=2000)


def test_status_widget_lists_every_job_in_its_menu(qtbot):
    runner = JobRunner()
    widget = JobStatusWidget(runner)
    qtbot.addWidget(widget)
    first = runner.start("Upload", slow_job, key="host")
    second = runner.start("Profile", slow_job, key="host")
    assert widget.jobs_button.text() == "2 jobs"
    widget._fill_menu()
    texts = [a.text() for a in widget.jobs_button.menu().actions() if a.text()]
    assert texts == ["Cancel: Upload (running)", "Cancel: Profile (queued)", "Cancel all"]
    with qtbot.waitSignals([first.ended, second.ended], timeout=5000):
        widget.jobs_button.menu().actions()[-1].trigger()


def test_log_view_shows_the_log_file_and_live_records(qtbot):
    path = setup_logging()
    assert path == log_file_path()
    view = LogView(path)
    qtbot.addWidget(view)
    logging.getLogger("studio.test").warning("uploading %s", "model.om")
    qtbot.waitUntil(lambda: "uploading model.om" in view.text.toPlainText(), timeout=2000)
    labels = [label.text() for label in view.findChildren(QLabel)]
    assert any(str(path) in text for text in labels)
    for handler in logging.getLogger("studio").handlers:
        handler.flush()
    assert "uploading model.om" in path.read_text()
    view.detach()
