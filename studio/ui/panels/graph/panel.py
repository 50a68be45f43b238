"""The graph panel: view ONNX / OM models, find, trace, open subgraphs, overlays, compare, export."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio.errors import UserError
from studio.formats import Detected
from studio.tools.graph.categories import CATEGORY_COLOURS, CATEGORY_LABELS, PIPELINE_ROLES
from studio.tools.graph.search import Match, resolve_node
from studio.ui.panels.base import Panel
from studio.ui.panels.graph import jobs
from studio.ui.panels.graph.canvas import GraphCanvas
from studio.ui.panels.graph.details import DetailsTree
from studio.ui.panels.graph.finding import Finding
from studio.ui.panels.graph.linked import LinkedViews
from studio.ui.panels.graph.pipeline_edit import PipelineEditing
from studio.ui.panels.graph.side import Level, Side
from studio.ui.panels.graph.sizes import ask_input_sizes
from studio.ui.widgets.elided_label import ElidedLabel
from studio.ui.widgets.tool_row import ToolRow, menu_button


def _button(text: str, tip: str, handler, parent: QWidget) -> QToolButton:
    button = QToolButton(parent)
    button.setText(text)
    button.setToolTip(tip)
    button.setAutoRaise(True)
    if handler is not None:
        button.clicked.connect(handler)
    return button


class GraphPanel(Finding, LinkedViews, PipelineEditing, Panel):
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
        self.matches: list[Match] = []  # in the searched graph and every subgraph below it
        self.match_pos = -1
        self._match_base: list[Level] = []  # the levels open when the search ran
        self._match_side: Side | None = None
        self._stepping = False  # opening a match's subgraph keeps the matches
        self._pending: dict[int, str | int] = {}  # id(side) -> node name/index to select after a load
        self._opened: list[Path] = []
        self._build()
        self.links.show_node.connect(self._on_show_node)
        self.links.overlay.connect(self._on_overlay)
        self.links.compare_graphs.connect(self._on_compare_graphs)
        self._wire_pipeline_editing()

    # ------------------------------------------------------------------ widgets
    def _build(self) -> None:
        bar = self.tool_row = ToolRow(self, "graph")  # the tools that do not fit go under its "More" menu
        self.back_button = _button("◀ Back", "Return to the parent graph", self.go_back, self)
        self.graph_combo = QComboBox(self)
        self.graph_combo.setToolTip("Graphs in this model (OM sub-models, functions)")
        self.graph_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.graph_combo.setMaximumWidth(260)
        self.graph_combo.activated.connect(self._on_graph_chosen)
        self.crumb = ElidedLabel("", self, separator=" › ", keep_end=True)  # the deepest levels stay
        bar.addWidget(self.back_button)
        bar.addWidget(self.graph_combo)
        bar.addWidget(self.crumb, 1)
        self._bar_buttons: dict[str, QToolButton] = {}
        for text, tip, handler in (
                ("Fit", "Fit the graph in the view (F)", lambda: self.active.canvas.fit()),
                ("Expand", "Expand every group (lays out every node)", self.expand_all),
                ("Collapse", "Collapse to the top-level groups", self.collapse_all),
                ("▲ Up", "Highlight everything upstream of the selected node", lambda: self.trace(False)),
                ("▼ Down", "Highlight everything downstream of the selected node", lambda: self.trace(True)),
                ("Clear", "Clear highlights and the overlay", self.clear_highlights),
                ("Overlay…", "Colour nodes by a Model Explorer node-data JSON", self._on_import_overlay),
                ("Compare…", "Show another model side by side; nodes on one side only are marked",
                 self._on_compare_clicked),
                ("Convert…", "Open the model on screen in the Converter (ONNX options, or ATC for the NPU)",
                 self._on_convert_clicked),
                ("Profile", "Profile the ONNX model on screen with ONNX Runtime on this machine (seeded random "
                 "inputs, CPU) and show the timeline and per-op times in the Profiler", self._on_profile_clicked),
                ("FP16 check", "Run the ONNX model on screen in FP32 and in FP16 simulation with the same seeded "
                 "input and compare every op in the Accuracy panel (each op's pass / fail verdict comes back as an "
                 "overlay)",
                 self._on_fp16_clicked),
                ("Run shapes", "Run the ONNX model once in ONNX Runtime (random inputs, CPU) and show the "
                 "shapes it produced instead of the declared ones", self.run_shapes),
                ):
            self._bar_buttons[text] = _button(text, tip, handler, self)
            bar.addWidget(self._bar_buttons[text])
        menu = QMenu(self)
        menu.addAction("Export view…", lambda: self._on_export(False))
        menu.addAction("Export whole graph (every group expanded)…", lambda: self._on_export(True))
        export = menu_button(self, "Export ▾", "Export as SVG or PNG: the view as shown, or the whole graph", menu)
        bar.addWidget(export)
        bar.set_shown(self.graph_combo, False)  # shown for models with several graphs
        find = QHBoxLayout()
        find.setContentsMargins(4, 0, 4, 2)
        self.find_edit = QLineEdit(self)
        self.find_edit.setPlaceholderText("Find node by name, type or tensor (all words must match; \"quoted\" = exact)")
        self.find_edit.setClearButtonEnabled(True)
        self.find_edit.returnPressed.connect(self._on_find)
        self.regex_box = QCheckBox("Regex", self)
        self.find_label = QLabel("", self)
        self.find_label.setMinimumWidth(70)
        find.addWidget(self.find_edit, 1)
        find.addWidget(self.regex_box)
        find.addWidget(_button("◀", "Previous match (Shift+F3)", lambda: self.step_match(-1), self))
        find.addWidget(_button("▶", "Next match (F3)", lambda: self.step_match(1), self))
        find.addWidget(_button("All", "Highlight all matches", self.select_all_matches, self))
        find.addWidget(self.find_label)
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
        self.legend_label.setText(self._category_legend())
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

    @staticmethod
    def _category_legend(model_format: str = "") -> str:
        keys = PIPELINE_ROLES if model_format == "mindx_pipeline" else \
            ("conv", "activation", "norm", "data", "control", "custom", "other", "group")
        cells = [f'<span style="background:{CATEGORY_COLOURS[c]};">&nbsp;&nbsp;&nbsp;</span> {CATEGORY_LABELS[c]}'
                 for c in keys]
        if model_format == "mindx_pipeline":
            cells.append("- - - reference (dataSource)")
        return "<small>" + " &nbsp; ".join(cells) + "</small>"

    def _update_bar(self) -> None:
        side = self.active
        self.back_button.setEnabled(len(side.stack) > 1)
        crumb = side.breadcrumb()
        if self.right.model is not None and self.right.canvas.isVisible():
            crumb = f"{self.left.breadcrumb()}   ⟷   {self.right.breadcrumb()}"
        full = side.breadcrumb(full=True)
        self.crumb.setText(crumb)
        self.legend_label.setText(self._category_legend(side.model.format if side.model else ""))
        onnx_on_screen = side.model is not None and side.model.format == "onnx"
        for text in ("Profile", "FP16 check"):  # both run the model in ONNX Runtime
            self._bar_buttons[text].setEnabled(onnx_on_screen)
        pipeline = side.model is not None and side.model.format == "mindx_pipeline"
        for text in ("Convert…", "Run shapes"):  # a pipeline is no model to convert or run
            self._bar_buttons[text].setEnabled(not pipeline)
        self.crumb.setToolTip(full.replace(" › ", "\n› ") + (f"\n{side.model.path}" if side.model else ""))

    def _on_convert_clicked(self) -> None:
        model = self.active.model
        if model is None:
            self.status.emit("Graph: open a model first, then Convert… takes it to the Converter")
            return
        self.links.convert_model.emit(Path(model.path))

    def _onnx_on_screen(self) -> Path | None:
        model = self.active.model
        return Path(model.path) if model is not None and model.format == "onnx" else None

    def _on_profile_clicked(self) -> None:
        path = self._onnx_on_screen()
        if path is not None:  # the profiler runs it and brings itself to the front
            self.links.profile_model.emit(path)

    def _on_fp16_clicked(self) -> None:
        path = self._onnx_on_screen()
        if path is not None:  # the accuracy panel dumps, compares and sends the overlay back
            self.links.check_fp16.emit(path)

    # ------------------------------------------------------------------ opening
    @property
    def opened_paths(self) -> list[Path]:
        """Models opened in this panel, in order (as the shell's file-list panels report them)."""
        return list(self._opened)

    def open_file(self, detected: Detected) -> None:
        if detected.format.id == "node_data":  # an overlay for the model shown (or the next one opened)
            self.import_overlay(detected.path)
            return
        self.open_path(detected.path)

    def open_path(self, path: Path, side: Side | None = None, select: str | None = None):
        """Load a model into a side (the left one by default); returns the job handle."""
        side = side or self.left
        path = Path(path)
        if path not in self._opened:
            self._opened.append(path)
        if select is not None:
            self._pending[id(side)] = select
        side.canvas.empty_text = f"Opening {path.name}…"
        side.canvas.update()
        handle = self.runner.start(f"Opening {path.name}", lambda cancel: jobs.open_job(path, cancel),
                                   key=f"graph:{id(side)}")
        handle.finished.connect(lambda result, s=side: self._on_loaded(s, result))
        handle.failed.connect(lambda exc, tb, s=side, p=path: self._on_failed(s, p, exc))
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
        self._apply_overlay(side)
        self._apply_compare_marks()
        self._update_bar()
        self._update_caption(side)
        self.status.emit(f"Graph: {model.path.name} — {len(model.main.nodes):,} nodes"
                         + (f", {len(model.warnings)} warning(s)" if model.warnings else ""))
        pending = self._pending.pop(id(side), None)
        if pending is not None:
            self.select_node(pending, side)

    def _on_failed(self, side: Side, path: Path, exc) -> None:
        text = exc.format() if isinstance(exc, UserError) else str(exc)
        side.canvas.empty_text = f"Could not open {path.name}:\n{text}"
        if side.model is None:
            side.canvas.set_view(None)
        side.canvas.update()
        self.status.emit(f"Graph: could not open {path.name}")

    def _update_caption(self, side: Side) -> None:
        view = side.view
        if view is None:
            return
        groups = sum(1 for it in view.items if it.kind == "group")
        folded = len(view.graph.folded)
        side.canvas.caption = (f"{len(view.graph.nodes):,} nodes"
                               + (f" (+ {folded:,} constants drawn as weights)" if folded else "")
                               + f" · {len(view.items):,} shown"
                               + (f" · {groups} collapsed groups (double-click to expand)" if groups else ""))
        if side.only_here:
            where = "left" if side is self.left else "right"
            side.canvas.caption += f" · {side.only_here:,} only on the {where} (dashed border)"

    # ------------------------------------------------------------------ levels
    def _relayout(self, side: Side, expanded: set[int] | None, then_select: int | None = None,
                  keep_position: bool = True):
        level = side.level
        if level is None:
            return None
        handle = self.runner.start(f"Laying out {level.graph.name}",
                                   lambda cancel, lv=level: jobs.graph_job(lv.graph, lv.hierarchy, expanded, cancel),
                                   key=f"graph:{id(side)}")

        def done(result, lv=level):
            lv.hierarchy, lv.view = result
            lv.expanded = lv.view.expanded
            if side.level is not lv:
                return
            side.canvas.set_view(lv.view, keep_position=keep_position)
            self._apply_overlay(side)
            self._apply_compare_marks()
            self._update_caption(side)
            self._update_bar()
            if then_select is not None:
                self._select_index(side, then_select, center=True)
            elif side.selected_node >= 0:  # keep the selection across expand / collapse
                item = side.item_of_node(side.selected_node)
                if item >= 0 and lv.view.items[item].kind == "node":
                    side.canvas.state.selected = item
        handle.finished.connect(done)
        handle.failed.connect(lambda exc, tb: self.status.emit(f"Graph: layout failed: {exc}"))
        return handle

    def open_graph(self, graph, title: str, side: Side | None = None):
        """Open a subgraph (or function body) on top of the current one; Back returns."""
        side = side or self.active
        self.clear_matches()
        side.stack.append(Level(graph, title))
        side.selected_node = -1
        self.details.show_empty()
        self._update_bar()
        return self._relayout(side, None, keep_position=False)

    def go_back(self) -> None:
        """Return to the graph that holds the opened subgraph."""
        side = self.active
        if len(side.stack) <= 1:
            return
        self.clear_matches()
        side.stack.pop()
        if side.view is None:  # a level opened on the way to a match or a node: laid out on first show
            side.selected_node = -1
            self._update_bar()
            self._relayout(side, None, keep_position=False)
            return
        self._show_level(side)

    def _show_level(self, side: Side) -> None:
        """Show the top of ``side``'s stack again (its view is kept, no layout needed)."""
        side.selected_node = -1
        side.canvas.set_view(side.view)
        self._apply_overlay(side)
        self._apply_compare_marks()
        self._update_caption(side)
        self._update_bar()
        if side.model is not None and side.graph is not None:
            self.details.show_model(side.model, side.graph)

    def _on_graph_chosen(self, index: int) -> None:
        graph = self.graph_combo.itemData(index)
        if graph is None or self.left.model is None:
            return
        self.active = self.left
        self.clear_matches()
        del self.left.stack[1:]
        if graph is self.left.model.main:
            self._show_level(self.left)
        else:
            self.open_graph(graph, graph.name, self.left)

    def expand_all(self) -> None:
        level = self.active.level
        if level and level.hierarchy:
            self._relayout(self.active, {g.id for g in level.hierarchy.groups if g.parent != -2}, keep_position=False)

    def collapse_all(self) -> None:
        if self.active.level:
            self._relayout(self.active, {0}, keep_position=False)

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

    def collapse_group(self, gid: int, side: Side | None = None):
        """Collapse one expanded group (and everything inside it) back into a box."""
        side = side or self.active
        level = side.level
        if level is None or level.hierarchy is None or gid not in (level.expanded or set()):
            return None
        inside, stack = set(), [gid]
        while stack:
            g = stack.pop()
            inside.add(g)
            stack.extend(level.hierarchy.groups[g].groups)
        return self._relayout(side, set(level.expanded) - inside)

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
    def _on_export(self, whole: bool) -> None:
        if self.active.view is None:
            self.status.emit("Graph: open a model first")
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export graph", f"{self.active.graph.name}.svg",
                                              "SVG (*.svg);;PNG (*.png)")
        if path:
            self.export(Path(path), whole=whole)

    def export(self, path: Path, whole: bool = False):
        """Export to SVG or PNG (by extension): the view as shown, or with ``whole`` every group
        expanded (laid out in the job, the view on screen is left as it is). Returns the job handle."""
        level = self.active.level
        if level is None or level.view is None:
            return None
        path = Path(path)
        colours = {i: c.name() for i, c in self.active.canvas.state.overlay.items()}
        overlay = self.overlay
        if whole:
            make = lambda c: jobs.export_whole_job(level.graph, level.hierarchy, overlay, path, c)  # noqa: E731
        else:
            make = lambda c: jobs.export_job(level.view, path, colours, c)  # noqa: E731
        handle = self.runner.start(f"Exporting {path.name}", make)
        handle.finished.connect(lambda p: self.status.emit(f"Graph: exported {p}"))
        handle.failed.connect(lambda exc, tb: self.status.emit(
            f"Graph: export failed: {exc.what if isinstance(exc, UserError) else exc}"))
        return handle

    def run_shapes(self, sizes: dict[str, tuple[int, ...]] | None = None):
        """Run the model once (job) and trust the shapes it recorded over the declared ones.

        Dynamic input dims need sizes: ``sizes`` ({input: dims}), else the user is asked (never 1 silently).
        """
        side = self.left
        if side.model is None or side.model.format != "onnx":
            self.status.emit("Graph: shapes from a run need an ONNX model (OM models run on the NPU only)")
            return None
        model = side.model
        if sizes is None:
            sizes = ask_input_sizes(self, model.main)
            if sizes is None:
                self.status.emit("Graph: Run shapes cancelled (dynamic inputs need sizes)")
                return None
        handle = self.runner.start(f"Running {model.path.name} for shapes",
                                   lambda c: jobs.record_shapes_job(model, c, sizes))

        def done(changed: int) -> None:
            side.canvas.update()
            if side.selected_node >= 0 and side.graph is not None:
                self.details.show_node(side.graph, side.selected_node)
            else:
                self.details.show_model(model, side.graph or model.main)
            self.status.emit(f"Graph: {changed:,} shapes taken from a run of {model.path.name}")
        handle.finished.connect(done)
        handle.failed.connect(lambda exc, tb: self.status.emit(
            f"Graph: {exc.what if isinstance(exc, UserError) else exc}"))
        return handle

    def _on_stats_requested(self, tensor, row) -> None:
        handle = self.runner.start(f"Statistics of {tensor.name}", lambda c: jobs.stats_job(tensor, c))
        handle.finished.connect(lambda stats: self.details.show_statistics(row, stats))

