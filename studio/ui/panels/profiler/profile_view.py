"""Which profile the Profiler shows and how: a new one added, one chosen, a fuller one swapped in.

:class:`ProfileView` puts a :class:`~.state.Loaded` on the timeline, the info line, the reading
band and the tables. Everything it shows was computed by the job that read the profile; here it is
only handed to the widgets (the tables one event-loop turn later for a big profile).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer, Signal

from studio.core.let_go import let_go
from studio.ui.panels.profiler import keep_view
from studio.ui.panels.profiler import state as st
from studio.ui.panels.profiler.state import Loaded, ProfilerState, summary_rows


class ProfileView(QObject):
    """Shows the profiles of a :class:`ProfilerState` in the panel's widgets.

    Signals:
        status(str): a line for the status bar
        added(Loaded): a profile was added to the list (the panel shows what waited for it)
        whole(Loaded): a whole profile is here, added or swapped in for its partial one (overlay,
            a pending comparison)
        shown(Loaded, bool): a profile was put on the timeline, True when swapped in for its partial
            one (find runs again on it)
        painted_wait(Path): the job reading this path may go on once the swap is painted
    """

    status = Signal(str)
    added = Signal(object)
    whole = Signal(object)
    shown = Signal(object, bool)
    painted_wait = Signal(object)

    def __init__(self, state: ProfilerState, runner, w, parent: QObject | None = None):
        """``w``: the panel, for its widgets (timeline, profile_box, compare_tab, info, reading_band,
        stats_tab, summary, range_table, details, timeline_stack)."""
        super().__init__(parent)
        self.state, self.runner = state, runner
        self.timeline, self.profile_box, self.compare_tab = w.timeline, w.profile_box, w.compare_tab
        self.info, self.band, self.stats_tab, self.summary = w.info, w.reading_band, w.stats_tab, w.summary
        self.range_table, self.details, self.stack = w.range_table, w.details, w.timeline_stack

    def arrive(self, loaded: Loaded) -> None:
        """A joined trace of the ranks (some still their step summary, or the last, whole one), or
        a file's trace read so far (or whole): shown in place of the one before it, the view kept
        where the user has it (window, range, selection, pinned tracks, markers, find)."""
        index = self.state.index_of(loaded.path)
        if index is None:
            self.add(loaded)
            self.painted_wait.emit(loaded.path)
            return
        old, self.state.profiles[index] = self.state.profiles[index], loaded
        was_complete, was_current = old.complete, self.state.current is old
        # Unmapping the old one's columns took 87 ms on this thread at 10M events: done on another.
        let_go(old)
        del old
        self.profile_box.setItemText(index, loaded.label)
        self.compare_tab.set_profiles([p.label for p in self.state.profiles])
        if loaded.complete and not was_complete:  # what waited for the whole profile
            self.status.emit(f"Profiler: {loaded.label}: {loaded.trace.size:,} slices")
            self.whole.emit(loaded)
        if not was_current:
            self.painted_wait.emit(loaded.path)
            return
        self.state.current = loaded
        kept = keep_view.position(self.timeline)
        self._set_trace(loaded)
        keep_view.restore(self.timeline, kept)
        self.painted_wait.emit(loaded.path)
        QTimer.singleShot(0, lambda: self.fill_tables(loaded))
        self.shown.emit(loaded, True)

    def add(self, loaded: Loaded) -> None:
        """Add ``loaded`` to the list and show it."""
        labels = self.state.add(loaded)
        self.profile_box.addItem(loaded.label)
        self.profile_box.setItemData(self.profile_box.count() - 1, str(loaded.path), Qt.ItemDataRole.ToolTipRole)
        self.compare_tab.set_profiles(labels)
        self.profile_box.setCurrentIndex(len(self.state.profiles) - 1)
        self.status.emit(f"Profiler: {loaded.label}: {loaded.trace.size:,} slices"
                         + ("" if loaded.complete else " so far (still reading)"))
        self.added.emit(loaded)
        if loaded.complete:  # a partial profile's shares would mislead the graph's overlay
            self.whole.emit(loaded)
        if loaded.trace.lod is not None and not isinstance(loaded.trace.start, np.memmap) and not loaded.cached:
            from studio.tools.profiler.loader import store_cache

            trace, path = loaded.trace, loaded.path
            self.runner.start(f"Caching {path.name}", lambda cancel: store_cache(path, trace, cancel),
                              key="profiler-cache")

    def choose(self, index: int) -> None:
        """Show profile ``index`` of the list (the box's choice)."""
        loaded = self.state.choose(index)
        if loaded is None:
            return
        trace = loaded.trace
        if trace.warnings:
            self.status.emit(f"Profiler: {loaded.label}: {trace.warnings[0]}")
        self._set_trace(loaded)
        self.stack.setCurrentIndex(1)
        self.range_table.set_rows([], [])
        self.range_table.set_note("")
        self.details.set_rows([], [])
        self.shown.emit(loaded, False)
        if trace.size < st.DEFER_TABLES_SLICES:
            self.fill_tables(loaded)
            return
        # A big profile's tables fill in the next turn of the event loop: with the timeline's
        # first frame in the same turn, they held the window for 80 ms on a busy machine.
        self.stats_tab.show_stats(trace, [], [], {}, {"op": [], "api": []})
        QTimer.singleShot(0, lambda: self.fill_tables(loaded))

    def _set_trace(self, loaded: Loaded) -> None:
        """The timeline, info line (its tooltip whole: the label may be cut) and band for ``loaded``."""
        trace = loaded.trace
        self.timeline.set_trace(trace, loaded.by_name, loaded.share, loaded.first_view, loaded.counter_max,
                                loaded.rows)
        text = st.info_text(trace) + (f" · {loaded.first_view_note}" if loaded.first_view_note else "")
        self.info.setText(text)
        self.info.setToolTip("\n".join([text, *trace.warnings, str(loaded.path)]))
        # The band over the tabs says how much of a profile still coming in is there (hidden once whole).
        band = "" if loaded.complete else (loaded.reading or loaded.first_view_note or "still reading")
        self.band.setText(band)
        self.band.setVisible(bool(band))

    def fill_tables(self, loaded: Loaded) -> None:
        """The Statistics and Summary tabs of ``loaded``, unless another profile was chosen meanwhile."""
        if self.state.current is not loaded:
            return
        self.stats_tab.show_stats(loaded.trace, loaded.by_name, loaded.apis, loaded.tables, loaded.ready,
                                  loaded.counted)
        self.summary.set_rows(["Fact", "Value"], summary_rows(loaded), first_width=220)

    def select(self, path: Path) -> int | None:
        """The list index of the profile at ``path``, selected in the box; None when not open."""
        index = self.state.index_of(path)
        if index is not None:
            self.profile_box.setCurrentIndex(index)
        return index
