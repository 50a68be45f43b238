"""The Selected range tab: a time range's slices aggregated by name, and for an area (a range on
some tracks, a Shift+drag across their rows) its computing / communication / free split."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from studio.ui.panels.profiler import state as st
from studio.ui.panels.profiler.timefmt import format_duration


class RangeActions(QObject):
    """Aggregate what the timeline selected, as jobs; the table shows the newest selection.

    Signals:
        status(str): a line for the status bar
        ready(): the table holds a new selection's rows (bring its tab to the front)
    """

    status = Signal(str)
    ready = Signal()

    def __init__(self, state: st.ProfilerState, runner, table, parent: QObject | None = None):
        super().__init__(parent)
        self.state, self.runner, self.table = state, runner, table

    def on_range(self, t0: int, t1: int) -> None:
        """Aggregate the slices in [t0, t1] (ns) of the profile shown."""
        if self.state.current is None:
            return
        trace = self.state.current.trace
        handle = self.runner.start("Aggregating a time range", lambda cancel: st.range_job(trace, t0, t1, cancel),
                                   key="profiler-range")
        handle.finished.connect(lambda rows: self._show(rows, t0, t1))

    def _show(self, rows: list, t0: int, t1: int, note: str = "") -> None:
        self.ready.emit()
        self.table.set_note(note)
        self.table.set_rows(st.RANGE_COLUMNS, st.range_rows(rows), percent=("Share of range",))
        self.status.emit(f"Range {format_duration(t1 - t0)}: {sum(s.count for s in rows):,} slices")

    def on_area(self, t0: int, t1: int, tracks: list) -> None:
        """An area: the same table over its tracks only, and its split above it (the range's own job
        runs first under the same key, so this one's answer is the one that stays)."""
        if self.state.current is None:
            return
        trace = self.state.current.trace
        labels = [trace.track_label(t) for t in tracks]
        handle = self.runner.start("Aggregating a timeline area",
                                   lambda cancel: st.area_job(trace, t0, t1, tracks, cancel), key="profiler-range")
        handle.finished.connect(lambda out: self._show(out[0], t0, t1, st.area_text(out[1], labels)))
