"""The Profiler panel's "Profile…", "Benchmark…" and "Open…" actions: ask where and what, start the
job, hand what it made to the panel (:attr:`RunActions.made`)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog

from studio.ops.profile import Request as ProfileRequest
from studio.ui.panels.profiler import local
from studio.ui.panels.profiler.loading import load_job


class RunActions(QObject):
    """Profile or benchmark an ONNX model here or on an SSH host; the result opens like any profile.

    Signals:
        info(str, str): the panel's info line and its tooltip ("" keeps the tooltip)
        status(str): a line for the status bar
        made(Loaded): a profile or benchmark made here, to show (its folder counts as routed)
        show_summary(): bring the Summary tab to the front (a benchmark's numbers are there)
    """

    info = Signal(str, str)
    status = Signal(str)
    made = Signal(object)
    show_summary = Signal()

    def __init__(self, panel, parent: QObject | None = None):
        """``panel``: the Profiler panel (its runner, state, links, host context, workspace folder,
        and the parent of the dialogs)."""
        super().__init__(parent)
        self.panel, self.runner, self.state, self.links = panel, panel.runner, panel.state, panel.links
        self.shape_dialog = self.run_on_dialog = self.bench_dialog = None  # the open dialogs, if any

    def open_profile_file(self) -> None:
        start = str(self.panel.workspace_folder) if self.panel.workspace_folder is not None else ""
        name, _ = QFileDialog.getOpenFileName(self.panel, "Open a profile", start,
                                              "Profiles (*.json *.csv *.db *.gz);;All files (*)")
        if name:
            self.panel.request_open.emit(Path(name))

    def open_profile_folder(self) -> None:
        start = str(self.panel.workspace_folder) if self.panel.workspace_folder is not None else ""
        name = QFileDialog.getExistingDirectory(self.panel, "Open a PROF_* or ASCEND_PROFILER_OUTPUT folder", start)
        if name:
            self.panel.request_open.emit(Path(name))

    def pick_model(self) -> None:
        start = str(self.panel.workspace_folder) if self.panel.workspace_folder is not None else ""
        name, _ = QFileDialog.getOpenFileName(self.panel, "Profile an ONNX model", start, "ONNX models (*.onnx)")
        if name:
            self.ask_where(Path(name))

    def ask_where(self, model: Path) -> None:
        """"Run on": this computer or an SSH host; with no host added, straight here."""
        hosts = sorted(self.panel.host_context.store.hosts)
        if not hosts:
            self.profile_model(model)
            return
        from studio.ui.widgets.run_on import RunOnDialog

        dialog = self.run_on_dialog = RunOnDialog(model.name, hosts, self.panel)
        dialog.accepted.connect(lambda: self.profile_model(model, host=dialog.host()))
        dialog.open()

    def profile_model(self, model, shapes: dict[str, list[int]] | None = None, host: str | None = None) -> None:
        """Profile an ONNX model locally, or with Studio's engine on ``host`` (a job), then show the
        result like any opened profile.

        Without ``shapes``, a model with dynamic input dims first asks for their sizes
        (:class:`ShapeDialog`); the run then uses exactly what was typed."""
        model = Path(model)
        out = local.profile_folder(model, self.panel.workspace_folder)
        iterations, warmup, seed = self.state.iterations, self.state.warmup, self.state.seed
        where = f" on {host}" if host else ""
        self._say(f"Profiling {model.name}{where} ({iterations} runs after {warmup} warm-ups)…")
        self.links.focus.emit(self.panel.NAME)
        request = ProfileRequest(model, out, shapes=dict(shapes or {}), seed=seed, iterations=iterations, warmup=warmup)
        context = self.panel.host_context if host else None
        job = lambda cancel: local.profile_and_load_job(request, host, context, shapes is None,  # noqa: E731
                                                        load_job, cancel)
        self.state.run_on = host
        handle = self.runner.start(f"Profiling {model.name}{where}", job,
                                   key=f"host:{host}" if host else f"profiler-run:{model}")
        handle.finished.connect(self._on_profiled)
        # Why it failed is the notice board's to show (the runner posts it); the line only stops
        # saying "Profiling…".
        handle.failed.connect(lambda exc, _tb: self._say(f"Could not profile {model.name}"))
        handle.cancelled.connect(lambda: self._say(f"Profiling {model.name} cancelled"))

    def _ask_shapes(self, need: local.NeedShapes) -> None:
        from studio.ui.widgets.shape_dialog import ShapeDialog

        self._say(f"{need.model.name} has dynamic input dims: give their sizes to profile it")
        dialog = self.shape_dialog = ShapeDialog(need.model.name, need.specs, self.panel)
        host = self.state.run_on
        dialog.accepted.connect(lambda: self.profile_model(need.model, dialog.shapes(), host))
        dialog.rejected.connect(lambda: self._say(f"Profiling {need.model.name} cancelled: no input sizes"))
        dialog.open()  # window-modal, and the GUI thread goes on

    def _on_profiled(self, outcome) -> None:
        if isinstance(outcome, local.NeedShapes):
            self._ask_shapes(outcome)
            return
        result, loaded = outcome
        self.state.last_run = result
        self.made.emit(loaded)
        line = local.latency_line(result)
        self.info.emit(local.latency_brief(result), f"{line}\n{loaded.path}")
        self.status.emit(f"Profiler: {line}")

    def _say(self, text: str) -> None:
        self.info.emit(text, "")

    # ------------------------------------------------------------------ benchmark an .onnx
    def ask_bench(self, model: Path | None = None) -> None:
        """The "Benchmark model…" dialog (model, where, loops); the run starts when it is accepted."""
        from studio.ui.panels.profiler.bench_dialog import BenchDialog

        last_run = self.state.last_run
        if model is None and last_run is not None and str(last_run.model).lower().endswith(".onnx"):
            model = last_run.model  # the model profiled last is the likely one to time
        hosts = sorted(self.panel.host_context.store.hosts)
        dialog = self.bench_dialog = BenchDialog(hosts, model, self.panel.workspace_folder, self.panel)
        dialog.accepted.connect(lambda: self.bench_model(dialog.request()))
        dialog.open()

    def bench_model(self, request) -> None:
        """Benchmark ``request.model`` here or on ``request.host`` (a job); the folder opens like a profile."""
        from studio.ui.panels.profiler.bench_job import bench_and_load_job, bench_folder

        model = Path(request.model)
        out = bench_folder(model, self.panel.workspace_folder)
        where = f" on {request.host}" if request.host else ""
        self._say(f"Benchmarking {model.name}{where} ({request.loop} loops after {request.warmup} "
                          "warm-ups)…")
        self.links.focus.emit(self.panel.NAME)
        context = self.panel.host_context if request.host else None
        handle = self.runner.start(f"Benchmark {model.name}{where}",
                                   lambda cancel: bench_and_load_job(context, request, out, load_job, cancel),
                                   key=f"host:{request.host}" if request.host else f"profiler-bench:{model}")
        handle.finished.connect(lambda outcome: self._on_benched(request, outcome))
        handle.failed.connect(lambda exc, _tb: self._say(f"Could not benchmark {model.name}"))  # why: the board
        handle.cancelled.connect(lambda: self._say(f"Benchmark of {model.name} cancelled"))

    def _on_benched(self, request, outcome) -> None:
        from studio.ui.panels.profiler.bench_job import bench_line

        if isinstance(outcome, local.NeedShapes):
            from studio.ui.widgets.shape_dialog import ShapeDialog

            self._say(f"{outcome.model.name} has dynamic input dims: give their sizes to benchmark it")
            dialog = self.shape_dialog = ShapeDialog(outcome.model.name, outcome.specs, self.panel, action="benchmark")

            def sized() -> None:
                request.shapes = dialog.shapes()
                self.bench_model(request)

            dialog.accepted.connect(sized)
            dialog.rejected.connect(lambda: self._say(
                f"Benchmark of {outcome.model.name} cancelled: no input sizes"))
            dialog.open()
            return
        bench, loaded = outcome
        self.state.last_bench = bench
        self.made.emit(loaded)
        line = bench_line(bench)
        self.info.emit(line, f"{line}\n{loaded.path}")
        self.status.emit(f"Profiler: {line}")
        self.show_summary.emit()  # the numbers; the timeline only lays the loops end to end
