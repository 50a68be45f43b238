"""Annotate your own code so its ranges appear on the profiler's timeline (like msproftx).

::

    import studio.core.profile

    with studio.core.profile.recording() as rec:       # or: studio profile run (records for you)
        with studio.core.profile.range("preprocess"):
            image = load(...)
        studio.core.profile.mark("image loaded")
    rec.write_chrome("annotations.json")           # opens in the profiler

Outside a recording, ``range`` and ``mark`` cost one attribute lookup and record nothing, so the
annotations can stay in production code. Times are wall-clock nanoseconds (``time.time_ns``),
the clock ONNX Runtime's profiler uses too, so ``studio profile run`` merges both on one axis.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ANNOTATION_PID = 1  # the pseudo-process annotation tracks live in


@dataclass
class Recorder:
    """Collected ranges and marks: (name, start_ns, end_ns or None for a mark, thread id)."""

    events: list[tuple[str, int, int | None, int]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str, start_ns: int, end_ns: int | None) -> None:
        """Record one range (or a mark when ``end_ns`` is None)."""
        with self._lock:
            self.events.append((name, start_ns, end_ns, threading.get_ident() & 0xFFFF))

    def chrome_events(self, origin_ns: int = 0) -> list[dict]:
        """The events as Chrome trace events, with ``ts`` in microseconds after ``origin_ns``."""
        out: list[dict] = [
            {"ph": "M", "name": "process_name", "pid": ANNOTATION_PID, "tid": 0,
             "args": {"name": "Annotations (studio.profile)"}},
            {"ph": "M", "name": "process_sort_index", "pid": ANNOTATION_PID, "tid": 0, "args": {"sort_index": -1}},
        ]
        for tid in sorted({tid for *_, tid in self.events}):
            out.append({"ph": "M", "name": "thread_name", "pid": ANNOTATION_PID, "tid": tid,
                        "args": {"name": f"Thread {tid}"}})
        for name, start, end, tid in self.events:
            ts = (start - origin_ns) / 1000.0
            if end is None:
                out.append({"ph": "i", "s": "t", "name": name, "pid": ANNOTATION_PID, "tid": tid, "ts": ts})
            else:
                out.append({"ph": "X", "name": name, "cat": "annotation", "pid": ANNOTATION_PID, "tid": tid,
                            "ts": ts, "dur": (end - start) / 1000.0})
        return out

    def write_chrome(self, path: str | os.PathLike) -> Path:
        """Write the annotations alone as a Chrome trace file."""
        path = Path(path)
        origin = min((start for _, start, _, _ in self.events), default=0)
        path.write_text(json.dumps(self.chrome_events(origin)))
        return path


_active: Recorder | None = None


def current() -> Recorder | None:
    """The recorder in use, if a recording is on."""
    return _active


@contextlib.contextmanager
def recording(recorder: Recorder | None = None) -> Iterator[Recorder]:
    """Record ranges and marks made inside the ``with`` block (from any thread)."""
    global _active
    previous, _active = _active, recorder or Recorder()
    try:
        yield _active
    finally:
        _active, recorder = previous, _active


@contextlib.contextmanager
def range(name: str) -> Iterator[None]:  # noqa: A001 - the name users expect (nvtx/msproftx style)
    """Time the ``with`` block as a range called ``name`` (no-op outside a recording)."""
    recorder = _active
    if recorder is None:
        yield
        return
    start = time.time_ns()
    try:
        yield
    finally:
        recorder.add(name, start, time.time_ns())


def mark(name: str) -> None:
    """An instant marker called ``name`` (no-op outside a recording)."""
    recorder = _active
    if recorder is not None:
        recorder.add(name, time.time_ns(), None)
