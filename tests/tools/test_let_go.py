"""let_go: a big object is dropped on a thread of its own, once the caller's names let it go."""

from __future__ import annotations

import threading
import time

from studio.core.let_go import let_go


class _Recorder:
    """Records the thread that finalises it."""

    def __init__(self, seen: list) -> None:
        self.seen = seen

    def __del__(self) -> None:
        self.seen.append(threading.current_thread().name)


def test_the_object_is_finalised_on_the_let_go_thread():
    seen: list = []
    obj = _Recorder(seen)
    thread = let_go(obj)
    del obj
    thread.join(5)
    assert seen == ["studio-let-go"]


def test_the_thread_waits_while_the_caller_still_holds_it():
    seen: list = []
    obj = _Recorder(seen)
    thread = let_go(obj)
    time.sleep(0.1)  # the caller still uses it: not finalised, and not by the caller when it lets go
    assert seen == [] and thread.is_alive()
    del obj
    thread.join(5)
    assert seen == ["studio-let-go"]
