"""The graph panel's overlay: values per node (a profile's times, accuracy verdicts, a Model
Explorer node-data file) coloured onto the boxes of both sides.

:class:`OverlayLayer` owns the overlay and the model it belongs to; it paints the sides of its
named collaborator, the panel's :class:`~.views.GraphViews`.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QColor

from studio.tools.graph.overlay import NO_DATA, VERDICT_COLOURS, OverlayData
from studio.ui.panels.graph import jobs
from studio.ui.panels.graph.side import Side


class OverlayLayer(QObject):
    """The overlay shown on both sides.

    Signals:
        open_requested(Path): the overlay's model is not on screen: open it on the left.
        status(str): a short message for the status bar.
    """

    open_requested = Signal(object)
    status = Signal(str)

    def __init__(self, runner, views, parent: QObject | None = None):
        super().__init__(parent)
        self.runner = runner
        self.views = views  # GraphViews: the sides painted
        self.data: OverlayData | None = None
        self.model: Path | None = None  # the model the overlay's values belong to
        self._opening: Path | None = None  # the overlay's model, asked for while another was loading

    def receive(self, overlay) -> None:
        """An overlay sent by another panel (links.Overlay); its model is opened when another is shown."""
        # Quietly: the panel that sent it stays in front and offers "Show in graph".
        data = OverlayData(overlay.title, dict(overlay.values), list(overlay.thresholds),
                           overlay.higher_is_better, overlay.unit, verdicts=dict(overlay.verdicts),
                           labels=dict(overlay.labels))
        left = self.views.left.model
        if overlay.model is not None and (left is None or Path(overlay.model).resolve() != left.path.resolve()):
            self.open_requested.emit(Path(overlay.model))
            # a model still loading from an earlier request must not drop this overlay when it lands
            self._opening = Path(overlay.model).resolve()
        self.set_overlay(data, Path(overlay.model) if overlay.model is not None else None)

    def set_overlay(self, data: OverlayData | None, model: Path | None = None) -> None:
        """Colour nodes by ``data`` (None removes the overlay). ``model``: the model the values belong
        to (default: the one on screen; none on screen: the next one opened)."""
        self.data = data
        if model is None and self.views.left.model is not None:
            model = self.views.left.model.path
        self.model = Path(model).resolve() if data is not None and model is not None else None
        for side in (self.views.left, self.views.right):
            self.apply(side)

    def drop_foreign(self, opened: Path) -> None:
        """Another model on the left: an overlay of a model's op names would grey every box of it
        (a profile's time share over a MindX pipeline), so it goes, and the status says so."""
        if self.data is None or self.model is None or Path(opened).resolve() == self.model:
            self._opening = None
            return
        if self._opening == self.model:
            return  # an earlier open landed; the overlay's own model is queued behind it
        title, of = self.data.title, self.model.name
        self.set_overlay(None)
        self.status.emit(f"Graph: overlay {title} of {of} cleared ({Path(opened).name} is another model)")

    def apply(self, side: Side) -> None:
        """Colour every box: measured ones by verdict or value, the others grey (no data)."""
        canvas = side.canvas
        canvas.state.overlay.clear()
        canvas.state.overlay_text.clear()
        canvas.legend, canvas.legend_title = [], ""
        data, view = self.data, side.view
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

    def import_overlay(self, path: Path):
        """Read a Model Explorer node-data JSON (as a job) and colour the nodes it names."""
        graph = self.views.active.graph
        name = graph.name if graph else None
        handle = self.runner.start(f"Reading overlay {Path(path).name}",
                                   lambda cancel: jobs.overlay_job(Path(path), name, cancel))

        def done(data):
            self.set_overlay(data)
            self.status.emit(f"Graph: overlay {data.title} ({len(data.values):,} values)")
        handle.finished.connect(done)  # a failure is the runner's to report (the notice board)
        return handle


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
