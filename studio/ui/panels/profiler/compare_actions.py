"""The Profiler's comparisons: two opened profiles compared as a job, the result in the Compare tab."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from studio.ui.panels.profiler import state as st
from studio.ui.panels.profiler.state import ProfilerState


class CompareActions(QObject):
    """Compare two of the opened profiles, now or as soon as both are open.

    Signals:
        front(): bring the Compare tab to the front (a comparison asked for by paths starts)
    """

    front = Signal()

    def __init__(self, state: ProfilerState, runner, tab, parent: QObject | None = None):
        super().__init__(parent)
        self.state, self.runner, self.tab = state, runner, tab

    def compare(self, base_index: int, new_index: int) -> None:
        """Compare two opened profiles (as a job); the result shows in the Compare tab, with the
        benchmark figures side by side when both are benchmarks."""
        profiles = self.state.profiles
        if not (0 <= base_index < len(profiles) and 0 <= new_index < len(profiles)):
            return
        base, new, rerun = profiles[base_index], profiles[new_index], self.tab.rerun.isChecked()

        def show(outcome) -> None:
            result, rows, labels = outcome
            self.tab.show_result(result)
            self.tab.show_bench(rows, *labels, change=result.change)

        handle = self.runner.start("Comparing profiles", lambda cancel: st.compare_job(base, new, rerun, cancel),
                                   key="profiler-compare")
        handle.finished.connect(show)

    def compare_paths(self, base, new) -> None:
        """Compare the profiles at ``base`` and ``new`` as soon as both are open (they may still be
        loading) and bring the Compare tab to the front."""
        self.state.pending_compare = (Path(base).resolve(), Path(new).resolve())
        self.when_open()

    def when_open(self) -> None:
        """Start the comparison waiting for its two profiles, once both are open (whole)."""
        ready = self.state.compare_ready()
        if ready is None:
            return
        self.tab.base.setCurrentIndex(ready[0])
        self.tab.new.setCurrentIndex(ready[1])
        self.front.emit()
        self.compare(*ready)
