"""The accuracy panel's next steps after a failing FP16 comparison: reduce it, find what to keep
in FP32, and apply that set.

All run on the model and the input the comparison's golden dump was made from (its manifest
names them), as jobs with progress and cancel. The repro opens in the graph panel; the FP32 set
is shown with the command line that applies it, and *Apply* converts the original model with it
(:mod:`studio.ops.fp16_apply`) and shows the build compared with the original.

:class:`Fp16Steps` owns the "FP16 ▾" menu, the *Apply* button and the set found last; it reads the
comparison on screen from the panel's Qt-free state and reports by signals.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QActionGroup
from PySide6.QtWidgets import QMenu, QPushButton, QToolButton, QWidget

from studio.core.errors import UserError


class Fp16Steps(QObject):
    """The "FP16 ▾" menu, its jobs and the *Apply* button.

    Signals:
        applied(object, object): the build compared with the original (a CompareResult, the dump pair).
        report(str): a line (rich text) for the findings.
        load_requested(Path): a model made here, for the graph panel (quietly).
        apply_ready(bool): whether a set to apply was found (the *Apply* button shows).
        status(str): a short message for the status bar.
    """

    applied = Signal(object, object)
    report = Signal(str)
    load_requested = Signal(object)
    apply_ready = Signal(bool)
    status = Signal(str)

    def __init__(self, runner, state, links, workspace, parent: QWidget):
        super().__init__(parent)
        self.runner = runner
        self.state = state  # AccuracyState: the comparison on screen and its dumps
        self.links = links
        self.workspace = workspace  # () -> the open workspace's folder, or None
        self.button = self._build(parent)

    def _build(self, parent: QWidget) -> QToolButton:
        button = QToolButton(parent)
        button.setText("FP16 ▾")
        button.setToolTip("After a failing FP16 comparison: a minimal repro of the first op that goes wrong, or "
                          "the fewest ops to keep in FP32")
        button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(button)
        self.reduce_action = menu.addAction("Reduce to a repro…", self.reduce_failure)
        self.precision_action = menu.addAction("Find FP32 set…", self.find_fp32_set)
        self.apply_action = menu.addAction("Apply the FP32 set (convert the original)", self.apply_fp32_set)
        self.apply_action.setEnabled(False)
        # The step after a found set, where the user reads it (under the findings), not in a menu.
        self.apply_button = QPushButton("Apply FP32 set", parent)
        self.apply_button.setToolTip("Convert the original model to FP16 keeping the found ops in FP32 (the "
                                     "Converter's engine), then compare the build with the original op by op")
        self.apply_button.clicked.connect(lambda: self.apply_fp32_set())
        self._found_set = None  # (original model, kept ops, input arrays) of the latest found set
        menu.addSection("Check against")  # the target both searches judge on (an OM on a host: the CLI's --target om)
        targets = QActionGroup(menu)
        self.fp16_sim_action = menu.addAction("FP16 simulation (every op rounded through FP16)")
        self.fp16_onnx_action = menu.addAction("Converted FP16 ONNX (studio convert --output-type FP16, dumped)")
        for action in (self.fp16_sim_action, self.fp16_onnx_action):
            action.setCheckable(True)
            targets.addAction(action)
        self.fp16_sim_action.setChecked(True)
        button.setMenu(menu)
        button.setStyleSheet("QToolButton::menu-indicator { image: none; width: 0px; }")  # "▾" says it
        return button

    def _fp16_source(self) -> tuple[Path, dict]:
        """The model and input arrays the golden dump of the comparison on screen was made from."""
        import numpy as np

        from studio.tools.accuracy.dumpset import load_dump

        pair = self.state.last_pair
        if self.state.result is None or pair is None:
            raise UserError("No comparison on screen", None, "Run an FP16 check (Graph > FP16 check) first.")
        golden = load_dump(pair[0])
        model = Path(golden.model) if golden.model else None
        if model is None or not model.is_file():
            raise UserError("The golden dump does not name a model file that exists here", pair[0],
                            "Reduce works on comparisons made by an FP16 check of an .onnx on this computer.")
        inputs = {}
        for name, info in (golden.info.get("inputs") or {}).items():
            file = golden.root / str(info.get("file", ""))
            if file.is_file():
                inputs[name] = np.load(file)
        return model, inputs

    def _fp16_runner(self):
        """The target the menu names (None: FP16 simulation, the engines' default)."""
        if not self.fp16_onnx_action.isChecked():
            return None
        from studio.ops.fp16_target import Fp16OnnxRunner

        return Fp16OnnxRunner()

    def _fp16_out(self, model: Path, what: str) -> Path:
        base = self.workspace() or model.parent
        return Path(base) / "accuracy" / f"{model.stem}_{what}"

    def _search_setup(self, what: str) -> tuple[Path, dict, Path, object] | None:
        """The model, inputs, output folder and target of a search on the comparison on screen, or
        None (the status says why)."""
        try:
            model, inputs = self._fp16_source()
        except UserError as exc:
            self.status.emit(f"Accuracy: {exc.what}")
            return None
        return model, inputs, self._fp16_out(model, what), self._fp16_runner()

    def reduce_failure(self):
        """Reduce the model of the comparison on screen to a repro (a job); returns its handle."""
        from studio.tools.accuracy.reduce import reduce_fp16

        setup = self._search_setup("repro")
        if setup is None:
            return None
        model, inputs, out, target = setup
        handle = self.runner.start(f"Reducing {model.name}", lambda cancel: reduce_fp16(model, out, inputs,
                                                                                         cancel=cancel, runner=target))
        self._fp16_job = ("Reduce", model)  # a failure is the runner's to report (the notice board)
        handle.finished.connect(self._on_reduced)
        return handle

    def _on_reduced(self, result) -> None:
        self.report.emit(f"<b>Repro</b>: {len(result.ops)} of {result.model_ops:,} ops "
                          f"({html.escape(', '.join(result.ops))}) fed at {html.escape(', '.join(result.inputs))}, "
                          f"{result.target_runs} target runs ({html.escape(result.target)}); "
                          + "; ".join(html.escape(n) for n in result.notes)
                          + f"<br>written to {html.escape(str(result.folder))}")
        self.load_requested.emit(result.folder / "model.onnx")  # the repro into the graph panel, quietly

    def find_fp32_set(self):
        """Search the fewest ops to keep in FP32 (a job); returns its handle."""
        from studio.tools.accuracy.precision import find_fp32_set, write_result

        setup = self._search_setup("fp32_set")
        if setup is None:
            return None
        model, inputs, out, target = setup
        self._fp16_inputs = inputs

        def search(cancel):
            result = yield from find_fp32_set(model, out, inputs, cancel=cancel, runner=target)
            if target is not None and target.target == "fp16":  # searched with the fusion passes off
                from studio.ops.fp16_target import check_default_build
                from studio.tools.accuracy.metrics import Thresholds

                result.default_build = yield from check_default_build(
                    model, out / "model_fp16_keep.onnx", result.keep, inputs, 0, Thresholds())
                write_result(out, result, model)  # precision.json with the check
            return result

        handle = self.runner.start(f"Finding the FP32 set of {model.name}", search)
        self._fp16_job = ("FP32 set", model)
        handle.finished.connect(self._on_fp32_set)  # bound methods: no call on a panel already gone
        return handle

    def _on_fp32_set(self, result) -> None:
        model = self._fp16_job[1]
        keep = ",".join(result.keep)
        self._found_set = (model, list(result.keep), self._fp16_inputs)
        self.apply_action.setEnabled(bool(result.keep))
        self.apply_ready.emit(bool(result.keep))
        self.report.emit(f"<b>Keep in FP32</b>: {html.escape(keep) or 'nothing'} "
                          f"({'minimal' if result.minimal else 'not shown minimal'}; {result.checks} checks on "
                          f"{html.escape(result.target)}). "
                          f"Apply: <code>studio convert {html.escape(model.name)} -o {html.escape(model.stem)}"
                          f"_fp16.onnx --output-type FP16 --keep-fp32 {html.escape(keep)}</code>; for ATC: "
                          f"keep_dtype.cfg, modify_mixlist.json in {html.escape(str(result.folder))}")
        check = getattr(result, "default_build", None)
        if check is not None:
            from studio.ops.fp16_target import describe_default_build

            line = html.escape(describe_default_build(check))
            self.report.emit(line if check["verified"] else f"<b>{line}</b>")

    def forget_fp32_set(self) -> None:
        """No set to apply any more (a new check, or the panel cleared)."""
        self._found_set = None
        self.apply_action.setEnabled(False)
        self.apply_ready.emit(False)

    def apply_fp32_set(self):
        """Convert the original model with the found set and compare the build with it (a job);
        returns its handle (None when no set was found)."""
        from studio.ops.fp16_apply import apply_fp32_set, apply_output

        if self._found_set is None:
            self.status.emit("Accuracy: find the FP32 set first (FP16 ▾ › Find FP32 set)")
            return None
        model, keep, inputs = self._found_set
        output = apply_output(model, self.workspace())
        folder = self._fp16_out(model, "fp32_set") / "verify"
        self.apply_button.setEnabled(False)
        handle = self.runner.start(f"Applying the FP32 set to {model.name}",
                                   lambda cancel: apply_fp32_set(model, keep, output, inputs, folder, cancel))
        self._fp16_job = ("Apply", model)
        handle.finished.connect(self._on_applied)
        handle.ended.connect(lambda: self.apply_button.setEnabled(True))
        return handle

    def _on_applied(self, applied) -> None:
        self.applied.emit(applied.comparison, applied.pair)  # the build against the original, op by op
        diagnosis = applied.comparison.diagnosis
        verdict = "verified" if applied.verified else "NOT verified"
        self.report.emit(f"<b>Applied</b>: {html.escape(applied.model.name)} converted to FP16 with "
                          f"{len(applied.keep)} op(s) kept in FP32 -> {html.escape(str(applied.output))}; "
                          f"<b>{verdict}</b> against the original: {html.escape(diagnosis.message)}")
        self.load_requested.emit(applied.output)  # the build into the graph panel, behind the findings
        self.links.model_converted.emit(applied.output)
