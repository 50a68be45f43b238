"""The notice board (studio.core.notices): posting and subscribing from several threads, what a
notice keeps of a UserError and of a bug — without Qt."""

from __future__ import annotations

import threading
import traceback

from studio.core.errors import Cancelled, ToolUnavailable, UserError
from studio.core.notices import Notice, NoticeBoard, Severity, notice_from_exception


def test_two_threads_post_and_every_subscriber_hears_each_notice_once():
    board = NoticeBoard()
    heard_a, heard_b, threads_b = [], [], set()
    lock = threading.Lock()

    def on_b(notice):
        with lock:
            heard_b.append(notice.what)
            threads_b.add(threading.current_thread().name)

    stop_a = board.subscribe(heard_a.append)
    board.subscribe(on_b)

    def poster(name: str):
        for i in range(200):
            board.post(Notice(Severity.INFO, f"{name} {i}"))

    workers = [threading.Thread(target=poster, args=(name,), name=name) for name in ("one", "two")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    expected = {f"{name} {i}" for name in ("one", "two") for i in range(200)}
    assert len(heard_b) == 400 and set(heard_b) == expected
    assert sorted(n.what for n in heard_a) == sorted(expected)
    assert threads_b == {"one", "two"}, "a subscriber is called on the posting thread"

    stop_a()
    stop_a()  # twice is harmless
    board.post(Notice(Severity.WARNING, "after"))
    assert heard_a[-1].what != "after" and len(heard_a) == 400
    assert heard_b[-1] == "after"
    assert board.subscriber_count == 1


def test_unsubscribing_from_another_thread_while_posting_never_breaks_a_post():
    board = NoticeBoard()
    heard = []
    stops = [board.subscribe(heard.append) for _ in range(50)]
    errors = []

    def poster():
        try:
            for i in range(300):
                board.post(Notice(Severity.INFO, str(i)))
        except Exception as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    worker = threading.Thread(target=poster)
    worker.start()
    for stop in stops:
        stop()
    worker.join()
    assert errors == []
    assert board.subscriber_count == 0
    count = len(heard)
    board.post(Notice(Severity.INFO, "late"))
    assert len(heard) == count


def test_a_broken_subscriber_does_not_silence_the_others():
    board = NoticeBoard()
    heard = []
    board.subscribe(lambda notice: 1 / 0)
    board.subscribe(heard.append)
    board.post(Notice(Severity.ERROR, "disk full"))
    assert [n.what for n in heard] == ["disk full"]


def test_a_user_error_keeps_what_where_and_fix_apart():
    error = UserError("Bad AIPP file", "aipp.cfg, line 3", "Give input_format a value.")
    notice = notice_from_exception(error, context="Converter")
    assert (notice.what, notice.where, notice.fix) == ("Bad AIPP file", "aipp.cfg, line 3", "Give input_format a value.")
    assert notice.severity is Severity.ERROR and notice.expected and notice.source == "Converter"
    assert notice.message == error.format()  # the same three lines the CLI prints
    assert notice.headline == "Bad AIPP file"


def test_a_bug_says_so_and_keeps_its_traceback():
    def deep_inside():
        return {}["missing"]

    try:
        deep_inside()
    except KeyError as exc:
        caught = exc
        text = traceback.format_exc()
    notice = notice_from_exception(caught, text, "Profiler")
    assert not notice.expected
    assert notice.headline == "Unexpected error: KeyError: 'missing'"
    assert "bug in Studio" in notice.what
    assert "deep_inside" in notice.details and "Traceback" in notice.details
    assert "Log file:" in notice.details
    # without a traceback text the exception's own is used
    assert "deep_inside" in notice_from_exception(caught).details


def test_a_missing_tool_keeps_its_fix_and_a_cancellation_is_no_notice():
    board = NoticeBoard()
    notice = board.post_exception(ToolUnavailable("ATC", "not on PATH", "Source set_env.sh."))
    assert notice.what == "ATC is unavailable: not on PATH" and notice.fix == "Source set_env.sh."
    assert board.post_exception(Cancelled()) is None
    assert list(board.history) == [notice]

