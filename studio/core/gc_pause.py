"""Python's cycle collector paused while a big tree of new objects is built or written.

Decoding 140,000 cached idle gaps into dicts, or writing them as JSON text, allocates millions of
objects with no cycle among them; each allocation burst triggers a collection that walks every
young object again, and the oldest generation's walks cover the whole tree: half of the decode's
time and a fifth of the writer's. Collection resumes (as it was) when the block ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic collection inside the block (restored to what it was on leaving)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
