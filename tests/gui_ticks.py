"""The GUI thread's pulse: a QTimer on it records the gap (ms) between its ticks.

GUI tests use it for behaviour (the event loop kept running while a job worked, so the work was
not on the GUI thread); ``benchmarks/bench_gui_stalls.py`` uses it for figures (how long the loop
stalled), which depend on how busy the machine is and so are no test's pass/fail.
"""

from __future__ import annotations

from PySide6.QtCore import QElapsedTimer, QTimer


class Ticks:
    """``with Ticks(5) as ticks: ...``: ``ticks.gaps`` are the gaps between ticks while it ran."""

    def __init__(self, interval_ms: int = 5):
        self._recorded: list[int] = []
        self._clock = QElapsedTimer()
        self._timer = QTimer()
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(lambda: self._recorded.append(self._clock.restart()))

    def __enter__(self) -> Ticks:
        self._clock.start()
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.stop()

    @property
    def gaps(self) -> list[int]:
        """The gaps (ms), the first one left out (it counts from the start, not from a tick)."""
        return self._recorded[1:]
