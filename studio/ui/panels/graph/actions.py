"""The Graph panel's actions on the model on screen: hand it to the Converter, the Profiler or the
FP16 check, export it, run it for shapes, compute a tensor's statistics.

:class:`ModelTools` acts on the sides of its named collaborator, the panel's
:class:`~.views.GraphViews`, and reaches the other panels through ``links``.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QWidget

from studio.ui.panels.graph import jobs
from studio.ui.panels.graph.sizes import ask_input_sizes


class ModelTools(QObject):
    """What the toolbar's model tools do (each long step a job).

    Signals:
        status(str): a short message for the status bar.
    """

    status = Signal(str)

    def __init__(self, runner, views, overlays, links, parent: QWidget):
        super().__init__(parent)
        self.runner = runner
        self.views = views  # GraphViews: the model on screen
        self.overlays = overlays  # OverlayLayer: its colours go into an export
        self.links = links
        self.widget = parent  # the dialogs' parent

    def convert(self) -> None:
        """Take the model on screen to the Converter (a repro: the model it came from)."""
        model = self.views.active.model
        if model is None:
            self.status.emit("Graph: open a model first, then Convert… takes it to the Converter")
            return
        from studio.core.repro_source import repro_original

        original = repro_original(Path(model.path), model.metadata)
        if original is not None:  # a repro is for looking at: the fix is converting the model it came from
            # the converter, brought to the front, says so: a status of the graph's would be replaced at once
            self.links.convert_original.emit(original, Path(model.path))
            return
        self.links.convert_model.emit(Path(model.path))

    def _onnx_on_screen(self) -> Path | None:
        model = self.views.active.model
        return Path(model.path) if model is not None and model.format == "onnx" else None

    def profile(self) -> None:
        path = self._onnx_on_screen()
        if path is not None:  # the profiler runs it and brings itself to the front
            self.links.profile_model.emit(path)

    def check_fp16(self) -> None:
        path = self._onnx_on_screen()
        if path is not None:  # the accuracy panel dumps, compares and sends the overlay back
            self.links.check_fp16.emit(path)

    def ask_export(self, whole: bool) -> None:
        """Ask where to export the graph on screen, then export it."""
        if self.views.active.view is None:
            self.status.emit("Graph: open a model first")
            return
        path, _ = QFileDialog.getSaveFileName(self.widget, "Export graph", f"{self.views.active.graph.name}.svg",
                                              "SVG (*.svg);;PNG (*.png)")
        if path:
            self.export(Path(path), whole=whole)

    def export(self, path: Path, whole: bool = False):
        """Export to SVG or PNG (by extension): the view as shown, or with ``whole`` every group
        expanded (laid out in the job, the view on screen is left as it is). Returns the job handle."""
        level = self.views.active.level
        if level is None or level.view is None:
            return None
        path = Path(path)
        colours = {i: c.name() for i, c in self.views.active.canvas.state.overlay.items()}
        overlay = self.overlays.data
        if whole:
            make = lambda c: jobs.export_whole_job(level.graph, level.hierarchy, overlay, path, c)  # noqa: E731
        else:
            make = lambda c: jobs.export_job(level.view, path, colours, c)  # noqa: E731
        handle = self.runner.start(f"Exporting {path.name}", make)
        handle.finished.connect(lambda p: self.status.emit(f"Graph: exported {p}"))
        return handle

    def run_shapes(self, sizes: dict[str, tuple[int, ...]] | None = None):
        """Run the model once (job) and trust the shapes it recorded over the declared ones.

        Dynamic input dims need sizes: ``sizes`` ({input: dims}), else the user is asked (never 1 silently).
        """
        side = self.views.left
        if side.model is None or side.model.format != "onnx":
            self.status.emit("Graph: shapes from a run need an ONNX model (OM models run on the NPU only)")
            return None
        model = side.model
        if sizes is None:
            sizes = ask_input_sizes(self.widget, model.main)
            if sizes is None:
                self.status.emit("Graph: Run shapes cancelled (dynamic inputs need sizes)")
                return None
        handle = self.runner.start(f"Running {model.path.name} for shapes",
                                   lambda c: jobs.record_shapes_job(model, c, sizes))
        details = self.views.details

        def done(changed: int) -> None:
            side.canvas.update()
            if side.selected_node >= 0 and side.graph is not None:
                details.show_node(side.graph, side.selected_node)
            else:
                details.show_model(model, side.graph or model.main)
            self.status.emit(f"Graph: {changed:,} shapes taken from a run of {model.path.name}")
        handle.finished.connect(done)  # a failure is the runner's to report (the notice board)
        return handle

    def statistics(self, tensor, row) -> None:
        """A tensor's statistics (a job) into its row of the details pane."""
        handle = self.runner.start(f"Statistics of {tensor.name}", lambda c: jobs.stats_job(tensor, c))
        handle.finished.connect(lambda stats: self.views.details.show_statistics(row, stats))
