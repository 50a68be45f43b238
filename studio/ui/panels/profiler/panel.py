"""The Profiler panel: timeline, statistics, analysis summary and baseline comparison.

Every open, statistics pass, range aggregate and comparison runs as a job (the engine in
``studio.tools.profiler``); the GUI thread only draws. Opened profiles stay in a list so two of
them can be compared.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
    QWidgetAction,
)

from studio import formats
from studio.formats import Detected
from studio.jobs import CancelToken, Progress
from studio.ops.profile import Request as ProfileRequest
from studio.tools.profiler import stats
from studio.tools.profiler.model import Trace, source_label
from studio.ui import style
from studio.ui.links import Overlay
from studio.ui.panels.base import Panel
from studio.ui.panels.profiler import local
from studio.ui.panels.profiler.compare_tab import CompareTab
from studio.ui.panels.profiler.stats_tab import StatsTab
from studio.ui.panels.profiler.table import TableWidget
from studio.ui.panels.profiler.timefmt import format_duration
from studio.ui.panels.profiler.timeline import TimelineView
from studio.ui.widgets.elided_label import ElidedLabel
from studio.ui.widgets.empty_state import EmptyState
from studio.ui.widgets.tool_row import ToolRow, menu_button

DEFER_TABLES_SLICES = 200_000  # from this size on, the tables fill one event-loop turn after the timeline
RANGE_COLUMNS = ["Name", "Count", "Total (µs)", "Avg (µs)", "Max (µs)", "Share of range"]


@dataclass
class Loaded:
    """One opened profile and its statistics."""

    path: Path
    label: str
    trace: Trace
    by_name: list
    apis: list
    tables: dict
    share: Any = None  # op share per name id (timeline colours), from stats.share_by_name_id
    ready: dict | None = None  # the statistics tab's per-op/per-API rows (stats_tab.ready_rows)
    counted: str = ""  # which slices the op statistics count (measured iterations, warm-ups left out)


def load_job(path: Path, cancel: CancelToken) -> Generator[Progress, None, Loaded]:
    """Open a profile and compute its statistics (runs on a worker thread)."""
    from studio.tools.profiler.loader import open_profile_offloaded

    # Big sources are parsed by a worker process into the cache and mapped here; small ones are
    # read in this thread and cached after they are shown.
    trace = yield from open_profile_offloaded(path, cancel)
    yield Progress(None, "statistics")
    from studio.ui.panels.profiler.stats_tab import ready_rows, typed_rows

    # Everything the panel shows that costs more than a few ms on a big trace is computed here,
    # off the GUI thread: the table rows, the timeline's colours.
    tables = {kind: typed_rows(table.rows) for kind, table in trace.tables.items()}
    (by_name, counted), apis = stats.op_rows(trace), stats.api_rows(trace)  # warm-ups left out
    return Loaded(path, source_label(path), trace, by_name, apis, tables,
                  share=stats.share_by_name_id(trace, by_name), ready=ready_rows(by_name, apis), counted=counted)


class ProfilerPanel(Panel):
    """Timeline, Statistics, Summary and Compare tabs over the profiles opened here."""

    NAME = formats.PROFILER
    TITLE = "Profiler"

    def __init__(self, runner, parent: QWidget | None = None, links=None):
        super().__init__(runner, parent, links)
        self.profiles: list[Loaded] = []
        self.current: Loaded | None = None
        self._matches = np.zeros(0, np.int64)
        self._match_at = -1
        self._selected_name = ""
        self._routed: list[Path] = []
        self.iterations, self.warmup, self.seed = local.ITERATIONS, local.WARMUP, local.SEED
        self.last_run = None  # the RunResult of the latest local profile made here
        self.last_bench: dict | None = None  # the JSON of the latest benchmark made here
        self.shape_dialog = None  # the open "Input shapes" dialog, if any
        self._build()
        self.links.profile_model.connect(self.profile_model)
        self._pending_range: tuple[Path, int, int] | None = None
        self._pending_compare: tuple[Path, Path] | None = None
        self.links.show_time_range.connect(self.show_time_range)

    @property
    def opened_paths(self) -> list[Path]:
        """Every path routed here, in order (loading goes on in the background)."""
        return list(self._routed)

    # ------------------------------------------------------------------ widgets
    def _build(self) -> None:
        self.profile_box = QComboBox(self)
        self.profile_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.profile_box.setMinimumContentsLength(16)
        self.profile_box.currentIndexChanged.connect(self._on_profile_chosen)
        self.info = ElidedLabel("No profile opened", self)  # gives way first; the whole text is its tooltip
        self.find = QLineEdit(self)
        self.find.setPlaceholderText("Find slices by name…")
        self.find.setClearButtonEnabled(True)
        self.find.setMinimumWidth(150)  # stays usable when the toolbar is crowded; the info label gives way
        self.find.returnPressed.connect(lambda: self.find_next(1))
        self.find.textChanged.connect(self._on_find_text)
        self.prev_button = _tool("◀", "Previous match", lambda: self.find_next(-1), self)
        self.next_button = _tool("▶", "Next match (Enter)", lambda: self.find_next(1), self)
        self.match_label = QLabel("", self)
        self.green = _percent_box(5.0, "Slices of ops with at most this share of op self time are green (the run's own ranges are grey)", self)
        self.red = _percent_box(10.0, "Slices of ops with at least this share of op self time are red "
                                      "(yellow between)", self)
        self.green.valueChanged.connect(self._on_thresholds)
        self.red.valueChanged.connect(self._on_thresholds)
        self.fit_button = _tool("Fit", "Fit the selection, or the whole trace (F)", lambda: self.timeline.fit(), self)
        self.graph_button = _tool("Show in graph", "Select the selected op in the Graph panel",
                                  lambda: self._show_in_graph(self._selected_name), self)
        self.graph_button.setEnabled(False)
        self.run_button = _tool("Profile…", "Pick an ONNX model and profile it with ONNX Runtime here or with Studio's engine on an SSH host "
                                "(CPU, seeded random inputs, as `studio profile run`)", self._on_pick_model, self)
        self.bench_button = _tool("Benchmark…", "Time an ONNX model's bare inference (warm-ups, timed loops, "
                                  "no profiler) with ONNX Runtime here or with Studio's engine on an SSH host, as "
                                  "`studio bench MODEL.onnx [--host NAME]`; the numbers open in Summary and Compare",
                                  lambda: self.ask_bench(), self)
        from studio.ui.panels.run.host_button import host_button

        # the host actions, shared with the Run menu
        self.host_button, self.host_actions = host_button(self, self.links, {
            "profile": "Run a run configuration under msprof on its host (or collect the folder a PyTorch script "
                       "writes) and open the PROF_ folder here",
            "bench": "Time an .om with msame or ais_bench where a run configuration runs, optionally next to its "
                     "original .onnx timed here with ONNX Runtime; the numbers open in Summary and Compare"})

        # Used most first: what does not fit goes under the row's "More" menu, the colour bands first.
        bar = self.tool_row = ToolRow(self, "profiler")
        for widget in (self.run_button, self.bench_button, self.host_button, self.profile_box):
            bar.addWidget(widget)
        bar.addWidget(self.info, 1)
        for widget in (self.find, self.prev_button, self.next_button, self.match_label, self.fit_button,
                       self.graph_button, self._colours_button()):
            bar.addWidget(widget)

        self.timeline = TimelineView(self)
        self.timeline.slice_selected.connect(self._on_slice_selected)
        self.timeline.range_selected.connect(self._on_range_selected)
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
        layout.addWidget(bar)
        layout.addWidget(self.tabs, 1)

    # ------------------------------------------------------------------ opening
    def open_file(self, detected: Detected) -> None:
        path = detected.path
        if path not in self._routed:
            self._routed.append(path)
        for index, loaded in enumerate(self.profiles):
            if loaded.path == path:
                self.profile_box.setCurrentIndex(index)
                return
        self.info.setText(f"Opening {path.name}…")
        handle = self.runner.start(f"Opening {path.name}", lambda cancel: load_job(path, cancel))
        handle.finished.connect(self._on_loaded)
        handle.failed.connect(lambda exc, _tb: self.info.setText(f"Could not open {path.name}: {str(exc).splitlines()[0]}"))

    def profile_model(self, model, shapes: dict[str, list[int]] | None = None, host: str | None = None) -> None:
        """Profile an ONNX model locally, or with Studio's engine on ``host`` (a job), then show the
        result like any opened profile.

        Without ``shapes``, a model with dynamic input dims first asks for their sizes
        (:class:`ShapeDialog`); the run then uses exactly what was typed."""
        model = Path(model)
        out = local.profile_folder(model, self.workspace_folder)
        iterations, warmup, seed = self.iterations, self.warmup, self.seed
        where = f" on {host}" if host else ""
        self.info.setText(f"Profiling {model.name}{where} ({iterations} runs after {warmup} warm-ups)…")
        self.links.focus.emit(self.NAME)
        request = ProfileRequest(model, out, shapes=dict(shapes or {}), seed=seed, iterations=iterations, warmup=warmup)
        context = self.host_context if host else None
        job = lambda cancel: local.profile_and_load_job(request, host, context, shapes is None,  # noqa: E731
                                                        load_job, cancel)
        self._run_on = host
        handle = self.runner.start(f"Profiling {model.name}{where}", job,
                                   key=f"host:{host}" if host else f"profiler-run:{model}")
        handle.finished.connect(self._on_profiled)
        handle.failed.connect(lambda exc, _tb: self.info.setText(
            f"Could not profile {model.name}: {str(exc).splitlines()[0]}"))
        handle.cancelled.connect(lambda: self.info.setText(f"Profiling {model.name} cancelled"))

    def _ask_shapes(self, need: local.NeedShapes) -> None:
        from studio.ui.panels.profiler.shape_dialog import ShapeDialog

        self.info.setText(f"{need.model.name} has dynamic input dims: give their sizes to profile it")
        dialog = self.shape_dialog = ShapeDialog(need.model.name, need.specs, self)
        host = getattr(self, "_run_on", None)
        dialog.accepted.connect(lambda: self.profile_model(need.model, dialog.shapes(), host))
        dialog.rejected.connect(lambda: self.info.setText(f"Profiling {need.model.name} cancelled: no input sizes"))
        dialog.open()  # window-modal, and the GUI thread goes on

    def _on_profiled(self, outcome) -> None:
        if isinstance(outcome, local.NeedShapes):
            self._ask_shapes(outcome)
            return
        result, loaded = outcome
        self.last_run = result
        self._show_made(loaded)
        line = local.latency_line(result)
        self.info.setText(local.latency_brief(result))
        self.info.setToolTip(f"{line}\n{loaded.path}")
        self.status.emit(f"Profiler: {line}")

    def _colours_button(self) -> QToolButton:
        """"Colours ▾": the share bands that colour the slices, in a menu (the row keeps its room)."""
        box = QWidget(self)
        row = QHBoxLayout(box)
        row.setContentsMargins(style.MARGIN, style.GAP, style.MARGIN, style.GAP)
        for widget in (QLabel("green ≤", box), self.green, QLabel("red ≥", box), self.red):
            row.addWidget(widget)
        menu = QMenu(self)
        holder = QWidgetAction(menu)
        holder.setDefaultWidget(box)
        menu.addAction(holder)
        button = menu_button(self, "Colours ▾", "The op shares that colour slices green, yellow and red", menu)
        self.colours_button = button
        return button

    def _on_open_profile_file(self) -> None:
        start = str(self.workspace_folder) if self.workspace_folder is not None else ""
        name, _ = QFileDialog.getOpenFileName(self, "Open a profile", start,
                                              "Profiles (*.json *.csv *.db *.gz);;All files (*)")
        if name:
            self.request_open.emit(Path(name))

    def _on_open_profile_folder(self) -> None:
        start = str(self.workspace_folder) if self.workspace_folder is not None else ""
        name = QFileDialog.getExistingDirectory(self, "Open a PROF_* or ASCEND_PROFILER_OUTPUT folder", start)
        if name:
            self.request_open.emit(Path(name))

    def _on_pick_model(self) -> None:
        start = str(self.workspace_folder) if self.workspace_folder is not None else ""
        name, _ = QFileDialog.getOpenFileName(self, "Profile an ONNX model", start, "ONNX models (*.onnx)")
        if name:
            self.ask_where(Path(name))

    def ask_where(self, model: Path) -> None:
        """"Run on": this computer or an SSH host; with no host added, straight here."""
        hosts = sorted(self.host_context.store.hosts)
        if not hosts:
            self.profile_model(model)
            return
        from studio.ui.widgets.run_on import RunOnDialog

        dialog = self.run_on_dialog = RunOnDialog(model.name, hosts, self)
        dialog.accepted.connect(lambda: self.profile_model(model, host=dialog.host()))
        dialog.open()

    # ------------------------------------------------------------------ benchmark an .onnx
    def ask_bench(self, model: Path | None = None) -> None:
        """The "Benchmark model…" dialog (model, where, loops); the run starts when it is accepted."""
        from studio.ui.panels.profiler.bench_dialog import BenchDialog

        if model is None and self.last_run is not None and str(self.last_run.model).lower().endswith(".onnx"):
            model = self.last_run.model  # the model profiled last is the likely one to time
        hosts = sorted(self.host_context.store.hosts)
        dialog = self.bench_dialog = BenchDialog(hosts, model, self.workspace_folder, self)
        dialog.accepted.connect(lambda: self.bench_model(dialog.request()))
        dialog.open()

    def bench_model(self, request) -> None:
        """Benchmark ``request.model`` here or on ``request.host`` (a job); the folder opens like a profile."""
        from studio.ui.panels.profiler.bench_job import bench_and_load_job, bench_folder

        model = Path(request.model)
        out = bench_folder(model, self.workspace_folder)
        where = f" on {request.host}" if request.host else ""
        self.info.setText(f"Benchmarking {model.name}{where} ({request.loop} loops after {request.warmup} "
                          "warm-ups)…")
        self.links.focus.emit(self.NAME)
        context = self.host_context if request.host else None
        handle = self.runner.start(f"Benchmark {model.name}{where}",
                                   lambda cancel: bench_and_load_job(context, request, out, load_job, cancel),
                                   key=f"host:{request.host}" if request.host else f"profiler-bench:{model}")
        handle.finished.connect(lambda outcome: self._on_benched(request, outcome))
        handle.failed.connect(lambda exc, _tb: self.info.setText(
            f"Could not benchmark {model.name}: {str(exc).splitlines()[0]}"))
        handle.cancelled.connect(lambda: self.info.setText(f"Benchmark of {model.name} cancelled"))

    def _on_benched(self, request, outcome) -> None:
        from studio.ui.panels.profiler.bench_job import bench_line

        if isinstance(outcome, local.NeedShapes):
            from studio.ui.panels.profiler.shape_dialog import ShapeDialog

            self.info.setText(f"{outcome.model.name} has dynamic input dims: give their sizes to benchmark it")
            dialog = self.shape_dialog = ShapeDialog(outcome.model.name, outcome.specs, self, action="benchmark")

            def sized() -> None:
                request.shapes = dialog.shapes()
                self.bench_model(request)

            dialog.accepted.connect(sized)
            dialog.rejected.connect(lambda: self.info.setText(
                f"Benchmark of {outcome.model.name} cancelled: no input sizes"))
            dialog.open()
            return
        bench, loaded = outcome
        self.last_bench = bench
        self._show_made(loaded)
        line = bench_line(bench)
        self.info.setText(line)
        self.info.setToolTip(f"{line}\n{loaded.path}")
        self.status.emit(f"Profiler: {line}")
        self.tabs.setCurrentWidget(self.summary)  # the numbers; the timeline only lays the loops end to end

    def _show_made(self, loaded: Loaded) -> None:
        """Show a profile or benchmark made here; its folder counts as routed (not opened twice)."""
        if loaded.path not in self._routed:
            self._routed.append(loaded.path)
        self._on_loaded(loaded)

    def _on_loaded(self, loaded: Loaded) -> None:
        self.profiles.append(loaded)
        labels = [p.label for p in self.profiles]
        if labels.count(loaded.label) > 1:
            loaded.label = f"{loaded.label} ({len(self.profiles)})"
            labels[-1] = loaded.label
        self.profile_box.addItem(loaded.label)
        self.profile_box.setItemData(self.profile_box.count() - 1, str(loaded.path), Qt.ItemDataRole.ToolTipRole)
        self.compare_tab.set_profiles(labels)
        self.profile_box.setCurrentIndex(len(self.profiles) - 1)
        self.status.emit(f"Profiler: {loaded.label}: {loaded.trace.size:,} slices")
        self._emit_overlay(loaded)
        pending, self._pending_range = self._pending_range, None
        if pending is not None and pending[0] == loaded.path:
            self.show_time_range(*pending)
        self._compare_when_open()
        if loaded.trace.lod is not None and not isinstance(loaded.trace.start, np.memmap):
            from studio.tools.profiler.loader import store_cache

            trace, path = loaded.trace, loaded.path
            self.runner.start(f"Caching {path.name}", lambda cancel: store_cache(path, trace, cancel),
                              key="profiler-cache")

    def show_time_range(self, path, t0: int, t1: int) -> None:
        """Zoom the timeline to [t0, t1] (ns) of the profile at ``path`` (opened first when needed)
        and aggregate the range."""
        if path is not None:
            path = Path(path)
            index = next((i for i, p in enumerate(self.profiles) if p.path == path), None)
            if index is None:
                self._pending_range = (path, t0, t1)
                self.request_load.emit(path)
                return
            self.profile_box.setCurrentIndex(index)
        if self.current is None:
            return
        margin = max(1, (t1 - t0) // 20)
        self.timeline.set_window(max(0, t0 - margin), t1 + margin)
        self._on_range_selected(t0, t1)

    def _on_profile_chosen(self, index: int) -> None:
        if not 0 <= index < len(self.profiles):
            return
        loaded = self.current = self.profiles[index]
        trace = loaded.trace
        text = (f"{trace.size:,} slices · {len(trace.tracks)} tracks · {len(trace.counters)} counters · "
                f"{format_duration(trace.span_ns)}")
        if trace.warnings:
            text = f"⚠ {len(trace.warnings)} warning(s), see Summary · {text}"
            self.status.emit(f"Profiler: {loaded.label}: {trace.warnings[0]}")
        self.info.setText(text)
        self.info.setToolTip("\n".join([text, *trace.warnings, str(loaded.path)]))  # the label may be cut
        self.timeline.set_trace(trace, loaded.by_name, loaded.share)
        self.timeline_stack.setCurrentIndex(1)
        self.range_table.set_rows([], [])
        self.details.set_rows([], [])
        self._on_find_text(self.find.text())
        if trace.size < DEFER_TABLES_SLICES:
            self._fill_tables(loaded)
            return
        # A big profile's tables fill in the next turn of the event loop: with the timeline's
        # first frame in the same turn, they held the window for 80 ms on a busy machine.
        self.stats_tab.show_stats(trace, [], [], {}, {"op": [], "api": []})
        QTimer.singleShot(0, lambda: self._fill_tables(loaded))

    def _fill_tables(self, loaded: Loaded) -> None:
        if self.current is not loaded:  # another profile was chosen meanwhile
            return
        self.stats_tab.show_stats(loaded.trace, loaded.by_name, loaded.apis, loaded.tables, loaded.ready,
                                  loaded.counted)
        self.summary.set_rows(["Fact", "Value"], summary_rows(loaded), first_width=220)

    def _emit_overlay(self, loaded: Loaded) -> None:
        """Time share per op for the graph panel, when the profile knows its model."""
        if not loaded.trace.model_path:
            return
        from studio.tools.profiler.ort_reader import graph_node_name

        values: dict[str, float] = {}
        for stat in loaded.by_name:
            if stat.share > 0:
                node = graph_node_name(stat.name)
                values[node] = values.get(node, 0.0) + 100.0 * stat.share  # in percent, as the legend reads
        self.links.overlay.emit(Overlay("Time share (profile)", values, [self.green.value(), self.red.value()],
                                        False, "%", Path(loaded.trace.model_path)))

    # ------------------------------------------------------------------ selection and find
    def _on_slice_selected(self, index: int) -> None:
        if index < 0 or self.current is None:
            self.graph_button.setEnabled(False)
            return
        self._selected_name = self.current.trace.slice_name(index)
        self.graph_button.setEnabled(True)
        self.details.set_rows(["Field", "Value"], slice_rows(self.current.trace, index), first_width=160)
        self.bottom.setCurrentWidget(self.details)
        self.status.emit(self.timeline.describe(index).splitlines()[0])

    def highlight_name(self, name: str) -> None:
        """Select every slice called ``name`` (outlined) and the first of them."""
        if self.current is None:
            return
        indices = self.current.trace.slices_named(name)
        self.timeline.set_highlighted(indices)
        self._selected_name = name
        self.graph_button.setEnabled(True)
        if indices.size:
            first = indices[np.argmin(np.asarray(self.current.trace.start)[indices])]
            self.timeline.select_slice(int(first))
        self.status.emit(f"{name}: {indices.size:,} slices")

    def _on_find_text(self, text: str) -> None:
        self._match_at = -1
        self._matches = np.zeros(0, np.int64)
        self.timeline.set_highlighted(self._matches)
        if self.current is None or not text.strip():
            self.match_label.setText("")
            return
        trace, needle = self.current.trace, text.strip().lower()
        self.match_label.setText("finding…")

        def job(cancel: CancelToken):
            yield Progress(None, f"finding {needle!r}")
            return find_slices(trace, needle)

        handle = self.runner.start("Finding slices", job, key="profiler-find")
        handle.finished.connect(lambda found: self._on_found(trace, text, found))

    def _on_found(self, trace: Trace, text: str, found: np.ndarray) -> None:
        if self.current is None or self.current.trace is not trace or self.find.text() != text:
            return  # the user typed on or switched profiles meanwhile
        self._matches, self._match_at = found, -1
        self.timeline.set_highlighted(found)
        self.match_label.setText(f"{found.size:,} found")

    def find_next(self, step: int) -> None:
        """Select the next (step 1) or previous (step −1) match and bring it into view."""
        if not self._matches.size:
            return
        self._match_at = (self._match_at + step) % self._matches.size
        self.timeline.select_slice(int(self._matches[self._match_at]))
        self.match_label.setText(f"{self._match_at + 1:,} / {self._matches.size:,}")

    def _on_thresholds(self) -> None:
        green, red = self.green.value() / 100, self.red.value() / 100
        if red < green:
            red = green
        self.timeline.set_thresholds(green, red)

    def _show_in_graph(self, name: str) -> None:
        if not name:
            return
        model = self.current.trace.model_path if self.current is not None else None
        if model:  # a local ORT run: name the node as the model does, not as ORT renamed it
            from studio.tools.profiler.ort_reader import graph_node_name

            name = graph_node_name(name)
        self.links.show_node.emit(Path(model) if model else None, name)
        self.links.focus.emit(formats.GRAPH)

    # ------------------------------------------------------------------ range and compare
    def _on_range_selected(self, t0: int, t1: int) -> None:
        trace = self.current.trace if self.current is not None else None
        if trace is None:
            return

        def job(cancel: CancelToken):
            yield Progress(None, "aggregating the selected range")
            return stats.by_name(trace, stats.in_range(trace, t0, t1))

        handle = self.runner.start("Aggregating a time range", job, key="profiler-range")
        handle.finished.connect(lambda rows: self._show_range(rows, t0, t1))

    def _show_range(self, rows: list, t0: int, t1: int) -> None:
        self.bottom.setCurrentWidget(self.range_table)
        self.range_table.set_rows(RANGE_COLUMNS, [[s.name, s.count, s.total_us, s.avg_us, s.max_us, s.share]
                                                  for s in rows], percent=("Share of range",))  # already by total
        self.status.emit(f"Range {format_duration(t1 - t0)}: {sum(s.count for s in rows):,} slices")

    def compare(self, base_index: int, new_index: int) -> None:
        """Compare two opened profiles (as a job); the result shows in the Compare tab, with the
        benchmark figures side by side when both are benchmarks."""
        if not (0 <= base_index < len(self.profiles) and 0 <= new_index < len(self.profiles)):
            return
        base, new = self.profiles[base_index], self.profiles[new_index]
        rerun = self.compare_tab.rerun.isChecked()

        def job(cancel: CancelToken):
            from studio.tools.bench.profile_folder import read_bench
            from studio.tools.bench.result import compare_rows
            from studio.tools.profiler.compare import compare, rerun_plan

            yield Progress(None, "comparing profiles")
            result = compare(base.trace, new.trace)
            if rerun:  # two local runs made here: time both models again, interleaved
                plan = rerun_plan(base.trace, new.trace)
                change = None
                if not isinstance(plan, str):
                    from studio.tools.bench.ab_run import ab_models

                    change = yield from ab_models(*plan, cancel=cancel)
                result.judge_rerun(plan, change)
            benches = read_bench(base.path), read_bench(new.path)
            if not all(benches):
                return result, [], ()
            labels = tuple(f"{b.get('tool')} on {b.get('where')}" for b in benches)  # what measured, where
            return result, compare_rows(*benches), labels

        def show(outcome) -> None:
            result, rows, labels = outcome
            self.compare_tab.show_result(result)
            self.compare_tab.show_bench(rows, *labels, change=result.change)

        handle = self.runner.start("Comparing profiles", job, key="profiler-compare")
        handle.finished.connect(show)

    def compare_paths(self, base, new) -> None:
        """Compare the profiles at ``base`` and ``new`` as soon as both are open (they may still be
        loading) and bring the Compare tab to the front."""
        self._pending_compare = (Path(base).resolve(), Path(new).resolve())
        self._compare_when_open()

    def _compare_when_open(self) -> None:
        if self._pending_compare is None:
            return
        paths = [p.path.resolve() for p in self.profiles]
        if not all(p in paths for p in self._pending_compare):
            return
        base, new = (paths.index(p) for p in self._pending_compare)
        self._pending_compare = None
        self.compare_tab.base.setCurrentIndex(base)
        self.compare_tab.new.setCurrentIndex(new)
        self.tabs.setCurrentWidget(self.compare_tab)
        self.compare(base, new)


def find_slices(trace: Trace, needle: str) -> np.ndarray:
    """Indices of the slices whose name contains ``needle`` (lower case), in time order."""
    ids = np.array([i for i, name in enumerate(trace.names) if needle in name.lower()], dtype=np.int32)
    if not ids.size:
        return np.zeros(0, np.int64)
    found = np.flatnonzero(np.isin(np.asarray(trace.name), ids))
    return found[np.argsort(np.asarray(trace.start)[found], kind="stable")]


def slice_rows(trace: Trace, index: int) -> list[list[str]]:
    """Everything about one slice, for the Selected slice table."""
    start, dur = int(trace.start[index]), int(trace.dur[index])
    rows = [["Name", trace.slice_name(index)],
            ["Track", trace.track_label(int(trace.track[index]))],
            ["Start", format_duration(start)], ["Duration", format_duration(dur)],
            ["End", format_duration(start + dur)], ["Depth", str(int(trace.depth[index]))]]
    if trace.cats[int(trace.cat[index])]:
        rows.append(["Category", trace.cats[int(trace.cat[index])]])
    for key, value in trace.slice_args(index).items():
        rows.append([f"args.{key}", value if isinstance(value, str) else json.dumps(value)])
    return rows


def summary_rows(loaded: Loaded) -> list[list[str]]:
    """Facts for the Summary tab: the source, the trace's shape, and what the data says."""
    trace = loaded.trace
    processes = sorted({t.process for t in trace.tracks} | {c.process for c in trace.counters})
    rows = [["Warning", text] for text in trace.warnings]  # first: what makes the numbers below suspect
    rows += [["Source", str(loaded.path.resolve())],
            ["Slices", f"{trace.size:,}"],
            ["Time span", format_duration(trace.span_ns)],
            ["Processes", ", ".join(processes) or "—"],
            ["Tracks / counters / flows", f"{len(trace.tracks)} / {len(trace.counters)} / {trace.flow_src.size}"],
            ["Summary tables", ", ".join(trace.tables) or "—"]]
    if trace.model_path:
        rows.append(["Model", trace.model_path])
    if loaded.counted:
        rows.append(["Op statistics", loaded.counted])
    if loaded.path.is_file():
        rows.append(["File size", f"{loaded.path.stat().st_size / 2**20:.1f} MiB"])
    rows += [[key[:1].upper() + key[1:], value] for key, value in trace.facts.items() if not key.startswith("warning")]
    return rows


def _tool(text: str, tip: str, slot, parent: QWidget) -> QToolButton:
    button = QToolButton(parent)
    button.setText(text)
    button.setToolTip(tip)
    button.clicked.connect(slot)
    return button


def _percent_box(value: float, tip: str, parent: QWidget) -> QDoubleSpinBox:
    box = QDoubleSpinBox(parent)
    box.setRange(0.0, 100.0)
    box.setDecimals(1)
    box.setSingleStep(1.0)
    box.setSuffix(" %")
    box.setValue(value)
    box.setToolTip(tip)
    box.setMinimumWidth(80)  # "100.0 %" fits
    return box
