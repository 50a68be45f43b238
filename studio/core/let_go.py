"""Letting a big object go on a short-lived thread of its own instead of the caller's.

Dropping the last reference to a trace whose columns are memory-mapped unmaps them there and then:
when a read's last snapshot of a 10M-event trace was swapped for the whole trace, the window's
thread spent 87 ms unmapping the snapshot's columns. :func:`let_go` hands the object to a thread
that drops it once the caller's own names no longer hold it (the unmapping itself runs without the
interpreter lock). Only for plain data: a Qt object must be deleted on the thread that owns it.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

WAIT_S = 2.0  # longest the thread waits for the caller's names to let go before dropping its own


def let_go(obj: Any) -> threading.Thread:
    """Drop ``obj`` on a thread of its own once nothing but that thread holds it (or after
    :data:`WAIT_S`: then whoever holds it last frees it, as without this). The caller deletes its
    own names for ``obj`` right after the call (``let_go(old); del old``). Returns the thread."""
    box = [obj]
    del obj

    def drop() -> None:
        deadline = time.monotonic() + WAIT_S
        # 2: the box's slot and getrefcount's own argument; more: the caller's frame still has it
        while sys.getrefcount(box[0]) > 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        box.clear()

    thread = threading.Thread(target=drop, name="studio-let-go", daemon=True)
    thread.start()
    return thread
