"""The JobRunner: progress, results, cancel (with clean-up), errors, per-key queues, GUI-thread delivery."""

from __future__ import annotations

import threading
import time

import pytest

from studio.core.errors import UserError
from studio.core.jobs import CancelToken, Progress
from studio.ui.jobs import JobRunner, JobState
from studio.ui.notifier import Notifier


@pytest.fixture
def runner(qtbot):
    runner = JobRunner()
    yield runner
    runner.cancel_all()
    runner.wait_for_done(5000)


def steps_job(n: int, delay: float, cancel: CancelToken, log: list):
    try:
        for i in range(n):
            time.sleep(delay)
            yield Progress((i + 1) / n, f"step {i + 1}/{n}")
        return "done"
    finally:
        log.append("closed")


def test_progress_and_result_arrive_on_the_gui_thread(qtbot, runner):
    gui_thread = threading.current_thread()
    seen_threads, progress, log = [], [], []
    handle = runner.start("count", lambda cancel: steps_job(5, 0.06, cancel, log))
    handle.progress.connect(lambda p: (progress.append(p), seen_threads.append(threading.current_thread())))
    with qtbot.waitSignal(handle.finished, timeout=5000) as blocker:
        pass
    assert blocker.args == ["done"]
    assert handle.state is JobState.FINISHED and handle.result == "done"
    assert progress and progress[-1].fraction == pytest.approx(1.0)
    assert all(t is gui_thread for t in seen_threads), "slots must run on the GUI thread, lambdas included"
    assert log == ["closed"]
    assert runner.active_jobs == []


def test_cancel_stops_a_running_job_and_runs_its_finally(qtbot, runner):
    log: list[str] = []
    handle = runner.start("long", lambda cancel: steps_job(10_000, 0.01, cancel, log))
    qtbot.waitUntil(lambda: handle.last_progress.fraction is not None, timeout=5000)
    with qtbot.waitSignal(handle.cancelled, timeout=5000):
        handle.cancel()
    assert handle.state is JobState.CANCELLED
    assert log == ["closed"], "closing the generator must run the engine's clean-up"
    assert runner.active_jobs == []


def test_errors_reach_the_notifier_with_message_and_details(qtbot, runner):
    notifier = Notifier(show_dialogs=False)  # listens to the board the runner posts failures on

    def failing(cancel):
        yield Progress(0.5, "reading")
        raise UserError("Trace is truncated", "/data/trace.json, byte 1024", "Re-export the trace.")

    handle = runner.start("Open trace", failing)
    with qtbot.waitSignal(notifier.noticed, timeout=5000) as blocker:
        pass
    notice = blocker.args[0]
    assert handle.state is JobState.FAILED
    assert notice.title == "Open trace" and notice.expected
    assert "Trace is truncated" in notice.message and "/data/trace.json" in notice.message
    assert "Traceback" in notice.details and "Log file:" in notice.details
    qtbot.wait(50)
    assert notifier.history == [notice], "a job's failure is posted once"


def test_unexpected_errors_are_marked_as_bugs(qtbot, runner):
    notifier = Notifier(show_dialogs=False)

    def buggy(cancel):
        yield Progress(None, "")
        return 1 / 0

    runner.start("buggy", buggy)
    with qtbot.waitSignal(notifier.noticed, timeout=5000) as blocker:
        pass
    assert not blocker.args[0].expected
    assert "ZeroDivisionError" in blocker.args[0].message and "bug" in blocker.args[0].message


def test_jobs_with_one_key_run_one_at_a_time(qtbot, runner):
    running, overlaps, order = [], [], []

    def exclusive(name: str):
        def job(cancel):
            running.append(name)
            if len(running) > 1:
                overlaps.append(tuple(running))
            try:
                for _ in range(5):
                    time.sleep(0.01)
                    yield Progress(None, name)
                order.append(name)
            finally:
                running.remove(name)
        return job

    handles = [runner.start(f"upload {i}", exclusive(f"j{i}"), key="host:npu") for i in range(3)]
    qtbot.waitUntil(lambda: all(h.state is JobState.FINISHED for h in handles), timeout=5000)
    assert overlaps == []
    assert order == ["j0", "j1", "j2"]


def test_cancelling_a_queued_job_ends_it_at_once(qtbot, runner):
    log: list[str] = []
    first = runner.start("first", lambda cancel: steps_job(10_000, 0.01, cancel, log), key="host")
    queued = runner.start("second", lambda cancel: steps_job(3, 0.0, cancel, log), key="host")
    assert queued.state is JobState.QUEUED
    qtbot.waitUntil(lambda: first.last_progress.fraction is not None, timeout=5000)
    with qtbot.waitSignal(queued.ended, timeout=1000):
        queued.cancel()
    assert queued.state is JobState.CANCELLED
    assert first.state is JobState.RUNNING
    with qtbot.waitSignal(first.ended, timeout=5000):
        first.cancel()
    assert log == ["closed"], "the queued job never started"


def test_thread_exceptions_reach_the_notifier(qtbot):
    notifier = Notifier(show_dialogs=False)
    notifier.install_hooks()
    try:
        worker = threading.Thread(target=lambda: 1 / 0, name="stray-thread")
        with qtbot.waitSignal(notifier.noticed, timeout=5000) as blocker:
            worker.start()
            worker.join()
    finally:
        notifier.uninstall_hooks()
    assert "ZeroDivisionError" in blocker.args[0].message
    assert "stray-thread" in blocker.args[0].title


def test_error_dialog_has_details_and_does_not_block(qtbot):
    from PySide6.QtWidgets import QMessageBox

    notifier = Notifier(show_dialogs=True)
    notifier.report_exception(UserError("Bad AIPP file", "aipp.cfg, line 3", "Fix the line."))
    qtbot.waitUntil(lambda: notifier._dialog is not None, timeout=2000)
    box = notifier._dialog
    assert isinstance(box, QMessageBox)
    assert "Bad AIPP file" in box.text() and "aipp.cfg, line 3" in box.text()
    assert "Traceback" in box.detailedText() or "Log file" in box.detailedText()
    box.done(0)
    qtbot.waitUntil(lambda: notifier._dialog is None, timeout=2000)
