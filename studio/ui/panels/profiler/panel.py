"""The Profiler panel: timeline, statistics, analysis summary and baseline comparison.

Every open, statistics pass, range aggregate and comparison runs as a job (the engine in
``studio.tools.profiler``); the GUI thread only draws. Opened profiles stay in a list so two of
them can be compared. What the panel shows lives in :class:`~.state.ProfilerState` (Qt-free); this
module lays the widgets out and wires them to it.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QSplitter, QStackedWidget, QTabWidget, QVBoxLayout, QWidget

from studio.core import formats
from studio.core.formats import Detected
from studio.tools.profiler.model import Trace
from studio.ui.links import Overlay
from studio.ui.panels.base import Panel, state_property
from studio.ui.panels.profiler import db_follow, keep_view, local
from studio.ui.panels.profiler import state as st
from studio.ui.panels.profiler.compare_tab import CompareTab
from studio.ui.panels.profiler.range_actions import RangeActions
from studio.ui.panels.profiler.run_actions import RunActions
from studio.ui.panels.profiler.state import Loaded, ProfilerState, load_job, rank_lanes_job, summary_rows
from studio.ui.panels.profiler.stats_tab import StatsTab
from studio.ui.panels.profiler.table import TableWidget
from studio.ui.panels.profiler.timeline import TimelineView
from studio.ui.panels.profiler.widgets.toolbar import build_toolbar
from studio.ui.widgets.empty_state import EmptyState


SWAP_WAIT_S = 1.0  # the longest a rank job waits for the window to paint the lanes it handed over


class ProfilerPanel(RunActions, RangeActions, Panel):
    """Timeline, Statistics, Summary and Compare tabs over the profiles opened here."""

    NAME = formats.PROFILER
    TITLE = "Profiler"

    profiles = state_property("profiles", "The opened profiles (:class:`Loaded`), in order.")
    current = state_property("current", "The profile shown, or None.")
    iterations = state_property("iterations", "Timed iterations of a local profile run.")
    warmup = state_property("warmup", "Warm-up iterations of a local profile run.")
    seed = state_property("seed", "The seed of a local profile run's random inputs.")
    last_run = state_property("last_run", "The RunResult of the latest local profile made here.")
    last_bench = state_property("last_bench", "The JSON of the latest benchmark made here.")
    rank_lanes_ready = Signal(object)  # a partial Loaded (ranks' lanes, a file's read part), from a job's thread
    read_options: dict | None = None  # for tests: how big traces are read (partial_read.open_growing)

    def __init__(self, runner, parent: QWidget | None = None, links=None):
        super().__init__(runner, parent, links)
        self.state = ProfilerState(iterations=local.ITERATIONS, warmup=local.WARMUP, seed=local.SEED)
        self.shape_dialog = None  # the open "Input shapes" dialog, if any
        self._rank_jobs: dict[Path, object] = {}  # folder -> the job reading its ranks' lanes
        self._swapped: dict[Path, threading.Event] = {}  # folder -> set once its lanes' swap is painted
        self._build()
        self.db_follow = db_follow.DbFollower(self)  # databases are read by the window shown
        self.links.profile_model.connect(self.profile_model)
        self.links.rank_timelines.connect(self.open_rank_timelines)
        self.rank_lanes_ready.connect(self._on_rank_lanes)
        self.links.show_time_range.connect(self.show_time_range)
        self.links.show_wall_range.connect(self.show_wall_range)
        self._pending_wall: tuple[Path, int, int] | None = None

    @property
    def opened_paths(self) -> list[Path]:
        """Every path routed here, in order (loading goes on in the background)."""
        return list(self.state.routed)

    # ------------------------------------------------------------------ widgets
    def _build(self) -> None:
        bar = build_toolbar(self)
        self.timeline = TimelineView(self)
        self.timeline.slice_selected.connect(self._on_slice_selected)
        self.timeline.range_selected.connect(self._on_range_selected)
        self.timeline.area_selected.connect(self._on_area_selected)
        self.range_table = TableWidget("Shift+drag on the timeline (or drag on its ruler) to select a time "
                                       "range: its slices are aggregated here.", self)
        self.range_table.row_activated.connect(lambda row: self.highlight_name(str(row[0])))
        self.details = TableWidget("Click a slice to see its name, times and arguments here.", self)
        self.bottom = QTabWidget(self)
        self.bottom.addTab(self.details, "Selected slice")
        self.bottom.addTab(self.range_table, "Selected range")
        self.bottom.setCurrentWidget(self.range_table)
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.timeline)
        split.addWidget(self.bottom)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)

        self.stats_tab = StatsTab(self)
        self.stats_tab.op_clicked.connect(self.highlight_name)
        self.stats_tab.show_in_graph.connect(self._show_in_graph)
        self.summary = TableWidget("Open a profile to see what it says about its host and device.", self)
        self.compare_tab = CompareTab(self)
        self.compare_tab.compare_requested.connect(self.compare)
        self.tabs = QTabWidget(self)
        self.empty = EmptyState("No profile open", "Open a trace JSON, an ONNX Runtime profile or a PROF_* / "
                                "ASCEND_PROFILER_OUTPUT folder (also: <code>studio profile run MODEL -o DIR</code>), "
                                "or profile an ONNX model here.", self)
        self.empty.add_action("Profile a model…", self._on_pick_model, self.run_button.toolTip())
        self.empty.add_action("Open a file…", self._on_open_profile_file, "A trace JSON, ONNX Runtime profile, "
                              "msprof CSV or DB")
        self.empty.add_action("Open a folder…", self._on_open_profile_folder, "A PROF_* or ASCEND_PROFILER_OUTPUT "
                              "folder")
        self.timeline_stack = QStackedWidget(self)  # the empty state until a profile is shown
        self.timeline_stack.addWidget(self.empty)
        self.timeline_stack.addWidget(split)
        self.tabs.addTab(self.timeline_stack, "Timeline")
        self.tabs.addTab(self.stats_tab, "Statistics")
        self.tabs.addTab(self.summary, "Summary")
        self.tabs.addTab(self.compare_tab, "Compare")
        # the Statistics tab has its own "Show in graph" for the op clicked there
        self.tabs.currentChanged.connect(lambda index: bar.set_shown(self.graph_button, index == 0))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.reading_band = QLabel("", self)  # how much of a profile still being read is shown
        self.reading_band.setWordWrap(True)
        self.reading_band.setStyleSheet("QLabel { background: palette(highlight); color: palette(highlighted-text);"
                                        " padding: 2px 6px; }")
        self.reading_band.setVisible(False)
        layout.addWidget(bar)
        layout.addWidget(self.reading_band)
        layout.addWidget(self.tabs, 1)

    # ------------------------------------------------------------------ opening
    def open_file(self, detected: Detected) -> None:
        path = detected.path
        index = self.state.route(path)
        if index is not None:
            self.profile_box.setCurrentIndex(index)
            return
        if db_follow.handles(path):
            return self.db_follow.open(path)
        self.info.setText(f"Opening {path.name}…")
        # A big trace is shown while it is read: each partial profile is swapped in as the ranks'
        # lanes are (the view kept), the job waiting until it is painted.
        swapped = self._swapped[path] = threading.Event()
        show = self._swap_waiter(swapped)

        def job(cancel):
            cancel.on_cancel(swapped.set)
            return load_job(path, cancel, show, self.read_options)

        handle = self.runner.start(f"Opening {path.name}", job)
        handle.ended.connect(swapped.set)
        handle.finished.connect(self._on_rank_lanes)
        # Why it failed is the notice board's to show (the runner posts it); the line only stops
        # saying "Opening…".
        handle.failed.connect(lambda exc, _tb: self.info.setText(f"Could not open {path.name}"))

    def _swap_waiter(self, swapped: threading.Event):
        """A job's ``show``: hand a partial profile to the window and wait (bounded) until it is painted."""
        def show(loaded: Loaded, *_counts) -> None:  # on the job's thread
            # The job waits while the window swaps the profile in and paints it: building the next
            # one meanwhile would take half the interpreter's turns from that frame (measured:
            # a 10 ms swap took 20-30 ms beside a join). Bounded, so nothing can hang on it; a
            # cancel or the job's end sets the event too.
            swapped.clear()
            self.rank_lanes_ready.emit(loaded)
            swapped.wait(SWAP_WAIT_S)
        return show

    def open_rank_timelines(self, folder) -> None:
        """Every rank of the multi-rank ``folder`` on one timeline (the Cluster panel asks for it)."""
        folder = Path(folder)
        self.links.focus.emit("profiler")
        index = self.state.route(folder)
        if index is not None:
            self.profile_box.setCurrentIndex(index)
        running = self._rank_jobs.get(folder)
        if running is not None or (index is not None and self.state.profiles[index].complete):
            return  # still coming in, or whole: nothing to read again
        self.info.setText(f"Opening every rank of {folder.name}…")  # (again, when cancelled part way)

        swapped = self._swapped[folder] = threading.Event()
        show = self._swap_waiter(swapped)

        def job(cancel):
            cancel.on_cancel(swapped.set)
            return rank_lanes_job(folder, cancel, show)

        handle = self.runner.start(f"Opening the ranks of {folder.name}", job)
        self._rank_jobs[folder] = handle
        handle.ended.connect(lambda: self._rank_jobs.pop(folder, None))
        handle.ended.connect(swapped.set)
        handle.finished.connect(self._on_rank_lanes)
        handle.failed.connect(lambda exc, _tb: self.info.setText(f"Could not open {folder.name}"))  # why: the board

    def _on_rank_lanes(self, loaded: Loaded) -> None:
        """A joined trace of the ranks (some still their step summary, or the last, whole one), or
        a file's trace read so far (or whole): shown in place of the one before it, the view kept
        where the user has it (window, range, selection, pinned tracks, markers, find)."""
        swapped = self._swapped.get(Path(loaded.path))
        index = self.state.index_of(loaded.path)
        if index is None:
            self._on_loaded(loaded)
            self._when_painted(swapped)
            return
        old, self.state.profiles[index] = self.state.profiles[index], loaded
        self.profile_box.setItemText(index, loaded.label)
        self.compare_tab.set_profiles([p.label for p in self.state.profiles])
        if loaded.complete and not old.complete:  # what waited for the whole profile
            self.status.emit(f"Profiler: {loaded.label}: {loaded.trace.size:,} slices")
            self._emit_overlay(loaded)
            self._compare_when_open()
        if self.state.current is not old:
            self._when_painted(swapped)
            return
        self.state.current = loaded
        kept = keep_view.position(self.timeline)
        self.timeline.set_trace(loaded.trace, loaded.by_name, loaded.share, loaded.first_view, loaded.counter_max,
                                loaded.rows)
        keep_view.restore(self.timeline, kept)
        text = st.info_text(loaded.trace) + (f" · {loaded.first_view_note}" if loaded.first_view_note else "")
        self.info.setText(text)
        self.info.setToolTip("\n".join([text, *loaded.trace.warnings, str(loaded.path)]))
        self._show_band(loaded)
        self._when_painted(swapped)
        QTimer.singleShot(0, lambda: self._fill_tables(loaded))
        if self.find.text().strip():  # the matches were slices of the trace swapped out: find again
            self._on_find_text(self.find.text())

    def _when_painted(self, swapped: threading.Event | None) -> None:
        """Let the rank job go on once the timeline has painted what was swapped in (at once when
        the timeline is not on screen: no paint will come)."""
        if swapped is None:
            return
        if self.timeline.isVisible() and not self.timeline.visibleRegion().isEmpty():
            self.timeline.after_next_paint(swapped.set)
        else:
            swapped.set()

    def _on_loaded(self, loaded: Loaded) -> None:
        labels = self.state.add(loaded)
        self.profile_box.addItem(loaded.label)
        self.profile_box.setItemData(self.profile_box.count() - 1, str(loaded.path), Qt.ItemDataRole.ToolTipRole)
        self.compare_tab.set_profiles(labels)
        self.profile_box.setCurrentIndex(len(self.state.profiles) - 1)
        self.status.emit(f"Profiler: {loaded.label}: {loaded.trace.size:,} slices"
                         + ("" if loaded.complete else " so far (still reading)"))
        if loaded.complete:  # a partial profile's shares would mislead the graph's overlay
            self._emit_overlay(loaded)
        pending = self.state.take_pending_range(loaded.path)
        if pending is not None:
            self.show_time_range(*pending)
        wall, self._pending_wall = self._pending_wall, None
        if wall is not None and wall[0] == loaded.path:
            self.show_wall_range(*wall)
        if loaded.complete:  # a comparison of what is read so far would be taken as the answer
            self._compare_when_open()
        if loaded.trace.lod is not None and not isinstance(loaded.trace.start, np.memmap) and not loaded.cached:
            from studio.tools.profiler.loader import store_cache

            trace, path = loaded.trace, loaded.path
            self.runner.start(f"Caching {path.name}", lambda cancel: store_cache(path, trace, cancel),
                              key="profiler-cache")

    def show_time_range(self, path, t0: int, t1: int) -> None:
        """Zoom the timeline to [t0, t1] (ns) of the profile at ``path`` (opened first when needed)
        and aggregate the range."""
        if path is not None:
            path = Path(path)
            index = self.state.index_of(path)
            if index is None:
                self.state.pending_range = (path, t0, t1)
                self.request_load.emit(path)
                return
            self.profile_box.setCurrentIndex(index)
        if self.state.current is None:
            return
        margin = max(1, (t1 - t0) // 20)
        self.timeline.set_window(max(0, t0 - margin), t1 + margin)
        self._on_range_selected(t0, t1)

    def show_wall_range(self, path, t0: int, t1: int) -> None:
        """Zoom to [t0, t1] given on the profile's own clock (ns as its files stamp them): the
        profile at ``path`` is opened first when needed, then the range is moved to its origin."""
        path = Path(path)
        index = self.state.index_of(path)
        if index is None:
            self._pending_wall = (path, int(t0), int(t1))
            self.request_load.emit(path)
            return
        origin = self.state.profiles[index].trace.origin_ns
        self.show_time_range(path, int(t0) - origin, int(t1) - origin)

    def _on_profile_chosen(self, index: int) -> None:
        loaded = self.state.choose(index)
        if loaded is None:
            return
        trace = loaded.trace
        text = st.info_text(trace) + (f" · {loaded.first_view_note}" if loaded.first_view_note else "")
        if trace.warnings:
            self.status.emit(f"Profiler: {loaded.label}: {trace.warnings[0]}")
        self.info.setText(text)
        self.info.setToolTip("\n".join([text, *trace.warnings, str(loaded.path)]))  # the label may be cut
        self.timeline.set_trace(trace, loaded.by_name, loaded.share, loaded.first_view, loaded.counter_max,
                                loaded.rows)
        self._show_band(loaded)
        self.timeline_stack.setCurrentIndex(1)
        self.range_table.set_rows([], [])
        self.range_table.set_note("")
        self.details.set_rows([], [])
        self._on_find_text(self.find.text())
        if trace.size < st.DEFER_TABLES_SLICES:
            self._fill_tables(loaded)
            return
        # A big profile's tables fill in the next turn of the event loop: with the timeline's
        # first frame in the same turn, they held the window for 80 ms on a busy machine.
        self.stats_tab.show_stats(trace, [], [], {}, {"op": [], "api": []})
        QTimer.singleShot(0, lambda: self._fill_tables(loaded))

    def _show_band(self, loaded: Loaded) -> None:
        """The band over the tabs says how much of a profile still coming in is there (hidden once whole)."""
        text = "" if loaded.complete else (loaded.reading or loaded.first_view_note or "still reading")
        self.reading_band.setText(text)
        self.reading_band.setVisible(bool(text))

    def _fill_tables(self, loaded: Loaded) -> None:
        if self.state.current is not loaded:  # another profile was chosen meanwhile
            return
        self.stats_tab.show_stats(loaded.trace, loaded.by_name, loaded.apis, loaded.tables, loaded.ready,
                                  loaded.counted)
        self.summary.set_rows(["Fact", "Value"], summary_rows(loaded), first_width=220)

    def _emit_overlay(self, loaded: Loaded) -> None:
        """Time share per op for the graph panel, when the profile knows its model."""
        if loaded.trace.model_path:
            self.links.overlay.emit(Overlay("Time share (profile)", st.overlay_values(loaded),
                                            [self.green.value(), self.red.value()], False, "%",
                                            Path(loaded.trace.model_path)))

    # ------------------------------------------------------------------ selection and find
    def _on_slice_selected(self, index: int) -> None:
        current = self.state.current
        self.graph_button.setEnabled(index >= 0 and current is not None)
        if index < 0 or current is None:
            return
        self.state.selected_name = current.trace.slice_name(index)
        self.details.set_rows(["Field", "Value"], st.slice_rows(current.trace, index), first_width=160)
        self.bottom.setCurrentWidget(self.details)
        self.status.emit(self.timeline.describe(index).splitlines()[0])

    def highlight_name(self, name: str) -> None:
        """Select every slice called ``name`` (outlined) and the first of them."""
        if self.state.current is None:
            return
        trace = self.state.current.trace
        indices = trace.slices_named(name)
        self.timeline.set_highlighted(indices)
        self.state.selected_name = name
        self.graph_button.setEnabled(True)
        if indices.size:
            self.timeline.select_slice(int(indices[np.argmin(np.asarray(trace.start)[indices])]))
        self.status.emit(f"{name}: {indices.size:,} slices")

    def _on_find_text(self, text: str) -> None:
        self.state.clear_matches()
        self.timeline.set_highlighted(self.state.matches)
        if self.state.current is None or not text.strip():
            self.match_label.setText("")
            return
        trace, needle = self.state.current.trace, text.strip().lower()
        self.match_label.setText("finding…")
        handle = self.runner.start("Finding slices", lambda cancel: st.find_job(trace, needle, cancel),
                                   key="profiler-find")
        handle.finished.connect(lambda found: self._on_found(trace, text, found))

    def _on_found(self, trace: Trace, text: str, found: np.ndarray) -> None:
        current = self.state.current
        if current is None or current.trace is not trace or self.find.text() != text:
            return  # the user typed on or switched profiles meanwhile
        self.state.set_matches(found)
        self.timeline.set_highlighted(found)
        self.match_label.setText(f"{found.size:,} found")

    def find_next(self, step: int) -> None:
        """Select the next (step 1) or previous (step −1) match and bring it into view."""
        index = self.state.step_match(step)
        if index is not None:
            self.timeline.select_slice(index)
            self.match_label.setText(self.state.match_text())

    def _on_thresholds(self) -> None:
        green, red = self.green.value() / 100, self.red.value() / 100
        self.timeline.set_thresholds(green, max(red, green))

    def _show_in_graph(self, name: str) -> None:
        if name:
            self.links.show_node.emit(*st.graph_name(self.state.current, name))
            self.links.focus.emit(formats.GRAPH)

    # ------------------------------------------------------------------ compare
    def compare(self, base_index: int, new_index: int) -> None:
        """Compare two opened profiles (as a job); the result shows in the Compare tab, with the
        benchmark figures side by side when both are benchmarks."""
        profiles = self.state.profiles
        if not (0 <= base_index < len(profiles) and 0 <= new_index < len(profiles)):
            return
        base, new, rerun = profiles[base_index], profiles[new_index], self.compare_tab.rerun.isChecked()

        def show(outcome) -> None:
            result, rows, labels = outcome
            self.compare_tab.show_result(result)
            self.compare_tab.show_bench(rows, *labels, change=result.change)

        handle = self.runner.start("Comparing profiles", lambda cancel: st.compare_job(base, new, rerun, cancel),
                                   key="profiler-compare")
        handle.finished.connect(show)

    def compare_paths(self, base, new) -> None:
        """Compare the profiles at ``base`` and ``new`` as soon as both are open (they may still be
        loading) and bring the Compare tab to the front."""
        self.state.pending_compare = (Path(base).resolve(), Path(new).resolve())
        self._compare_when_open()

    def _compare_when_open(self) -> None:
        ready = self.state.compare_ready()
        if ready is None:
            return
        self.compare_tab.base.setCurrentIndex(ready[0])
        self.compare_tab.new.setCurrentIndex(ready[1])
        self.tabs.setCurrentWidget(self.compare_tab)
        self.compare(*ready)
