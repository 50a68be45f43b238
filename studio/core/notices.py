"""One way to tell the user something went wrong (or is worth knowing): notices on a board.

Anything may :func:`post` a :class:`Notice` — a job that failed, an engine with a warning, a
command, an uncaught exception on any thread — and anything may :func:`subscribe` to the board
(the window's notifier and its status line do). The board knows nothing of Qt: a subscriber is
called on the thread that posted, so a GUI subscriber hands the notice to its own thread itself
(the notifier does so with a queued signal), as napari's notification manager does.

A notice keeps a :class:`~studio.core.errors.UserError`'s parts — what, where, fix — apart, so each
viewer lays them out its own way; an unexpected exception becomes a notice that says it is a bug
and keeps the traceback in ``details``.
"""

from __future__ import annotations

import enum
import logging
import threading
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from studio.core.callbacks import remover
from studio.core.errors import Cancelled, StudioError, ToolUnavailable, UserError, format_message

log = logging.getLogger(__name__)

HISTORY_LENGTH = 200  # the board keeps the latest notices for a late subscriber (a log view, a test)


class Severity(str, enum.Enum):
    """How much a notice matters: an error stops what the user asked for; a warning does not."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Notice:
    """Something the user should read: what happened, where, how to fix it, and the details.

    Attributes:
        severity: error, warning or info.
        what: one sentence ("Not an ONNX or OM model").
        where: the file, line, field, op or host it concerns ("" when none).
        fix: what the user can do about it ("" when nothing is known).
        details: the traceback and the log file's path, for a "Details" button ("" when none).
        source: who posted it: a panel, a job's title, a command ("" when unknown).
        expected: False for a bug in Studio (an exception nobody raised on purpose).
    """

    severity: Severity
    what: str
    where: str = ""
    fix: str = ""
    details: str = ""
    source: str = ""
    expected: bool = True

    @property
    def title(self) -> str:
        """A window title for the notice: who posted it, else Studio."""
        return self.source or "Studio"

    @property
    def message(self) -> str:
        """The text a person reads: what, where, fix, one per line (as :meth:`UserError.format`)."""
        return format_message(self.what, self.where, self.fix)

    @property
    def headline(self) -> str:
        """The first line of :attr:`what`, for a status line."""
        return self.what.splitlines()[0] if self.what else ""


def notice_from_exception(exc: BaseException, tb_text: str = "", context: str = "") -> Notice:
    """Turn an exception into an error notice: a user error keeps its what/where/fix; anything
    else is a bug, says so, and keeps the traceback. ``context`` names who ran into it."""
    from studio.core.logs import log_file_path  # platformdirs is read only when a notice is made

    tb_text = tb_text or "".join(traceback.format_exception(exc))
    details = f"Log file: {log_file_path()}\n\n{tb_text}"
    if isinstance(exc, UserError):
        return Notice(Severity.ERROR, exc.what, exc.where or "", exc.fix or "", details, context)
    if isinstance(exc, ToolUnavailable):
        return Notice(Severity.ERROR, f"{exc.tool} is unavailable: {exc.reason}", "", exc.fix or "",
                      details, context)
    if isinstance(exc, StudioError):
        return Notice(Severity.ERROR, str(exc), "", "", details, context)
    summary = f"Unexpected error: {type(exc).__name__}: {exc}".strip()
    what = f"{summary}\n\nThis is a bug in Studio. The details and the log file say where it happened."
    return Notice(Severity.ERROR, what, "", "", details, context, expected=False)


Subscriber = Callable[[Notice], None]


class NoticeBoard:
    """Where notices are posted and read. Thread-safe: post and subscribe from any thread.

    A subscriber is called on the posting thread, after the board's lock is released (so it may
    post or unsubscribe itself); one that raises is logged and the others still hear the notice.
    """

    def __init__(self, history_length: int = HISTORY_LENGTH):
        self._lock = threading.Lock()
        self._subscribers: list[Subscriber] = []
        self.history: deque[Notice] = deque(maxlen=history_length)

    def post(self, notice: Notice) -> Notice:
        """Tell every subscriber about ``notice``; returns it."""
        with self._lock:
            self.history.append(notice)
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            try:
                subscriber(notice)
            except Exception:  # noqa: BLE001 - one broken viewer must not silence the others
                log.exception("a notice subscriber failed on %r", notice.headline)
        return notice

    def post_exception(self, exc: BaseException, tb_text: str = "", source: str = "") -> Notice | None:
        """Post ``exc`` as an error notice (a :class:`Cancelled` is not one: the user asked for it)."""
        if isinstance(exc, Cancelled):
            return None
        return self.post(notice_from_exception(exc, tb_text, source))

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber(notice)`` for every notice posted from now on; returns the function
        that stops it (safe to call twice)."""
        with self._lock:
            self._subscribers.append(subscriber)
        return remover(self._lock, self._subscribers, subscriber)

    @property
    def subscriber_count(self) -> int:
        """How many subscribers listen now."""
        with self._lock:
            return len(self._subscribers)


board = NoticeBoard()
"""The process's board: the window's notifier listens to it; jobs, engines and commands post to it."""


def post(notice: Notice) -> Notice:
    """Post ``notice`` on the process's board."""
    return board.post(notice)


def post_exception(exc: BaseException, tb_text: str = "", source: str = "") -> Notice | None:
    """Post ``exc`` on the process's board as an error notice (nothing for a cancellation)."""
    return board.post_exception(exc, tb_text, source)


def subscribe(subscriber: Subscriber) -> Callable[[], None]:
    """Subscribe to the process's board; returns the unsubscribe function."""
    return board.subscribe(subscriber)
