"""Lists of callbacks shared between threads: what a registration hands back to undo itself."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def remover(lock: threading.Lock, callbacks: list, callback: Callable[..., Any]) -> Callable[[], None]:
    """The function that takes ``callback`` out of ``callbacks`` under ``lock``; safe to call twice,
    and after the list was emptied or replaced."""

    def remove() -> None:
        with lock:
            if callback in callbacks:
                callbacks.remove(callback)

    return remove
