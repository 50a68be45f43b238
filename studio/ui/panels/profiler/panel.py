"""The Profiler panel: timeline, statistics, analysis summary and baseline comparison.

Every open, statistics pass, range aggregate and comparison runs as a job (the engine in
``studio.tools.profiler``); the GUI thread only draws. Opened profiles stay in a list so two of
them can be compared. What the panel shows lives in :class:`~.state.ProfilerState` (Qt-free); this
module lays the widgets out and joins the objects that act on them by signals: the reads
(:class:`~.reading.ProfileReader`), which profile is shown (:class:`~.profile_view.ProfileView`),
find (:class:`~.finder.SliceFinder`), the selected range (:class:`~.range_actions.RangeActions`) and
the profile / benchmark runs (:class:`~.run_actions.RunActions`).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter, QStackedWidget, QTabWidget, QVBoxLayout, QWidget

from studio.core import formats
from studio.core.formats import Detected
from studio.ui.links import Overlay
from studio.ui.panels.base import Panel, state_property
from studio.ui.panels.profiler import db_follow, local
from studio.ui.panels.profiler import state as st
from studio.ui.panels.profiler.compare_actions import CompareActions
from studio.ui.panels.profiler.compare_tab import CompareTab
from studio.ui.panels.profiler.finder import SliceFinder
from studio.ui.panels.profiler.profile_view import ProfileView
from studio.ui.panels.profiler.range_actions import RangeActions
from studio.ui.panels.profiler.reading import ProfileReader
from studio.ui.panels.profiler.run_actions import RunActions
from studio.ui.panels.profiler.state import Loaded, ProfilerState
from studio.ui.panels.profiler.stats_tab import StatsTab
from studio.ui.panels.profiler.table import TableWidget
from studio.ui.panels.profiler.timeline import TimelineView
from studio.ui.panels.profiler.widgets.toolbar import build_toolbar
from studio.ui.widgets.empty_state import EmptyState


class ProfilerPanel(Panel):
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
    read_options: dict | None = None  # for tests: how big traces are read (partial_read.open_growing)

    def __init__(self, runner, parent: QWidget | None = None, links=None):
        super().__init__(runner, parent, links)
        self.state = ProfilerState(iterations=local.ITERATIONS, warmup=local.WARMUP, seed=local.SEED)
        self.runs = RunActions(self, self)
        self._build()
        self.reader = ProfileReader(runner, self.timeline, lambda: self.read_options, self)
        self.rank_lanes_ready = self.reader.arrived  # a partial Loaded (read so far), from a job's thread
        self.view = ProfileView(self.state, runner, self, self)
        self.finder = SliceFinder(self.state, runner, self.timeline, self.find, self.match_label, self)
        self.ranges = RangeActions(self.state, runner, self.range_table, self)
        self.comparing = CompareActions(self.state, runner, self.compare_tab, self)
        self._wire()
        self.db_follow = db_follow.DbFollower(self)  # databases are read by the window shown
        self._pending_wall: tuple[Path, int, int] | None = None

    def _wire(self) -> None:
        """Join the objects: what each says goes to the widgets and objects that act on it."""
        self.reader.arrived.connect(self._on_rank_lanes)
        self.reader.whole.connect(self._on_rank_lanes)
        self.reader.info.connect(self.info.setText)
        self.view.painted_wait.connect(self.reader.when_painted)
        self.view.added.connect(self._on_added)
        self.view.whole.connect(self._on_whole)
        self.view.shown.connect(self.finder.again)
        self.finder.named.connect(lambda _name: self.graph_button.setEnabled(True))
        self.ranges.ready.connect(lambda: self.bottom.setCurrentWidget(self.range_table))
        self.runs.info.connect(self._on_run_info)
        self.runs.made.connect(self._show_made)
        self.runs.show_summary.connect(lambda: self.tabs.setCurrentWidget(self.summary))
        self.comparing.front.connect(lambda: self.tabs.setCurrentWidget(self.compare_tab))
        self.compare_tab.compare_requested.connect(self.comparing.compare)
        for source in (self.view, self.finder, self.ranges, self.runs):
            source.status.connect(self.status.emit)
        self.timeline.slice_selected.connect(self._on_slice_selected)
        self.timeline.range_selected.connect(self.ranges.on_range)
        self.timeline.area_selected.connect(self.ranges.on_area)
        self.links.profile_model.connect(self.profile_model)
        self.links.rank_timelines.connect(self.open_rank_timelines)
        self.links.show_time_range.connect(self.show_time_range)
        self.links.show_wall_range.connect(self.show_wall_range)

    @property
    def opened_paths(self) -> list[Path]:
        """Every path routed here, in order (loading goes on in the background)."""
        return list(self.state.routed)

    shape_dialog = property(lambda self: self.runs.shape_dialog, doc="The open \"Input shapes\" dialog, if any.")
    bench_dialog = property(lambda self: self.runs.bench_dialog, doc="The open benchmark dialog, if any.")
    run_on_dialog = property(lambda self: self.runs.run_on_dialog, doc="The open \"Run on\" dialog, if any.")

    # ------------------------------------------------------------------ widgets
    def _build(self) -> None:
        bar = build_toolbar(self)
        self.timeline = TimelineView(self)
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
        self.tabs = QTabWidget(self)
        self.empty = EmptyState("No profile open", "Open a trace JSON, an ONNX Runtime profile or a PROF_* / "
                                "ASCEND_PROFILER_OUTPUT folder (also: <code>studio profile run MODEL -o DIR</code>), "
                                "or profile an ONNX model here.", self)
        self.empty.add_action("Profile a model…", self.runs.pick_model, self.run_button.toolTip())
        self.empty.add_action("Open a file…", self.runs.open_profile_file, "A trace JSON, ONNX Runtime profile, "
                              "msprof CSV or DB")
        self.empty.add_action("Open a folder…", self.runs.open_profile_folder, "A PROF_* or ASCEND_PROFILER_OUTPUT "
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
        if self.state.route(detected.path) is None:
            if db_follow.handles(detected.path):
                return self.db_follow.open(detected.path)
            self.reader.open_file(detected.path)
        else:
            self.view.select(detected.path)

    def open_rank_timelines(self, folder) -> None:
        """Every rank of the multi-rank ``folder`` on one timeline (the Cluster panel asks for it)."""
        folder = Path(folder)
        self.links.focus.emit("profiler")
        index = self.state.route(folder)
        self.view.select(folder)
        if index is None or not self.state.profiles[index].complete:  # else whole: nothing to read again
            self.reader.open_rank_timelines(folder)

    def _on_rank_lanes(self, loaded: Loaded) -> None:
        """A partial or whole profile from a read: added, or swapped in for the one before it."""
        self.view.arrive(loaded)

    def _show_made(self, loaded: Loaded) -> None:
        """Show a profile or benchmark made here; its folder counts as routed (not opened twice)."""
        self.state.route(loaded.path)
        self.view.add(loaded)

    def _on_added(self, loaded: Loaded) -> None:
        """What waited for the profile at ``loaded.path`` to open: a time range to show."""
        pending = self.state.take_pending_range(loaded.path)
        if pending is not None:
            self.show_time_range(*pending)
        wall, self._pending_wall = self._pending_wall, None
        if wall is not None and wall[0] == loaded.path:
            self.show_wall_range(*wall)

    def _on_whole(self, loaded: Loaded) -> None:
        """A whole profile is here: the graph's overlay, and a comparison waiting for it (neither is
        made from a partial profile: its shares would mislead, its comparison be taken as the answer)."""
        if loaded.trace.model_path:  # time share per op for the graph panel
            self.links.overlay.emit(Overlay("Time share (profile)", st.overlay_values(loaded),
                                            [self.green.value(), self.red.value()], False, "%",
                                            Path(loaded.trace.model_path)))
        self.comparing.when_open()

    def _on_run_info(self, text: str, tip: str) -> None:
        self.info.setText(text)
        if tip:
            self.info.setToolTip(tip)

    def show_time_range(self, path, t0: int, t1: int) -> None:
        """Zoom the timeline to [t0, t1] (ns) of the profile at ``path`` (opened first when needed)
        and aggregate the range."""
        if path is not None:
            path = Path(path)
            if self.view.select(path) is None:
                self.state.pending_range = (path, t0, t1)
                self.request_load.emit(path)
                return
        if self.state.current is None:
            return
        margin = max(1, (t1 - t0) // 20)
        self.timeline.set_window(max(0, t0 - margin), t1 + margin)
        self.ranges.on_range(t0, t1)

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
        self.view.choose(index)

    # ------------------------------------------------------------------ runs (RunActions)
    def ask_where(self, model: Path) -> None:
        """"Run on": this computer or an SSH host, then profile ``model`` there."""
        self.runs.ask_where(model)

    def profile_model(self, model, shapes: dict[str, list[int]] | None = None, host: str | None = None) -> None:
        """Profile an ONNX model here or on ``host`` (see :meth:`RunActions.profile_model`)."""
        self.runs.profile_model(model, shapes, host)

    def ask_bench(self, model: Path | None = None) -> None:
        """The "Benchmark model…" dialog (see :meth:`RunActions.ask_bench`)."""
        self.runs.ask_bench(model)

    def bench_model(self, request) -> None:
        """Benchmark ``request.model`` (see :meth:`RunActions.bench_model`)."""
        self.runs.bench_model(request)

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
        self.finder.highlight_name(name)

    def _on_find_text(self, text: str) -> None:
        self.finder.on_text(text)

    def find_next(self, step: int) -> None:
        """Select the next (step 1) or previous (step −1) match and bring it into view."""
        self.finder.step(step)

    def _on_thresholds(self) -> None:
        green, red = self.green.value() / 100, self.red.value() / 100
        self.timeline.set_thresholds(green, max(red, green))

    def _show_in_graph(self, name: str) -> None:
        if name:
            self.links.show_node.emit(*st.graph_name(self.state.current, name))
            self.links.focus.emit(formats.GRAPH)

    # ------------------------------------------------------------------ compare (CompareActions)
    def compare(self, base_index: int, new_index: int) -> None:
        """Compare two opened profiles (see :meth:`CompareActions.compare`)."""
        self.comparing.compare(base_index, new_index)

    def compare_paths(self, base, new) -> None:
        """Compare the profiles at ``base`` and ``new`` as soon as both are open (see
        :meth:`CompareActions.compare_paths`)."""
        self.comparing.compare_paths(base, new)
