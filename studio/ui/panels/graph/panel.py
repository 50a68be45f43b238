"""The graph panel: view ONNX / OM models, find, trace, open subgraphs, overlays, compare, export."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout

from studio.core.formats import Detected
from studio.tools.graph.search import Match, resolve_node
from studio.ui.panels.base import Panel
from studio.ui.panels.graph import jobs
from studio.ui.panels.graph import state as st
from studio.ui.panels.graph.actions import GraphActions
from studio.ui.panels.graph.canvas import GraphCanvas
from studio.ui.panels.graph.details import DetailsTree
from studio.ui.panels.graph.finding import Finding
from studio.ui.panels.graph.linked import LinkedViews
from studio.ui.panels.graph.navigation import Navigation
from studio.ui.panels.graph.pipeline_edit import PipelineEditing
from studio.ui.panels.graph.side import Level, Side
from studio.ui.panels.graph.state import GraphState
from studio.ui.panels.graph.widgets.toolbar import build_find_row, build_toolbar


class GraphPanel(Navigation, GraphActions, Finding, LinkedViews, PipelineEditing, Panel):
    """Model graph viewer (see docs/graph.md)."""

    NAME = "graph"
    TITLE = "Graph"
    AREA = Qt.DockWidgetArea.RightDockWidgetArea

    def __init__(self, runner, parent=None, links=None):
        super().__init__(runner, parent, links)
        self.left = Side(GraphCanvas(self))
        self.right = Side(GraphCanvas(self))
        self.right.canvas.empty_text = "Comparing: the second model is loading…"
        self.active = self.left
        self.overlay = None  # OverlayData shown on both sides
        self.overlay_model: Path | None = None  # the model the overlay's values belong to
        self.matches: list[Match] = []  # in the searched graph and every subgraph below it
        self.match_pos = -1
        self._match_base: list[Level] = []  # the levels open when the search ran
        self._match_side: Side | None = None
        self._stepping = False  # opening a match's subgraph keeps the matches
        self.state = GraphState()  # the models opened, the selections waiting for a load
        self.direction = "TB"  # layout direction: TB (inputs at the top) or LR (inputs on the left)
        self._build()
        self.links.show_node.connect(self._on_show_node)
        self.links.overlay.connect(self._on_overlay)
        self.links.compare_graphs.connect(self._on_compare_graphs)
        self._wire_pipeline_editing()

    # ------------------------------------------------------------------ widgets
    def _build(self) -> None:
        bar, find = build_toolbar(self), build_find_row(self)
        self.details = DetailsTree(self)
        self.details.open_subgraph.connect(self._on_open_subgraph_from_details)
        self.details.stats_requested.connect(self._on_stats_requested)
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
        layout.addLayout(find)
        layout.addWidget(self.split, 1)
        layout.addWidget(self.legend_label)
        for side in (self.left, self.right):
            side.canvas.item_clicked.connect(lambda item, s=side: self._on_item_clicked(s, item))
            side.canvas.item_activated.connect(lambda item, s=side: self._on_item_activated(s, item))
            side.canvas.frame_activated.connect(lambda gid, s=side: self.collapse_group(gid, s))
        # Only while the focus is in this panel: other panels may bind the same keys.
        inside = Qt.ShortcutContext.WidgetWithChildrenShortcut
        QShortcut(QKeySequence("Ctrl+F"), self, activated=lambda: self.find_edit.setFocus(), context=inside)
        QShortcut(QKeySequence("F3"), self, activated=lambda: self.step_match(1), context=inside)
        QShortcut(QKeySequence("Shift+F3"), self, activated=lambda: self.step_match(-1), context=inside)
        for side in (self.left, self.right):  # Backspace on the canvas only: the find box needs it
            QShortcut(QKeySequence("Backspace"), side.canvas, activated=self.go_back,
                      context=Qt.ShortcutContext.WidgetShortcut)
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
        self.clear_matches()
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
            self._drop_foreign_overlay(model.path)
        self._apply_overlay(side)
        self._apply_compare_marks()
        self._update_bar()
        self._update_caption(side)
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

    def _update_caption(self, side: Side) -> None:
        view = side.view
        if view is None:
            return
        side.canvas.caption = st.caption(view, side.only_here, "left" if side is self.left else "right")

    # ------------------------------------------------------------------ levels
    # ------------------------------------------------------------------ selection
    def _on_item_clicked(self, side: Side, item: int) -> None:
        self.active = side
        self._update_bar()
        view = side.view
        if view is None:
            return
        side.canvas.state.selected = item
        side.canvas.update()
        if item < 0:
            side.selected_node = -1
            if side.model:
                self.details.show_model(side.model, view.graph)
            return
        it = view.items[item]
        if it.kind == "node":
            side.selected_node = it.index
            self.details.show_node(view.graph, it.index)
            self._sync_other_side(side, view.graph.nodes[it.index].name)
            self.links.node_selected.emit(side.model.path if side.model else None, view.graph.nodes[it.index].name)
        elif it.kind == "group":
            members = np.nonzero(view.item_of_node == item)[0].tolist()
            self.details.show_group(view.graph, it.name, members)
        else:
            self.details.show_terminal(view.graph, it.kind, it.name)

    def _on_item_activated(self, side: Side, item: int) -> None:
        view = side.view
        it = view.items[item]
        level = side.level
        if it.kind == "group":
            expanded = set(level.expanded or {0}) | {it.index}
            first = int(np.nonzero(view.item_of_node == item)[0][0])
            self._relayout(side, expanded, then_select=first)
        elif it.kind == "node":
            node = view.graph.nodes[it.index]
            if node.subgraphs:
                slot, graph = next(iter(node.subgraphs.items()))
                self.open_graph(graph, f"{node.name} › {slot}", side)

    def _on_open_subgraph_from_details(self, graph, title: str) -> None:
        self.open_graph(graph, title)

    def select_node(self, node: str | int, side: Side | None = None) -> bool:
        """Select a node (by name, output tensor name or index), expanding groups to reveal it."""
        side = side or self.active
        graph = side.graph
        if graph is None:
            return False
        index = node if isinstance(node, int) else resolve_node(graph, node)
        if index is None:
            # not in the opened graph: look through subgraphs and other graphs of the model
            for top in side.model.graphs if side.model else []:
                for sub in top.walk():
                    found = resolve_node(sub, node) if isinstance(node, str) else None
                    if found is not None and sub is not graph:
                        self._open_trail(side, self._trail_to(side, top, sub), found)
                        return True
            self.status.emit(f"Graph: no node named {node!r} in {graph.name}")
            return False
        self._select_index(side, index, center=True)
        return True

    def _select_index(self, side: Side, index: int, center: bool) -> None:
        level = side.level
        item = side.item_of_node(index)
        if item < 0:
            return
        if side.view.items[item].kind == "group" and level.hierarchy is not None:
            expanded = set(level.expanded or {0}) | set(level.hierarchy.ancestors(index))
            self._relayout(side, expanded, then_select=index)
            return
        side.selected_node = index
        side.canvas.state.selected = item
        if center:
            side.canvas.center_on(item)
        side.canvas.update()
        if side is self.active or side is self.left:
            self.details.show_node(side.graph, index)

    def _sync_other_side(self, side: Side, name: str) -> None:
        other = self.right if side is self.left else self.left
        if other.model is None or other.graph is None:
            return
        index = other.graph.node_index().get(name)
        if index is not None:
            item = other.item_of_node(index)
            if item >= 0 and other.view.items[item].kind == "node":
                other.selected_node = index
                other.canvas.state.selected = item
                other.canvas.center_on(item, min_scale=other.canvas.scale)

    # ------------------------------------------------------------------ trace
    def trace(self, downstream: bool):
        side = self.active
        if side.graph is None or side.selected_node < 0:
            self.status.emit("Graph: select a node first")
            return None
        handle = self.runner.start("Tracing", lambda c: jobs.trace_job(side.graph, side.selected_node, downstream, c))
        handle.finished.connect(lambda nodes: side.canvas.highlight({side.item_of_node(i) for i in nodes}))
        return handle

    def clear_highlights(self) -> None:
        for side in (self.left, self.right):
            side.canvas.highlight(None)
            side.canvas.state.overlay.clear()
            side.canvas.state.overlay_text.clear()
            side.canvas.legend = []
            side.canvas.update()
        self.overlay = None

    # ------------------------------------------------------------------ export and stats
