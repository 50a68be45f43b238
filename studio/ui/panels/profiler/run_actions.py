"""The Profiler panel's "Profile…" and "Benchmark…" actions: ask where and what, start the job,
show what it made (a mixin of :class:`~studio.ui.panels.profiler.panel.ProfilerPanel`)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from studio.ops.profile import Request as ProfileRequest
from studio.ui.panels.profiler import local
from studio.ui.panels.profiler.state import Loaded, load_job


class RunActions:
    """Profile or benchmark an ONNX model here or on an SSH host; the result opens like any profile."""

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

    def profile_model(self, model, shapes: dict[str, list[int]] | None = None, host: str | None = None) -> None:
        """Profile an ONNX model locally, or with Studio's engine on ``host`` (a job), then show the
        result like any opened profile.

        Without ``shapes``, a model with dynamic input dims first asks for their sizes
        (:class:`ShapeDialog`); the run then uses exactly what was typed."""
        model = Path(model)
        out = local.profile_folder(model, self.workspace_folder)
        iterations, warmup, seed = self.state.iterations, self.state.warmup, self.state.seed
        where = f" on {host}" if host else ""
        self.info.setText(f"Profiling {model.name}{where} ({iterations} runs after {warmup} warm-ups)…")
        self.links.focus.emit(self.NAME)
        request = ProfileRequest(model, out, shapes=dict(shapes or {}), seed=seed, iterations=iterations, warmup=warmup)
        context = self.host_context if host else None
        job = lambda cancel: local.profile_and_load_job(request, host, context, shapes is None,  # noqa: E731
                                                        load_job, cancel)
        self.state.run_on = host
        handle = self.runner.start(f"Profiling {model.name}{where}", job,
                                   key=f"host:{host}" if host else f"profiler-run:{model}")
        handle.finished.connect(self._on_profiled)
        # Why it failed is the notice board's to show (the runner posts it); the line only stops
        # saying "Profiling…".
        handle.failed.connect(lambda exc, _tb: self.info.setText(f"Could not profile {model.name}"))
        handle.cancelled.connect(lambda: self.info.setText(f"Profiling {model.name} cancelled"))

    def _ask_shapes(self, need: local.NeedShapes) -> None:
        from studio.ui.widgets.shape_dialog import ShapeDialog

        self.info.setText(f"{need.model.name} has dynamic input dims: give their sizes to profile it")
        dialog = self.shape_dialog = ShapeDialog(need.model.name, need.specs, self)
        host = self.state.run_on
        dialog.accepted.connect(lambda: self.profile_model(need.model, dialog.shapes(), host))
        dialog.rejected.connect(lambda: self.info.setText(f"Profiling {need.model.name} cancelled: no input sizes"))
        dialog.open()  # window-modal, and the GUI thread goes on

    def _on_profiled(self, outcome) -> None:
        if isinstance(outcome, local.NeedShapes):
            self._ask_shapes(outcome)
            return
        result, loaded = outcome
        self.state.last_run = result
        self._show_made(loaded)
        line = local.latency_line(result)
        self.info.setText(local.latency_brief(result))
        self.info.setToolTip(f"{line}\n{loaded.path}")
        self.status.emit(f"Profiler: {line}")

    def _show_made(self, loaded: Loaded) -> None:
        """Show a profile or benchmark made here; its folder counts as routed (not opened twice)."""
        self.state.route(loaded.path)
        self._on_loaded(loaded)

    # ------------------------------------------------------------------ benchmark an .onnx
    def ask_bench(self, model: Path | None = None) -> None:
        """The "Benchmark model…" dialog (model, where, loops); the run starts when it is accepted."""
        from studio.ui.panels.profiler.bench_dialog import BenchDialog

        last_run = self.state.last_run
        if model is None and last_run is not None and str(last_run.model).lower().endswith(".onnx"):
            model = last_run.model  # the model profiled last is the likely one to time
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
        handle.failed.connect(lambda exc, _tb: self.info.setText(f"Could not benchmark {model.name}"))  # why: the board
        handle.cancelled.connect(lambda: self.info.setText(f"Benchmark of {model.name} cancelled"))

    def _on_benched(self, request, outcome) -> None:
        from studio.ui.panels.profiler.bench_job import bench_line

        if isinstance(outcome, local.NeedShapes):
            from studio.ui.widgets.shape_dialog import ShapeDialog

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
        self.state.last_bench = bench
        self._show_made(loaded)
        line = bench_line(bench)
        self.info.setText(line)
        self.info.setToolTip(f"{line}\n{loaded.path}")
        self.status.emit(f"Profiler: {line}")
        self.tabs.setCurrentWidget(self.summary)  # the numbers; the timeline only lays the loops end to end
