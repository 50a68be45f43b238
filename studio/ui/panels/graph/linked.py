"""The graph panel's side of cross-panel requests: overlays, side-by-side compare, show-node.

A mixin of :class:`~studio.ui.panels.graph.panel.GraphPanel` (kept apart so each file has one job).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QFileDialog

from studio.tools.graph.overlay import NO_DATA, VERDICT_COLOURS, OverlayData
from studio.ui.panels.graph import jobs
from studio.ui.panels.graph.render import ONLY_LEFT, ONLY_RIGHT
from studio.ui.panels.graph.side import Side


class LinkedViews:
    """Overlays, compare and show-node for GraphPanel (uses its sides, runner, links and status)."""

    # ------------------------------------------------------------------ overlays
    def _on_overlay(self, overlay) -> None:
        # Quietly: the panel that sent it stays in front and offers "Show in graph".
        data = OverlayData(overlay.title, dict(overlay.values), list(overlay.thresholds),
                           overlay.higher_is_better, overlay.unit, verdicts=dict(overlay.verdicts),
                           labels=dict(overlay.labels))
        if overlay.model is not None and (self.left.model is None or
                                          Path(overlay.model).resolve() != self.left.model.path.resolve()):
            self.open_path(Path(overlay.model))
            # a model still loading from an earlier request must not drop this overlay when it lands
            self._overlay_opening = Path(overlay.model).resolve()
        self.set_overlay(data, Path(overlay.model) if overlay.model is not None else None)

    def set_overlay(self, data: OverlayData | None, model: Path | None = None) -> None:
        """Colour nodes by ``data`` (None removes the overlay). ``model``: the model the values belong
        to (default: the one on screen; none on screen: the next one opened)."""
        self.overlay = data
        if model is None and self.left.model is not None:
            model = self.left.model.path
        self.overlay_model = Path(model).resolve() if data is not None and model is not None else None
        for side in (self.left, self.right):
            self._apply_overlay(side)

    def _drop_foreign_overlay(self, opened: Path) -> None:
        """Another model on the left: an overlay of a model's op names would grey every box of it
        (a profile's time share over a MindX pipeline), so it goes, and the status says so."""
        if self.overlay is None or self.overlay_model is None or Path(opened).resolve() == self.overlay_model:
            self._overlay_opening = None
            return
        if getattr(self, "_overlay_opening", None) == self.overlay_model:
            return  # an earlier open landed; the overlay's own model is queued behind it
        title, of = self.overlay.title, self.overlay_model.name
        self.set_overlay(None)
        self.status.emit(f"Graph: overlay {title} of {of} cleared ({Path(opened).name} is another model)")

    def _apply_overlay(self, side: Side) -> None:
        """Colour every box: measured ones by verdict or value, the others grey (no data)."""
        canvas = side.canvas
        canvas.state.overlay.clear()
        canvas.state.overlay_text.clear()
        canvas.legend, canvas.legend_title = [], ""
        data, view = self.overlay, side.view
        if data is None or view is None or not data.values:
            canvas.update()
            return
        per_item: dict[int, tuple[float, str | None, str]] = {}  # item -> (value, verdict, label)
        nodes = view.graph.nodes
        for node, value in data.for_graph(view.graph).items():
            item = int(view.item_of_node[node])
            name = nodes[node].name
            entry = (value, data.verdicts.get(name), data.labels.get(name, f"{value:.4g}{data.unit}"))
            per_item[item] = _worse(per_item.get(item), entry, data.higher_is_better)
        grey = QColor(NO_DATA)  # one object for every unmeasured box
        for item, it in enumerate(view.items):
            if item not in per_item:
                if it.kind in ("node", "group"):
                    canvas.state.overlay[item] = grey
                continue
            value, verdict, label = per_item[item]
            colour = VERDICT_COLOURS.get(verdict) if verdict else data.colour_of(it.name, value)
            if colour:
                canvas.state.overlay[item] = QColor(colour)
            canvas.state.overlay_text[item] = label
        canvas.legend = data.legend()
        canvas.legend_title = f"{data.title} ({len(per_item):,} shown)"
        canvas.update()

    def _on_import_overlay(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import node data (Model Explorer JSON)", "", "JSON (*.json)")
        if path:
            self.import_overlay(Path(path))

    def import_overlay(self, path: Path):
        """Read a Model Explorer node-data JSON (as a job) and colour the nodes it names."""
        graph = self.active.graph
        name = graph.name if graph else None
        handle = self.runner.start(f"Reading overlay {Path(path).name}",
                                   lambda cancel: jobs.overlay_job(Path(path), name, cancel))

        def done(data):
            self.set_overlay(data)
            self.status.emit(f"Graph: overlay {data.title} ({len(data.values):,} values)")
        handle.finished.connect(done)  # a failure is the runner's to report (the notice board)
        return handle

    # ------------------------------------------------------------------ compare
    def _on_compare_graphs(self, left, right) -> None:
        self.links.focus.emit(self.NAME)
        self.compare(Path(left), Path(right))

    def compare(self, left: Path, right: Path):
        """Show two models side by side; nodes found on one side only get a coloured dashed border."""
        self.right.canvas.show()
        self.canvases.setSizes([1, 1])
        if self.left.model is None or self.left.model.path.resolve() != Path(left).resolve():
            self.open_path(left, self.left)
        return self.open_path(right, self.right)

    def _on_compare_clicked(self) -> None:
        if self.right.canvas.isVisible():  # a second click ends the comparison
            self.close_compare()
            return
        if self.left.model is None:
            self.status.emit("Graph: open a model first, then compare it with another")
            return
        path, _ = QFileDialog.getOpenFileName(self, "Compare with", str(self.left.model.path.parent),
                                              "Models (*.onnx *.om *.json);;All files (*)")
        if path:
            self.compare(self.left.model.path, Path(path))

    def close_compare(self) -> None:
        """Back to one model: hide the right side and drop the marks."""
        self.right.canvas.hide()
        self.right.model, self.right.stack = None, []
        self.right.canvas.set_view(None)
        self.active = self.left
        self._apply_compare_marks()
        self._update_caption(self.left)
        self.left.canvas.update()
        self._update_bar()

    def _apply_compare_marks(self) -> None:
        for side in (self.left, self.right):
            side.canvas.state.marks.clear()
            side.only_here = 0
        if self.left.graph is None or self.right.graph is None or not self.right.canvas.isVisible():
            return
        left_names = set(self.left.graph.node_index())
        right_names = set(self.right.graph.node_index())
        for side, own, other, colour in ((self.left, left_names, right_names, ONLY_LEFT),
                                         (self.right, right_names, left_names, ONLY_RIGHT)):
            view = side.view
            if view is None:
                continue
            only = [i for i, node in enumerate(view.graph.nodes) if node.name not in other]
            for item in set(view.item_of_node[only].tolist()) if only else ():
                side.canvas.state.marks[int(item)] = colour
            side.only_here = len(only)
            self._update_caption(side)
            side.canvas.update()
        self.status.emit(f"Graph compare: {len(left_names - right_names):,} nodes only left, "
                         f"{len(right_names - left_names):,} only right")

    # ------------------------------------------------------------------ links
    def _on_show_node(self, model_path, node_name: str) -> None:
        # The sender brings the graph to the front when the user asked for it ("Show in graph").
        if model_path is not None and (self.left.model is None or
                                       Path(model_path).resolve() != self.left.model.path.resolve()):
            self.open_path(Path(model_path), self.left, select=node_name)
            return
        self.active = self.left
        self.select_node(node_name, self.left)


def _worse(old: tuple | None, new: tuple, higher_is_better: bool) -> tuple:
    """The entry a collapsed group shows: the worst verdict, else the worst value (NaN counts as worst)."""
    if old is None:
        return new
    order = list(VERDICT_COLOURS)  # worst first
    rank = lambda v: order.index(v) if v in order else len(order)  # noqa: E731
    if rank(old[1]) != rank(new[1]):
        return old if rank(old[1]) < rank(new[1]) else new
    if old[0] != old[0] or new[0] != new[0]:  # NaN: nothing could be measured there
        return old if old[0] != old[0] else new
    worse = min if higher_is_better else max
    return old if worse(old[0], new[0]) == old[0] else new
