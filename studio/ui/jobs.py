"""JobRunner: runs engine generators on a thread pool and reports to the GUI thread.

An engine job is a generator that yields :class:`~studio.core.jobs.Progress` and returns a result
(see ``studio/core/jobs.py``). The runner drives it on a worker thread, forwards progress (throttled,
so a chatty engine cannot flood the event loop), and delivers the result, the error or the
cancellation through signals, which Qt queues onto the GUI thread. On cancel the runner closes
the generator, so the engine's ``finally`` blocks kill processes and close channels.

Jobs that share a ``key`` (for example one remote host) run one at a time, in order.

A job's failure is posted once, by the runner, on the notice board (``studio.core.notices``): the
window's notifier and status line show it. A panel's own ``failed`` handler only puts the panel
back in order (buttons, a half-shown state); it does not say what went wrong a second time.
"""

from __future__ import annotations

import enum
import logging
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from studio.core import notices
from studio.core.errors import Cancelled, StudioError
from studio.core.jobs import CancelToken, Job, Progress
from studio.core.notices import NoticeBoard

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.05  # at most ~20 progress signals per second per job


class JobState(enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


class JobHandle(QObject):
    """One submitted job. Lives on the GUI thread, and so do all its signals.

    Signals:
        progress(Progress), finished(result), failed(exception, traceback_text), cancelled(),
        and ended() last, whatever the outcome. They are always emitted on the GUI thread, so
        any callable (lambdas included) may be connected to them safely.
    """

    progress = Signal(object)
    finished = Signal(object)
    failed = Signal(object, str)
    cancelled = Signal()
    ended = Signal()
    cancel_requested = Signal()

    def __init__(self, title: str, make_job: Callable[[CancelToken], Job], key: str | None):
        super().__init__()
        self.title = title
        self.key = key
        self.token = CancelToken()
        self.state = JobState.QUEUED
        self.last_progress = Progress(None, "queued")
        self.make_job = make_job
        self.result: Any = None
        self.error: tuple[BaseException, str] | None = None
        self.report_failure = True
        """False when the panel shows this job's failure itself, next to what failed (a find box):
        the runner then posts no notice. Set it right after ``start``."""
        self._spent_job: Job | None = None  # the finished generator, until the GUI thread drops it

    def cancel(self) -> None:
        """Ask the job to stop. A queued job never starts; a running one stops at its next step."""
        if self.active and not self.token.cancelled:
            self.token.cancel()
            self.cancel_requested.emit()

    @property
    def active(self) -> bool:
        """True while queued or running."""
        return self.state in (JobState.QUEUED, JobState.RUNNING)


class _Worker(QRunnable):
    """Drives one generator on a pool thread. Never touches widgets, never emits handle signals."""

    def __init__(self, handle: JobHandle, runner: JobRunner):
        super().__init__()
        self.setAutoDelete(True)
        self.handle = handle
        self.runner = runner

    def run(self) -> None:  # Qt override
        handle = self.handle
        try:
            kind, value = self._drive(handle)
        except BaseException as exc:  # noqa: BLE001 - everything must reach the notifier
            kind, value = "failed", (exc, traceback.format_exc())
        if kind == "failed":
            if isinstance(value[0], StudioError):  # the user's to fix: the message says it all
                log.warning("job %r: %s", handle.title, value[0])
            else:
                log.error("job %r failed:\n%s", handle.title, value[1])
        elif kind == "cancelled":
            log.info("job %r cancelled", handle.title)
        # The outcome travels with the signal; the GUI thread updates the handle, after any
        # progress still queued, so the last progress is never lost.
        self.runner._worker_done.emit(handle, kind, value)

    def _drive(self, handle: JobHandle) -> tuple[str, Any]:
        token = handle.token
        if token.cancelled:
            return ("cancelled", None)
        log.info("job %r started", handle.title)
        job = handle.make_job(token)
        last_emit = 0.0
        pending: Progress | None = None
        try:
            while True:
                if token.cancelled:
                    return ("cancelled", None)
                try:
                    step = next(job)
                except StopIteration as done:
                    if pending is not None:
                        self.runner._worker_progress.emit(handle, pending)
                    return ("finished", done.value)
                except Cancelled:
                    return ("cancelled", None)
                # Let go of the GIL between steps: with several pure-Python jobs running, the GUI
                # thread otherwise waits in line behind them (measured: 125 ms gaps on 2 cores).
                time.sleep(0)
                if isinstance(step, Progress):
                    now = time.monotonic()
                    if now - last_emit >= PROGRESS_INTERVAL_S:
                        self.runner._worker_progress.emit(handle, step)
                        last_emit, pending = now, None
                    else:
                        pending = step
        finally:
            job.close()  # runs the engine's finally blocks (kill process, close channel)
            # The generator may hold the last reference to Qt objects (a panel's bound method in a
            # closure). Freed on this thread, their destructors take Qt's locks here while the GUI
            # thread holds the GIL: a deadlock (seen in a test run). The GUI thread drops it instead.
            handle._spent_job = job


class JobRunner(QObject):
    """Starts jobs, keeps per-key queues, and tells the GUI which jobs are active.

    Signals:
        job_added(JobHandle), job_ended(JobHandle), job_failed(JobHandle, exception, traceback_text)

    Every failure is also posted on ``board`` (the process's notice board unless given), titled
    with the job's title, unless the handle's ``report_failure`` is False.
    """

    job_added = Signal(object)
    job_ended = Signal(object)
    job_failed = Signal(object, object, str)
    # Emitted on pool threads; Qt queues them onto this object's (the GUI) thread.
    _worker_progress = Signal(object, object)
    _worker_done = Signal(object, str, object)

    def __init__(self, parent: QObject | None = None, max_threads: int | None = None,
                 board: NoticeBoard | None = None):
        super().__init__(parent)
        self.board = board if board is not None else notices.board
        # Hand the interpreter to a waiting thread after 1 ms instead of 5 ms: with jobs running
        # pure-Python loops, the GUI thread then waits ~20 ms at worst instead of ~100 ms (measured).
        sys.setswitchinterval(min(sys.getswitchinterval(), 0.001))
        self._pool = QThreadPool(self)
        if max_threads:
            self._pool.setMaxThreadCount(max_threads)
        self._jobs: list[JobHandle] = []
        self._busy_keys: set[str] = set()
        self._waiting: dict[str, deque[JobHandle]] = {}
        self._worker_progress.connect(self._on_worker_progress)
        self._worker_done.connect(self._on_worker_done)

    @property
    def active_jobs(self) -> list[JobHandle]:
        """Jobs queued or running, oldest first."""
        return list(self._jobs)

    def start(self, title: str, make_job: Callable[[CancelToken], Job], key: str | None = None) -> JobHandle:
        """Submit a job.

        Args:
            title: shown in the status bar ("Opening unet.onnx").
            make_job: called on the worker thread with the job's CancelToken; returns the generator.
            key: jobs with the same key run one at a time (e.g. ``"host:npu-box"``).
        """
        handle = JobHandle(title, make_job, key)
        handle.cancel_requested.connect(self._on_cancel_requested)
        self._jobs.append(handle)
        self.job_added.emit(handle)
        if key is not None and key in self._busy_keys:
            self._waiting.setdefault(key, deque()).append(handle)
        else:
            self._launch(handle)
        return handle

    def cancel_all(self) -> None:
        """Cancel every queued and running job."""
        for job in list(self._jobs):
            job.cancel()

    def wait_for_done(self, timeout_ms: int = 5000) -> bool:
        """Block until the pool is idle (for shutdown and the screenshot command only)."""
        return self._pool.waitForDone(timeout_ms)

    def _launch(self, handle: JobHandle) -> None:
        if handle.key is not None:
            self._busy_keys.add(handle.key)
        handle.state = JobState.RUNNING
        self._pool.start(_Worker(handle, self))

    def _on_worker_progress(self, handle: JobHandle, step: Progress) -> None:
        if handle.state is JobState.RUNNING:
            handle.last_progress = step
            handle.progress.emit(step)

    def _on_worker_done(self, handle: JobHandle, kind: str, value: Any) -> None:
        handle._spent_job = None  # released here, on the GUI thread (see _Worker._drive)
        if kind == "finished":
            handle.state, handle.result = JobState.FINISHED, value
        elif kind == "failed":
            handle.state, handle.error = JobState.FAILED, value
        else:
            handle.state = JobState.CANCELLED
        self._end(handle)
        if handle.key is not None:
            self._busy_keys.discard(handle.key)
            queue = self._waiting.get(handle.key)
            if queue:
                self._launch(queue.popleft())

    def _on_cancel_requested(self) -> None:
        # A job still waiting for its key is taken out of the queue and ends at once.
        for queue in self._waiting.values():
            for handle in [h for h in queue if h.token.cancelled]:
                queue.remove(handle)
                handle.state = JobState.CANCELLED
                self._end(handle)

    def _end(self, handle: JobHandle) -> None:
        if handle.state is JobState.FINISHED:
            handle.finished.emit(handle.result)
        elif handle.state is JobState.FAILED:
            exc, text = handle.error
            if handle.report_failure:
                self.board.post_exception(exc, text, source=handle.title)
            handle.failed.emit(exc, text)
            self.job_failed.emit(handle, exc, text)
        else:
            handle.cancelled.emit()
        handle.ended.emit()
        if handle in self._jobs:
            self._jobs.remove(handle)
        self.job_ended.emit(handle)
        # The runner lets go of the handle; whoever still holds it can read its state and result.


def tee(job, sink: deque, lock: Any = None, label: Callable[[Any], str] | None = None):
    """Pass ``job``'s steps on and keep every message in ``sink``: the runner throttles progress
    signals, which would drop output lines (ATC's log, a run's console). ``lock`` guards ``sink``
    when the GUI drains it; ``label`` formats a step (default: its message)."""
    from studio.core.jobs import Progress

    try:
        while True:
            try:
                step = next(job)
            except StopIteration as done:
                return done.value
            if isinstance(step, Progress) and step.message:
                text = label(step) if label is not None else step.message
                if lock is None:
                    sink.append(text)
                else:
                    with lock:
                        sink.append(text)
            yield step
    finally:
        job.close()
