"""A worker's answer sent in pieces, so that taking it in never holds the window's interpreter long.

Unpickling is one C call that holds Python's lock throughout: the Cluster panel's idle gaps of
16 ranks (19,000 rows, 4 MB pickled) held the window for ~70 ms in the job thread that took them in.
The long lists of a dict answer (its rows) travel instead as pieces of :data:`PIECE` items, each
unpickled in a few milliseconds; between two pieces the job thread waits on the pipe, without the
lock, and the window runs. The receiver puts the lists back together under their keys, in order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

PIECE = 1000  # rows per piece: ~250 kB pickled, a few ms to unpickle


def pieces(answer: Any) -> Iterator[tuple]:
    """The messages that carry ``answer``: ("part", key, items) for each piece of a long list
    under a key of a dict answer, then ("done", the answer with those lists left empty)."""
    if not isinstance(answer, dict) or not any(_long(v) for v in answer.values()):
        yield ("done", answer)
        return
    rest = {}
    for key, value in answer.items():
        if _long(value):
            for start in range(0, len(value), PIECE):
                yield ("part", key, value[start:start + PIECE])
            value = []
        rest[key] = value
    yield ("done", rest)


class Assembler:
    """Takes the "part" messages of one answer and completes its "done" message."""

    def __init__(self):
        self.parts: dict[Any, list] = {}

    def add(self, key: Any, items: list) -> None:
        """One piece of the list under ``key``, in order."""
        self.parts.setdefault(key, []).extend(items)

    def finish(self, answer: Any) -> Any:
        """``answer`` (the "done" message's) with its lists filled in."""
        for key, items in self.parts.items():
            answer[key] = items
        return answer


def _long(value: Any) -> bool:
    return type(value) is list and len(value) > PIECE
