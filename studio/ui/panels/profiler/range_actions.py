"""The Selected range tab: a time range's slices aggregated by name, and for an area (a range on
some tracks, a Shift+drag across their rows) its computing / communication / free split
(a mixin of :class:`~studio.ui.panels.profiler.panel.ProfilerPanel`)."""

from __future__ import annotations

from studio.ui.panels.profiler import state as st
from studio.ui.panels.profiler.timefmt import format_duration


class RangeActions:
    """Aggregate what the timeline selected, as jobs; the table shows the newest selection."""

    def _on_range_selected(self, t0: int, t1: int) -> None:
        if self.state.current is None:
            return
        trace = self.state.current.trace
        handle = self.runner.start("Aggregating a time range", lambda cancel: st.range_job(trace, t0, t1, cancel),
                                   key="profiler-range")
        handle.finished.connect(lambda rows: self._show_range(rows, t0, t1))

    def _show_range(self, rows: list, t0: int, t1: int, note: str = "") -> None:
        self.bottom.setCurrentWidget(self.range_table)
        self.range_table.set_note(note)
        self.range_table.set_rows(st.RANGE_COLUMNS, st.range_rows(rows), percent=("Share of range",))
        self.status.emit(f"Range {format_duration(t1 - t0)}: {sum(s.count for s in rows):,} slices")

    def _on_area_selected(self, t0: int, t1: int, tracks: list) -> None:
        """An area: the same table over its tracks only, and its split above it (the range's own job
        runs first under the same key, so this one's answer is the one that stays)."""
        if self.state.current is None:
            return
        trace = self.state.current.trace
        labels = [trace.track_label(t) for t in tracks]
        handle = self.runner.start("Aggregating a timeline area",
                                   lambda cancel: st.area_job(trace, t0, t1, tracks, cancel), key="profiler-range")
        handle.finished.connect(lambda out: self._show_range(out[0], t0, t1, st.area_text(out[1], labels)))
