"""The Accuracy panel's actions that start comparisons: two dump folders (through a mapping too),
"compare against original", the FP16 check (here or on a host), an .onnx dumped here and on a host,
and the question for dynamic input sizes they share (a mixin of
:class:`~studio.ui.panels.accuracy.panel.AccuracyPanel`)."""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from studio.ui.panels.accuracy.state import plan_inputs


class ComparingActions:
    """Compare dumps, or dump models (here or on an SSH host) and compare them; the result shows in
    the panel."""

    def compare(self, golden: Path, target: Path, mapping: dict | None = None) -> None:
        """Compare two dumps as a job and show the result."""
        from studio.tools.accuracy.compare import compare_dumps

        pair = (Path(golden), Path(target))
        self._start(f"Comparing {pair[0].name} with {pair[1].name}",
                    lambda cancel: compare_dumps(pair[0], pair[1], mapping=mapping, cancel=cancel),
                    lambda result: self._on_compared(result, pair))

    def compare_with_mapping(self, mapping_file: Path) -> None:
        """Compare the shown dumps again through a mapping file (read in the job)."""
        if self.state.last_pair is None:
            return
        from studio.tools.accuracy.compare import compare_dumps
        from studio.tools.accuracy.matching import load_mapping

        golden, target = self.state.last_pair

        def job(cancel):
            mapping = load_mapping(mapping_file)
            return (yield from compare_dumps(golden, target, mapping=mapping, cancel=cancel))

        self._start(f"Comparing {target.name} with {golden.name} through {Path(mapping_file).name}", job,
                    lambda result: self._on_compared(result, (golden, target)))

    def _on_compared(self, result, pair: tuple[Path, Path]) -> None:
        self.set_result(result, pair)

    def _on_pick_csv(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Open a comparison CSV", str(self.workspace_folder or ""),
                                              "Comparison CSV (*.csv);;All files (*)")
        if name:
            self.request_open.emit(Path(name))

    def _on_pick_dumps(self) -> None:
        golden = QFileDialog.getExistingDirectory(self, "Golden dump folder (e.g. the FP32 run)")
        if not golden:
            return
        target = QFileDialog.getExistingDirectory(self, "Target dump folder (FP16, NPU, converted model)",
                                                  str(Path(golden).parent))
        if target:
            self.compare(Path(golden), Path(target))

    def _on_pick_mapping(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Fused-op mapping", "", "JSON (*.json)")
        if name:
            self.compare_with_mapping(Path(name))

    def _on_compare_models(self, golden_model, target_model, shapes=None, files=None) -> None:
        """The converter's "compare against original": dump both with the same inputs, compare.

        Dynamic dims of the original take the converted model's fixed sizes when it has them;
        any left open are asked for (a dim is never guessed).
        """
        golden_model, target_model = Path(golden_model), Path(target_model)
        if shapes is None and files is None:
            self._ask_inputs(golden_model, lambda s, f: self._on_compare_models(golden_model, target_model, s, f),
                             sizes_from=target_model)
            return
        from studio.ops.compare_models import pair_folder
        from studio.ui.panels.accuracy.on_engine import compare_models_job

        folder = pair_folder(golden_model, target_model)
        self.links.focus.emit(self.NAME)
        self._start(f"Comparing {target_model.name} with {golden_model.name}",
                    lambda cancel: compare_models_job(golden_model, target_model, folder, cancel, shapes, files),
                    lambda result: self._on_compared(result, (folder / "golden", folder / "target")))

    def _on_pick_here_and_host(self) -> None:
        start = str(self.workspace_folder) if self.workspace_folder is not None else ""
        name, _ = QFileDialog.getOpenFileName(self, "Compare an ONNX model here and on a host", start,
                                              "ONNX models (*.onnx)")
        if name:
            self.compare_here_and_on_host(Path(name))

    def compare_here_and_on_host(self, model, host: str | None = None, providers: list[str] | None = None,
                                 shapes=None, files=None) -> None:
        """Dump ``model`` here and with Studio's engine on ``host``, compare (asks for the host, and
        for dynamic input sizes, first)."""
        model = Path(model)
        if host is None:
            hosts = sorted(self.host_context.store.hosts)
            if not hosts:
                self.status.emit("Accuracy: add a host first (Hosts panel, or `studio ssh add`)")
                self.sources.setText("No SSH host is set up: add one in the Hosts panel (or with `studio ssh add "
                                     "NAME --host ADDRESS`), then compare again.")
                return
            from studio.ui.panels.accuracy.host_compare_dialog import HostCompareDialog

            dialog = self.host_compare_dialog = HostCompareDialog(model.name, hosts, self)
            dialog.accepted.connect(lambda: self.compare_here_and_on_host(model, dialog.host(), dialog.providers()))
            dialog.open()
            return
        if shapes is None and files is None:
            self.links.focus.emit(self.NAME)
            self._ask_inputs(model, lambda s, f: self.compare_here_and_on_host(model, host, providers, s, f))
            return
        from studio.ui.panels.accuracy.on_engine import cross_check_job, here_and_host_folders

        here, there = here_and_host_folders(model, host, self.workspace_folder)
        context, workspace = self.host_context, self.workspace_folder
        self._start(f"Comparing {model.name} here and on {host}",
                    lambda cancel: cross_check_job(context, host, model, workspace, cancel, providers, files, shapes),
                    lambda result: self._on_compared(result, (here, there)))

    def check_fp16_where(self, model) -> None:
        """The graph's "FP16 check": asks where it runs (this computer or a host) when hosts exist."""
        model = Path(model)
        hosts = sorted(self.host_context.store.hosts)
        if not hosts:
            self.check_fp16(model)
            return
        from studio.ui.widgets.run_on import RunOnDialog

        dialog = self.run_on_dialog = RunOnDialog(model.name, hosts, self, verb="Check FP16 of",
                                                  what="each dump comes back here", ok_text="Check")
        dialog.accepted.connect(lambda: self.check_fp16(model, host=dialog.host()))
        dialog.open()

    def check_fp16(self, model, shapes=None, files=None, host: str | None = None) -> None:
        """Dump ``model`` in FP32 and FP16 simulation, compare, show; the verdict overlay goes to the graph.

        Inputs with dynamic dims are asked for first (``shapes`` / ``files`` skip the question).
        With ``host``, both dumps are made by Studio's engine on that SSH host and compared here.
        """
        from studio.tools.accuracy.fp16_check import fp16_folders

        model = Path(model)
        if shapes is None and files is None:
            self.links.focus.emit(self.NAME)
            self._ask_inputs(model, lambda s, f: self.check_fp16(model, s, f, host),
                             on_failed=lambda exc: self._on_fp16_ended(model, "failed", to_status=False))
            return
        golden, target = fp16_folders(model, self.workspace_folder)
        self.links.focus.emit(self.NAME)
        if self.state.result is None:  # a comparison on screen stays until the new one replaces it
            self.sources.setText(f"FP16 check of <b>{html.escape(model.name)}</b>: dumping FP32 and FP16 "
                                 "simulation…")
            self.sources.setToolTip(str(model))

        def job(cancel):
            from studio.ui.panels.accuracy.on_engine import fp16_check_job

            return (yield from fp16_check_job(context, host, model, workspace, cancel, files, shapes))

        context, workspace = (self.host_context if host else None), self.workspace_folder
        where = f" on {host}" if host else ""
        handle = self._start(f"FP16 check of {model.name}{where}", job,
                             lambda result: self._on_fp16_checked(result, (golden, target)))
        handle.failed.connect(lambda exc, _tb: self._on_fp16_ended(model, "failed", to_status=False))
        handle.cancelled.connect(lambda: self._on_fp16_ended(model, "cancelled"))

    def _ask_inputs(self, model: Path, then, sizes_from: Path | None = None, on_failed=None) -> None:
        """Read the model's dynamic inputs (a job); ask for their sizes when there are any, then ``then``."""
        from studio.tools.accuracy.local_dump import inputs_to_ask, static_shapes

        def job(cancel):
            yield from ()
            asked = inputs_to_ask(model)
            known = static_shapes(sizes_from) if (asked and sizes_from is not None) else {}
            return asked, known

        def on_read(found) -> None:
            shapes, left = plan_inputs(*found)
            if not left:
                if shapes:
                    self.status.emit("Input sizes taken from the converted model: "
                                     + "; ".join(f"{n} {v}" for n, v in shapes.items()))
                then(shapes, {})
                return
            from studio.ui.panels.accuracy.input_dialog import InputShapesDialog

            dialog = InputShapesDialog(model, left, self)
            self.input_dialog = dialog

            def accepted() -> None:
                more, files = dialog.values()
                then({**shapes, **more}, files)

            dialog.accepted.connect(accepted)
            dialog.rejected.connect(lambda: self.status.emit(f"{model.name}: not run (no input sizes given)"))
            dialog.open()

        handle = self._start(f"Reading the inputs of {model.name}", job, on_read)
        if on_failed is not None:
            handle.failed.connect(lambda exc, _tb: on_failed(exc))

    def _on_fp16_ended(self, model: Path, what: str, to_status: bool = True) -> None:
        """A failed or cancelled check: say so where the "dumping…" line was (a shown result stays).
        A failure's why is on the notice board, which also fills the status line: ``to_status``
        False then, so the status line does not say it twice."""
        if self.state.result is None:
            self.sources.setText(f"FP16 check of <b>{html.escape(model.name)}</b> {html.escape(what)}")
        if to_status:
            self.status.emit(f"FP16 check of {model.name} {what}")

    def _on_fp16_checked(self, result, pair: tuple[Path, Path]) -> None:
        self.forget_fp32_set()  # a set found for the last check is not this one's
        self.set_result(result, pair)
        self.emit_overlay()
        self.links.focus.emit(self.NAME)
