"""The Qt-free job contract every engine follows.

An engine is a generator function. It yields :class:`Progress` as it goes, checks its
:class:`CancelToken` between steps, and *returns* its result::

    def load_trace(path, cancel: CancelToken) -> Generator[Progress, None, Trace]:
        for i, chunk in enumerate(chunks):
            cancel.raise_if_cancelled()
            yield Progress(i / n, f"parsing chunk {i}")
        return trace

Whoever drives the generator (the GUI's JobRunner, or :func:`run_job` in the CLI) closes it on
cancel, so the engine's ``finally`` blocks kill processes and close channels.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from studio.core.callbacks import remover
from studio.core.errors import Cancelled

T = TypeVar("T")


@dataclass(frozen=True)
class Progress:
    """One step of a job.

    Attributes:
        fraction: 0..1, or None when the amount of work is unknown (busy indicator).
        message: what the job is doing now, shown next to the progress bar.
    """

    fraction: float | None = None
    message: str = ""


Job = Generator[Progress, None, T]
"""The type of an engine's job: yields Progress, returns T."""


class CancelToken:
    """A thread-safe flag the driver sets and the engine checks between steps."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], Any]] = []

    def cancel(self) -> None:
        """Ask the job to stop at its next check (and run the :meth:`on_cancel` callbacks)."""
        with self._lock:
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a callback that fails must not stop the others (nor the caller)
                pass

    def on_cancel(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Call ``callback`` (from the cancelling thread) when the job is cancelled — at once if it
        already is. For engines blocked in I/O that no check can reach: closing a channel or a
        connection makes the blocked read return. Returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                registered = True
            else:
                registered = False
        if not registered:
            callback()
        return remover(self._lock, self._callbacks, callback)

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        """Raise :class:`~studio.core.errors.Cancelled` if cancellation was requested."""
        if self._event.is_set():
            raise Cancelled()

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return True early if cancelled meanwhile."""
        return self._event.wait(seconds)


def run_job(
    job: Job[T],
    cancel: CancelToken | None = None,
    on_progress: Callable[[Progress], Any] | None = None,
) -> T:
    """Drive a job to completion on the calling thread and return its result.

    Used by the CLI and by tests. Raises :class:`~studio.core.errors.Cancelled` when the token is set
    between two steps; the generator is closed either way so its clean-up runs.
    """
    try:
        while True:
            if cancel is not None and cancel.cancelled:
                raise Cancelled()
            try:
                step = next(job)
            except StopIteration as done:
                return done.value
            if on_progress is not None and isinstance(step, Progress):
                on_progress(step)
    finally:
        job.close()


def relay(job: Generator[Any, None, T], on_step: Callable[[Any], Any]) -> Generator[Progress, None, T]:
    """Drive ``job`` inside another job: for each step it yields, yield what ``on_step(step)`` gives
    (an iterable of Progress, a generator usually: work between steps, then the lines to pass on);
    returns ``job``'s result. The caller closes ``job`` (in its ``finally``)."""
    while True:
        try:
            step = next(job)
        except StopIteration as done:
            return done.value
        yield from on_step(step)
