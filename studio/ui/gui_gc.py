"""Cyclic garbage collection on the GUI thread only.

Python runs its cycle collector on whichever thread happens to allocate when a threshold is
crossed. If that is a job's worker thread and the garbage holds Qt widgets (plot widgets make many
reference cycles), their C++ destructors run off the GUI thread while the GUI thread paints, and
the process crashes. So automatic collection is turned off while the GUI runs, and a timer on the
GUI thread collects each generation when its threshold is crossed (as pyqtgraph's
``GarbageCollector`` does). While a job builds a big structure inside ``paused_gc`` the timer waits:
a young collection then would walk every object the job made so far (~80 ms for a 100,000-node
model) just before the job moves them out of the collector's way.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

from studio.core.gc_pause import is_paused

CHECK_INTERVAL_MS = 500


class GuiThreadCollector(QObject):
    """Owns the timer; ``stop()`` collects once more and gives collection back to Python."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = CHECK_INTERVAL_MS):
        super().__init__(parent)
        self.thresholds = gc.get_threshold()
        self._was_enabled = gc.isenabled()
        gc.disable()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.check)
        self.timer.start(interval_ms)

    def check(self) -> None:
        """Collect the generations whose allocation counts crossed Python's own thresholds."""
        if is_paused():
            return
        counts = gc.get_count()
        if counts[0] > self.thresholds[0]:
            gc.collect(0)
            if counts[1] > self.thresholds[1]:
                gc.collect(1)
                if counts[2] > self.thresholds[2]:
                    gc.collect(2)

    def stop(self) -> None:
        self.timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()


def collect_on_gui_thread(app) -> GuiThreadCollector:
    """Install the collector for ``app`` (a QApplication); returns it (parented to ``app``)."""
    return GuiThreadCollector(app)
