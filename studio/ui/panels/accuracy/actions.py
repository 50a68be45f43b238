"""The Accuracy panel's actions that start comparisons: two dump folders (through a mapping too),
"compare against original", the FP16 check (here or on a host), an .onnx dumped here and on a host,
and the question for dynamic input sizes they share.

:class:`Comparisons` starts them through its named collaborator, the panel's
:class:`~.result_jobs.ResultJobs`, and hands each result on by a signal."""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QWidget

from studio.ui.panels.accuracy.result_jobs import FOCUS
from studio.ui.panels.accuracy.state import plan_inputs


class Comparisons(QObject):
    """Compare dumps, or dump models (here or on an SSH host) and compare them.

    Signals:
        compared(object, object): a comparison (CompareResult) and the dump folders it came from.
        fp16_checked(object, object): the same for an FP16 check (its verdicts go to the graph).
        note(str, str): what is under way or went wrong, for the sources line while no result is
            shown (rich text, its tooltip; '' keeps the tooltip).
        open_requested(Path): a file for the main window to open (and route here).
        status(str): a short message for the status bar.
    """

    compared = Signal(object, object)
    fp16_checked = Signal(object, object)
    note = Signal(str, str)
    open_requested = Signal(object)
    status = Signal(str)

    def __init__(self, jobs, state, links, panel_context, parent: QWidget):
        super().__init__(parent)
        self.jobs = jobs  # ResultJobs: starts each job
        self.state = state  # AccuracyState: the comparison shown and its dumps
        self.links = links
        self.context = panel_context  # () -> (the window's HostContext, the open workspace's folder)
        self.widget = parent  # the dialogs' parent
        self.input_dialog = None  # the last "sizes of dynamic inputs" dialog
        self.host_compare_dialog = self.run_on_dialog = None  # the last "where" dialogs

    @property
    def workspace_folder(self) -> Path | None:
        return self.context()[1]

    @property
    def host_context(self):
        return self.context()[0]

    def compare(self, golden: Path, target: Path, mapping: dict | None = None) -> None:
        """Compare two dumps as a job and show the result."""
        from studio.tools.accuracy.compare import compare_dumps

        pair = (Path(golden), Path(target))
        self.jobs.start(f"Comparing {pair[0].name} with {pair[1].name}",
                    lambda cancel: compare_dumps(pair[0], pair[1], mapping=mapping, cancel=cancel),
                    lambda result: self.compared.emit(result, pair))

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

        self.jobs.start(f"Comparing {target.name} with {golden.name} through {Path(mapping_file).name}", job,
                    lambda result: self.compared.emit(result, (golden, target)))

    def pick_csv(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self.widget, "Open a comparison CSV", str(self.workspace_folder or ""),
                                              "Comparison CSV (*.csv);;All files (*)")
        if name:
            self.open_requested.emit(Path(name))

    def pick_dumps(self) -> None:
        golden = QFileDialog.getExistingDirectory(self.widget, "Golden dump folder (e.g. the FP32 run)")
        if not golden:
            return
        target = QFileDialog.getExistingDirectory(self.widget, "Target dump folder (FP16, NPU, converted model)",
                                                  str(Path(golden).parent))
        if target:
            self.compare(Path(golden), Path(target))

    def pick_mapping(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self.widget, "Fused-op mapping", "", "JSON (*.json)")
        if name:
            self.compare_with_mapping(Path(name))

    def compare_models(self, golden_model, target_model, shapes=None, files=None) -> None:
        """The converter's "compare against original": dump both with the same inputs, compare.

        Dynamic dims of the original take the converted model's fixed sizes when it has them;
        any left open are asked for (a dim is never guessed).
        """
        golden_model, target_model = Path(golden_model), Path(target_model)
        if shapes is None and files is None:
            self._ask_inputs(golden_model, lambda s, f: self.compare_models(golden_model, target_model, s, f),
                             sizes_from=target_model)
            return
        from studio.ops.compare_models import pair_folder
        from studio.ui.panels.accuracy.on_engine import compare_models_job

        folder = pair_folder(golden_model, target_model)
        self.links.focus.emit(FOCUS)
        self.jobs.start(f"Comparing {target_model.name} with {golden_model.name}",
                        lambda cancel: compare_models_job(golden_model, target_model, folder, cancel, shapes, files),
                        lambda result: self.compared.emit(result, (folder / "golden", folder / "target")))

    def pick_here_and_host(self) -> None:
        start = str(self.workspace_folder) if self.workspace_folder is not None else ""
        name, _ = QFileDialog.getOpenFileName(self.widget, "Compare an ONNX model here and on a host", start,
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
                self.note.emit("No SSH host is set up: add one in the Hosts panel (or with `studio ssh add "
                               "NAME --host ADDRESS`), then compare again.", "")
                return
            from studio.ui.panels.accuracy.host_compare_dialog import HostCompareDialog

            dialog = self.host_compare_dialog = HostCompareDialog(model.name, hosts, self.widget)
            dialog.accepted.connect(lambda: self.compare_here_and_on_host(model, dialog.host(), dialog.providers()))
            dialog.open()
            return
        if shapes is None and files is None:
            self.links.focus.emit(FOCUS)
            self._ask_inputs(model, lambda s, f: self.compare_here_and_on_host(model, host, providers, s, f))
            return
        from studio.ui.panels.accuracy.on_engine import cross_check_job, here_and_host_folders

        here, there = here_and_host_folders(model, host, self.workspace_folder)
        context, workspace = self.host_context, self.workspace_folder
        self.jobs.start(f"Comparing {model.name} here and on {host}",
                    lambda cancel: cross_check_job(context, host, model, workspace, cancel, providers, files, shapes),
                    lambda result: self.compared.emit(result, (here, there)))

    def check_fp16_where(self, model) -> None:
        """The graph's "FP16 check": asks where it runs (this computer or a host) when hosts exist."""
        model = Path(model)
        hosts = sorted(self.host_context.store.hosts)
        if not hosts:
            self.check_fp16(model)
            return
        from studio.ui.widgets.run_on import RunOnDialog

        dialog = self.run_on_dialog = RunOnDialog(model.name, hosts, self.widget, verb="Check FP16 of",
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
            self.links.focus.emit(FOCUS)
            self._ask_inputs(model, lambda s, f: self.check_fp16(model, s, f, host),
                             on_failed=lambda exc: self._on_fp16_ended(model, "failed", to_status=False))
            return
        golden, target = fp16_folders(model, self.workspace_folder)
        self.links.focus.emit(FOCUS)
        if self.state.result is None:  # a comparison on screen stays until the new one replaces it
            self.note.emit(f"FP16 check of <b>{html.escape(model.name)}</b>: dumping FP32 and FP16 simulation…",
                           str(model))

        def job(cancel):
            from studio.ui.panels.accuracy.on_engine import fp16_check_job

            return (yield from fp16_check_job(context, host, model, workspace, cancel, files, shapes))

        context, workspace = (self.host_context if host else None), self.workspace_folder
        where = f" on {host}" if host else ""
        handle = self.jobs.start(f"FP16 check of {model.name}{where}", job,
                             lambda result: self.fp16_checked.emit(result, (golden, target)))
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

            dialog = InputShapesDialog(model, left, self.widget)
            self.input_dialog = dialog

            def accepted() -> None:
                more, files = dialog.values()
                then({**shapes, **more}, files)

            dialog.accepted.connect(accepted)
            dialog.rejected.connect(lambda: self.status.emit(f"{model.name}: not run (no input sizes given)"))
            dialog.open()

        handle = self.jobs.start(f"Reading the inputs of {model.name}", job, on_read)
        if on_failed is not None:
            handle.failed.connect(lambda exc, _tb: on_failed(exc))

    def _on_fp16_ended(self, model: Path, what: str, to_status: bool = True) -> None:
        """A failed or cancelled check: say so where the "dumping…" line was (a shown result stays).
        A failure's why is on the notice board, which also fills the status line: ``to_status``
        False then, so the status line does not say it twice."""
        if self.state.result is None:
            self.note.emit(f"FP16 check of <b>{html.escape(model.name)}</b> {html.escape(what)}", "")
        if to_status:
            self.status.emit(f"FP16 check of {model.name} {what}")
