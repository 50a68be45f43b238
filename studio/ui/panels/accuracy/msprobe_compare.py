"""Two msprobe dumps opened one after the other are compared; an msprobe comparison CSV is shown
at once. The module graph goes to the graph panel, and a node clicked there shows its rows.

:class:`MsprobeCompare` owns the dumps waiting for a partner and the comparison shown; it fills its
named collaborator, the panel's :class:`~.msprobe_view.MsprobeView`.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from studio.core.serial import to_json
from studio.ui.panels.accuracy.result_jobs import FOCUS


class MsprobeCompare(QObject):
    """Queue msprobe dumps, compare them (a job), show the result.

    Signals:
        shown(): a comparison is shown (the panel shows the msprobe view instead of the table).
        waiting(str): the golden dump waits for a target (rich text for the sources line).
        status(str): a short message for the status bar.
    """

    shown = Signal()
    waiting = Signal(str)
    status = Signal(str)

    def __init__(self, runner, view, links, parent: QObject | None = None):
        super().__init__(parent)
        self.runner = runner
        self.view = view  # MsprobeView: module tree and arguments
        self.links = links
        self.pending: list[Path] = []
        self.result = None
        view.graph_requested.connect(self.show_module_graph)
        links.node_selected.connect(self._on_graph_node)

    def add(self, path) -> None:
        """Queue an msprobe dump as golden; the second one is the target and starts the comparison.
        A comparison CSV (msprobe's or Studio's) is shown at once."""
        path = Path(path)
        if path.is_file() and path.suffix.lower() == ".csv":
            self.open_result(path)
            return
        self.pending = [p for p in self.pending if p != path] + [path]
        if len(self.pending) < 2:
            self.waiting.emit(f"Golden: <b>{html.escape(path.parent.name + '/' + path.name)}</b> (msprobe dump)"
                              " — open a second msprobe dump.json as the target to compare")
            return
        golden, target = self.pending[-2:]
        self.pending = []
        self.compare(golden, target)

    def open_result(self, path):
        """Read an msprobe comparison CSV (a job) and show it; returns the job handle."""
        from studio.tools.accuracy.msprobe_result import read_msprobe_result

        return self._run(f"Reading {path.name}", lambda: read_msprobe_result(path))

    def compare(self, golden, target):
        """Compare two msprobe dumps (a job) and show them; returns the job handle."""
        from studio.tools.accuracy.msprobe_compare import compare_msprobe

        return self._run("Comparing msprobe dumps", lambda: compare_msprobe(golden, target))

    def _run(self, title: str, work):
        def job(cancel):
            yield from ()
            return work()

        handle = self.runner.start(title, job)
        handle.finished.connect(self._on_compared)  # a failure: the runner posts it on the notice board
        return handle

    def show_module_graph(self) -> None:
        """Both dumps' module trees side by side in the graph panel (the target on the left, where the
        verdict names are its own), coloured by the worst verdict under each node."""
        from studio.ops.msprobe_graph import THRESHOLDS, TITLE, construct_path, verdict_overlay
        from studio.ui.links import Overlay

        result = self.result
        if result is None:
            return
        target, golden = construct_path(result.target), construct_path(result.golden)
        data = verdict_overlay(result)
        self.links.overlay.emit(Overlay(TITLE, data.values, list(THRESHOLDS), model=target, labels=data.labels))
        self.links.compare_graphs.emit(target, golden)
        self.links.focus.emit("graph")

    def _on_graph_node(self, model_path, name: str) -> None:
        """A node clicked in the graph panel: a node of this comparison's module graph shows its rows here."""
        from studio.ops.msprobe_graph import construct_path

        result = self.result
        if result is None or model_path is None or result.golden.path == result.target.path:
            return
        graphs = {construct_path(d).resolve() for d in (result.target, result.golden)}
        if Path(model_path).resolve() not in graphs:
            return
        self.view.select_node(name)
        self.status.emit(f"Accuracy: msprobe rows of {name}")
        self.links.focus.emit(FOCUS)

    def _on_compared(self, result) -> None:
        self.result = result
        self.view.show_result(result)
        self.shown.emit()
        data = to_json(result)
        self.status.emit(f"Accuracy: msprobe {data['pass']} pass, {data['warning']} warning, {data['error']} error")
