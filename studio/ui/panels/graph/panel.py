"""The graph panel: view ONNX / OM models, find, trace, open subgraphs, overlays, compare, export.

The panel lays the widgets out, opens models and wires the parts it is composed of, each with one
job and its own state: :class:`~.views.GraphViews` (the two sides and the moves between their
graphs), :class:`~.finding.Finder`, :class:`~.overlays.OverlayLayer`, :class:`~.compare.SideBySide`,
:class:`~.actions.ModelTools` and :class:`~.pipeline_edit.PipelineEditor`. They talk by signals;
the panel's public names for their attributes are forwarded to them.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QFileDialog, QLabel, QSplitter, QVBoxLayout

from studio.core.formats import Detected
from studio.ui.panels.base import Panel, forward
from studio.ui.panels.graph import jobs
from studio.ui.panels.graph import state as st
from studio.ui.panels.graph.actions import ModelTools
from studio.ui.panels.graph.canvas import GraphCanvas
from studio.ui.panels.graph.compare import SideBySide
from studio.ui.panels.graph.details import DetailsTree
from studio.ui.panels.graph.finding import Finder
from studio.ui.panels.graph.overlays import OverlayLayer
from studio.ui.panels.graph.pipeline_edit import PipelineEditor
from studio.ui.panels.graph.side import Level, Side
from studio.ui.panels.graph.state import GraphState
from studio.ui.panels.graph.views import GraphViews
from studio.ui.panels.graph.widgets.toolbar import build_toolbar


class GraphPanel(Panel):
    """Model graph viewer (see docs/graph.md)."""

    NAME = "graph"
    TITLE = "Graph"
    AREA = Qt.DockWidgetArea.RightDockWidgetArea

    # the parts' attributes and methods, under the panel's own names (tests and the main window use them)
    left, right, active, direction = (forward("views", n) for n in ("left", "right", "active", "direction"))
    select_node, open_graph, go_back = (forward("views", n) for n in ("select_node", "open_graph", "go_back"))
    expand_all, collapse_all, collapse_group = (forward("views", n)
                                                for n in ("expand_all", "collapse_all", "collapse_group"))
    find, step_match, select_all_matches, clear_matches = (
        forward("finder", n) for n in ("find", "step_match", "select_all_matches", "clear_matches"))
    matches, match_pos, find_edit, regex_box, find_label = (
        forward("finder", n) for n in ("matches", "match_pos", "find_edit", "regex_box", "find_label"))
    overlay, overlay_model = forward("overlays", "data"), forward("overlays", "model")
    set_overlay, import_overlay = forward("overlays", "set_overlay"), forward("overlays", "import_overlay")
    close_compare = forward("side_by_side", "close")
    export, run_shapes = forward("tools", "export"), forward("tools", "run_shapes")
    set_pipeline_prop = forward("pipeline_editor", "set_pipeline_prop")
    last_converted = forward("pipeline_editor", "last_converted")

    def __init__(self, runner, parent=None, links=None):
        super().__init__(runner, parent, links)
        self.state = GraphState()  # the models opened, the selections waiting for a load
        self.details = DetailsTree(self)
        self.views = GraphViews(runner, self.details, Side(GraphCanvas(self)), Side(GraphCanvas(self)), self)
        self.right.canvas.empty_text = "Comparing: the second model is loading…"
        self.finder = Finder(runner, self.views, self)
        self.overlays = OverlayLayer(runner, self.views, self)
        self.tools = ModelTools(runner, self.views, self.overlays, self.links, self)
        self.pipeline_editor = PipelineEditor(runner, self.views, self.links, self)
        self._build()
        self.side_by_side = SideBySide(self.views, self.canvases, self)
        self._wire()

    # ------------------------------------------------------------------ widgets
    def _build(self) -> None:
        bar = build_toolbar(self)
        self.canvases = QSplitter(Qt.Orientation.Horizontal, self)
        self.canvases.addWidget(self.left.canvas)
        self.canvases.addWidget(self.right.canvas)
        self.right.canvas.hide()
        self.split = QSplitter(Qt.Orientation.Horizontal, self)
        self.split.addWidget(self.canvases)
        self.split.addWidget(self.details)
        self.split.setStretchFactor(0, 3)
        self.split.setStretchFactor(1, 1)
        self.split.setSizes([700, 320])
        self.details.setMinimumWidth(240)  # attribute names and shapes stay readable beside the canvas
        self.legend_label = QLabel(self)
        self.legend_label.setTextFormat(Qt.TextFormat.RichText)
        self.legend_label.setWordWrap(True)
        self.legend_label.setText(st.category_legend())
        self.legend_label.setContentsMargins(6, 0, 6, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(bar)
        layout.addLayout(self.finder.row)
        layout.addWidget(self.split, 1)
        layout.addWidget(self.legend_label)
        # Only while the focus is in this panel: other panels may bind the same keys.
        inside = Qt.ShortcutContext.WidgetWithChildrenShortcut
        QShortcut(QKeySequence("Ctrl+F"), self, activated=lambda: self.find_edit.setFocus(), context=inside)
        QShortcut(QKeySequence("F3"), self, activated=lambda: self.step_match(1), context=inside)
        QShortcut(QKeySequence("Shift+F3"), self, activated=lambda: self.step_match(-1), context=inside)
        for side in (self.left, self.right):  # Backspace on the canvas only: the find box needs it
            QShortcut(QKeySequence("Backspace"), side.canvas, activated=self.views.go_back,
                      context=Qt.ShortcutContext.WidgetShortcut)
        self._update_bar()

    def _wire(self) -> None:
        views = self.views
        for side in (self.left, self.right):
            side.canvas.item_clicked.connect(lambda item, s=side: views.click(s, item))
            side.canvas.item_activated.connect(lambda item, s=side: views.activate(s, item))
            side.canvas.frame_activated.connect(lambda gid, s=side: views.collapse_group(gid, s))
        views.shown.connect(self._on_shown)
        views.bar_changed.connect(self._update_bar)
        views.node_clicked.connect(self.links.node_selected)
        self.side_by_side.closed.connect(self._update_bar)
        for part in (views, self.finder, self.overlays, self.side_by_side, self.tools, self.pipeline_editor):
            part.status.connect(self.status)
        self.overlays.open_requested.connect(self.open_path)
        self.pipeline_editor.saved.connect(lambda path, node: self.open_path(path, self.left, select=node))
        self.details.open_subgraph.connect(lambda graph, title: views.open_graph(graph, title))
        self.details.stats_requested.connect(self.tools.statistics)
        self.details.node_requested.connect(lambda name: views.select_node(name))
        self.links.show_node.connect(self._on_show_node)
        self.links.overlay.connect(self.overlays.receive)
        self.links.compare_graphs.connect(self._on_compare_graphs)

    def _on_shown(self, side: Side) -> None:
        """A side's view is on screen again: its colours, the compare marks, caption and toolbar follow."""
        self.overlays.apply(side)
        self.side_by_side.apply_marks()
        self.views.update_caption(side)
        self._update_bar()

    def _update_bar(self) -> None:
        side = self.active
        self.back_button.setEnabled(len(side.stack) > 1)
        crumb = side.breadcrumb()
        if self.right.model is not None and self.right.canvas.isVisible():
            crumb = f"{self.left.breadcrumb()}   ⟷   {self.right.breadcrumb()}"
        full = side.breadcrumb(full=True)
        self.crumb.setText(crumb)
        self.legend_label.setText(st.category_legend(side.model.format if side.model else ""))
        for text, enabled in st.tools_enabled(side.model.format if side.model else None).items():
            self._bar_buttons[text].setEnabled(enabled)
        self.crumb.setToolTip(full.replace(" › ", "\n› ") + (f"\n{side.model.path}" if side.model else ""))

    # ------------------------------------------------------------------ opening
    @property
    def opened_paths(self) -> list[Path]:
        """Models opened in this panel, in order (as the shell's file-list panels report them)."""
        return list(self.state.opened)

    def open_file(self, detected: Detected) -> None:
        if detected.format.id == "node_data":  # an overlay for the model shown (or the next one opened)
            self.import_overlay(detected.path)
            return
        self.open_path(detected.path)

    def open_path(self, path: Path, side: Side | None = None, select: str | None = None):
        """Load a model into a side (the left one by default); returns the job handle."""
        side = side or self.left
        path = Path(path)
        self.state.opening(path, id(side), select)
        side.canvas.empty_text = f"Opening {path.name}…"
        side.canvas.update()
        direction = self.direction
        handle = self.runner.start(f"Opening {path.name}", lambda cancel: jobs.open_job(path, cancel, direction),
                                   key=f"graph:{id(side)}")
        handle.finished.connect(lambda result, s=side: self._on_loaded(s, result))
        handle.failed.connect(lambda exc, tb, s=side, p=path: self._on_failed(s, p))
        return handle

    def _on_loaded(self, side: Side, result) -> None:
        model, hierarchy, view = result
        self.finder.clear_matches()
        side.model = model
        side.stack = [Level(model.main, model.main.name or model.path.name, hierarchy, view.expanded, view)]
        side.selected_node = -1
        side.canvas.set_view(view)
        if side is self.left:
            self.graph_combo.clear()
            for graph in model.graphs:
                self.graph_combo.addItem(f"{graph.name} ({len(graph.nodes):,})", graph)
            for name, graph in model.functions.items():
                self.graph_combo.addItem(f"function {name} ({len(graph.nodes):,})", graph)
            self.tool_row.set_shown(self.graph_combo, self.graph_combo.count() > 1)
            self.details.show_model(model, model.main)
        self.active = side
        if side is self.left:
            self.overlays.drop_foreign(model.path)
        self.overlays.apply(side)
        self.side_by_side.apply_marks()
        self._update_bar()
        self.views.update_caption(side)
        self.status.emit(f"Graph: {model.path.name} — {len(model.main.nodes):,} nodes"
                         + (f", {len(model.warnings)} warning(s)" if model.warnings else ""))
        pending = self.state.loaded(id(side))
        if pending is not None:
            self.select_node(pending, side)

    def _on_failed(self, side: Side, path: Path) -> None:
        # Why it failed is on the notice board (the runner posts it); the canvas only stops
        # saying "Opening…" and keeps the model it showed, if any.
        side.canvas.empty_text = f"Could not open {path.name}"
        if side.model is None:
            side.canvas.set_view(None)
        side.canvas.update()

    def _on_show_node(self, model_path, node_name: str) -> None:
        # The sender brings the graph to the front when the user asked for it ("Show in graph").
        if model_path is not None and (self.left.model is None or
                                       Path(model_path).resolve() != self.left.model.path.resolve()):
            self.open_path(Path(model_path), self.left, select=node_name)
            return
        self.active = self.left
        self.select_node(node_name, self.left)

    # ------------------------------------------------------------------ tools
    def set_direction(self, direction: str):
        """Lay the graphs out top to bottom ("TB") or left to right ("LR", long chains read across a
        wide screen); the graph on screen is laid out again at its expansion. Returns the job."""
        self.direction_button.setChecked(direction == "LR")
        return self.views.set_direction(direction)

    def trace(self, downstream: bool):
        """Highlight everything up- or downstream of the selected node (a job); returns its handle."""
        side = self.active
        if side.graph is None or side.selected_node < 0:
            self.status.emit("Graph: select a node first")
            return None
        handle = self.runner.start("Tracing", lambda c: jobs.trace_job(side.graph, side.selected_node, downstream, c))
        handle.finished.connect(lambda nodes: side.canvas.highlight({side.item_of_node(i) for i in nodes}))
        return handle

    def clear_highlights(self) -> None:
        """Clear the traced highlights and the overlay on both sides."""
        for side in (self.left, self.right):
            side.canvas.highlight(None)
            side.canvas.state.overlay.clear()
            side.canvas.state.overlay_text.clear()
            side.canvas.legend = []
            side.canvas.update()
        self.overlays.data = None

    def ask_overlay(self) -> None:
        """Ask for a Model Explorer node-data JSON and colour the nodes by it."""
        path, _ = QFileDialog.getOpenFileName(self, "Import node data (Model Explorer JSON)", "", "JSON (*.json)")
        if path:
            self.import_overlay(Path(path))

    # ------------------------------------------------------------------ compare
    def compare(self, left: Path, right: Path):
        """Show two models side by side; nodes found on one side only get a coloured dashed border."""
        self.side_by_side.show()
        if self.left.model is None or self.left.model.path.resolve() != Path(left).resolve():
            self.open_path(left, self.left)
        return self.open_path(right, self.right)

    def ask_compare(self) -> None:
        """Compare…: ask for the second model (a second click ends the comparison)."""
        if self.side_by_side.showing:
            self.close_compare()
            return
        if self.left.model is None:
            self.status.emit("Graph: open a model first, then compare it with another")
            return
        path, _ = QFileDialog.getOpenFileName(self, "Compare with", str(self.left.model.path.parent),
                                              "Models (*.onnx *.om *.json);;All files (*)")
        if path:
            self.compare(self.left.model.path, Path(path))

    def _on_compare_graphs(self, left, right) -> None:
        self.links.focus.emit(self.NAME)
        self.compare(Path(left), Path(right))
