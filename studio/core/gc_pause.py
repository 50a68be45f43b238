"""Pause Python's cyclic garbage collector while a job builds (or writes) hundreds of thousands of objects.

Reading a 100,000-node model creates millions of small objects; each full collection triggered on
the way walks all of them while holding the GIL, and the GUI thread froze for ~0.5 s at a time
(measured: max event-loop gap 625 ms with the collector on, 161 ms with it paused, same load).
Reference counting still frees everything; only cycle detection waits until the job ends. A
counter makes overlapping jobs safe: the collector comes back when the last of them finishes.

Pausing alone only moves the work: the objects made meanwhile are all "young", and the next
collection, on whatever thread allocates next (often the GUI's), would walk every one of them.
So when a job leaves more than ``FREEZE_OVER`` new objects behind, they are moved to the
collector's permanent generation (``gc.freeze()``), which is never walked. The cost: objects
frozen there that later form unreachable cycles are not reclaimed; our graph objects hold no
cycles (reference counting frees them), so a closed model's memory still comes back.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

ENABLED = True  # benchmarks switch it off to measure the difference
FREEZE_OVER = 200_000
_lock = threading.Lock()
_depth = 0
_we_disabled = False


@contextmanager
def paused_gc(freeze_over: int = FREEZE_OVER):
    """Disable the cyclic collector for the duration of the block (re-entrant, thread-safe); when
    the last block ends with more than ``freeze_over`` young objects, freeze them."""
    global _depth, _we_disabled
    if not ENABLED:
        yield
        return
    with _lock:
        if _depth == 0:
            _we_disabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                # Also when the collector was off already (the GUI turns automatic collection off
                # and collects on its own thread): its next young collection would walk them all.
                if gc.get_count()[0] > freeze_over:
                    gc.freeze()
                if _we_disabled:
                    gc.enable()


def is_paused() -> bool:
    """Whether a job is inside :func:`paused_gc` now: a collection meanwhile would walk the objects
    it is building (and is about to freeze), so a collector of its own should wait."""
    return _depth > 0
