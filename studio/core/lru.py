"""Least-recently-used bounds for Studio's cache folders (traces, database query caches, idle gaps).

Each cache lists its own entries — what they are, which may go — and this module says which go:
the oldest first until the folder is under its limit. "Used" is the modification time, which a
cache sets again with :func:`touch` each time it reads an entry.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def touch(path: Path) -> None:
    """Mark ``path`` as just used (its modification time); a file that cannot be touched is left."""
    try:
        os.utime(path)
    except OSError:
        pass


def oldest_over_limit(candidates: list[tuple[float, int, T]], total: int, limit: int) -> Iterator[T]:
    """The ``candidates`` — ``(last used, size, entry)``, those that may be deleted — to delete, least
    recently used first, until ``total`` (the bytes of the whole folder, kept entries included) is
    at most ``limit``. The caller deletes each as it comes."""
    for _, size, entry in sorted(candidates, key=lambda c: (c[0], c[1])):
        if total <= limit:
            return
        yield entry
        total -= size
