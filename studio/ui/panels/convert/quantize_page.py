"""Wizard page 4: INT8 quantisation of page 1's model (``studio quantize``).

The form on the left holds what the command takes: the calibration data (a folder of pictures or
an ``.npz``) and held-out samples, how pictures are preprocessed, the method, per-channel weights,
the format, the accuracy target (min cosine, or a top-1 / mAP@0.5 / Dice / IoU drop against ground
truth: :mod:`~studio.ui.panels.convert.quantize_target`), the timing budget, the output, and the
Ascend files with the host to run them on (:mod:`~studio.ui.panels.convert.quantize_ascend`);
Quantize and Cancel with a progress bar sit under it. The result
(:class:`~studio.ui.panels.convert.quantize_view.QuantizeView`) fills the right side. The page only
builds the :class:`studio.ops.quantize.Request` (and names the host); the run is
:class:`~studio.ui.panels.convert.quantize_job.QuantizeJob`'s.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from studio.core.errors import UserError
from studio.ui import style
from studio.ui.panels.convert.form_parts import combo, line, pick_file, push, side_by_side, spin, with_buttons
from studio.ui.panels.convert.quantize_ascend import AscendFields
from studio.ui.panels.convert.quantize_target import TargetFields
from studio.ui.panels.convert.quantize_view import QuantizeView

TASK_DEFAULT = "task default"


class QuantizePage(QWidget):
    """Signals: run_requested(), cancel_requested()."""

    run_requested = Signal()
    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        from studio.ops.quantize import choices

        super().__init__(parent)
        self.calib_edit = line(self, "folder of pictures, or .npz (one array per input)")
        self.eval_edit = line(self, "optional: held-out samples (default: the calibration ones)")
        self.method_combo = combo(self, choices("method"))
        self.per_channel_box = QCheckBox("Per-channel weights", self)
        self.format_combo = combo(self, choices("format"), "qdq: QuantizeLinear/DequantizeLinear around float ops; "
                                                 "qoperator: QLinearConv, QLinearMatMul, ...")
        self.task_combo = combo(self, choices("task"),
                                "Whose preprocessing defaults apply to pictures (as studio infer --task); a task "
                                "target sets it")
        self.preset_combo = combo(self, [(f"preset: {TASK_DEFAULT}", None)] + [(p, p) for p in choices("preset")],
                                  "Normalisation of pictures (as studio infer --preset)")
        self.resize_combo = combo(self, [(f"resize: {TASK_DEFAULT}", None)] + [(m, m) for m in choices("resize")],
                                  "How pictures are resized to the input (as studio infer --resize)")
        self.bgr_box = QCheckBox("BGR", self)
        self.bgr_box.setToolTip("Feed BGR instead of RGB (as studio infer --bgr)")
        self.target = TargetFields(self)
        self.target.kind_combo.currentIndexChanged.connect(self._on_target_kind)

        self.timing_box = QCheckBox("FP32, INT8 and mixed", self)
        self.timing_box.setChecked(True)
        self.budget_spin = spin(self, 0.2, 60.0, 1, 3.0, 0.5, " s each")
        self.budget_spin.setToolTip("Seconds of interleaved timing per comparison against FP32")
        self.timing_box.toggled.connect(self.budget_spin.setEnabled)
        self.output_edit = line(self, "the mixed model (.onnx); written only when the search succeeds")
        self.ascend = AscendFields(self, self._default_ascend_folder)

        # Three tabs keep the form short enough for a 720-pixel screen, Quantize always in sight.
        self.tabs = QTabWidget(self)
        data = _form_tab(self.tabs, "Data and method")
        npz = lambda: pick_file(self, self.calib_edit, "NumPy (*.npz)")  # noqa: E731
        data.addRow("Calibration", with_buttons(self, self.calib_edit, ("Folder…", self._pick_calib_folder),
                                                (".npz…", npz)))
        data.addRow("Evaluate on", with_buttons(self, self.eval_edit, ("…", self._pick_eval)))
        data.addRow("Pictures for", side_by_side(self, self.task_combo, self.bgr_box))
        data.addRow("Preprocessing", side_by_side(self, self.preset_combo, self.resize_combo))
        data.addRow("Method", side_by_side(self, self.method_combo, self.format_combo))
        data.addRow("", self.per_channel_box)
        data.addRow("Timing", side_by_side(self, self.timing_box, self.budget_spin))
        data.addRow("Output", with_buttons(self, self.output_edit, ("…", self._pick_output)))
        self.target.add_rows(_form_tab(self.tabs, "Target"))
        self.ascend.add_rows(_form_tab(self.tabs, "Ascend"))

        self.run_button = push(self, "Quantize", self.run_requested,
                               "Calibrate, rank the layers, search the fewest to keep in float, measure "
                               "(studio quantize); the model is page 1's")
        self.cancel_button = push(self, "Cancel", self.cancel_requested)
        self.cancel_button.hide()
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 100)
        self.progress.setTextVisible(True)
        self.progress.hide()
        self.step_label = QLabel("", self)
        self.step_label.setWordWrap(True)
        self.step_label.setStyleSheet(f"color: {style.MUTED};")
        run_row = QHBoxLayout()
        run_row.addWidget(self.progress, 1)
        run_row.addWidget(self.cancel_button)
        run_row.addWidget(self.run_button)

        left = QWidget(self)
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, style.MARGIN, 0)
        left_layout.addWidget(self.tabs)
        left_layout.addLayout(run_row)
        left_layout.addWidget(self.step_label)
        left_layout.addStretch(1)
        self.view = QuantizeView(self)
        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.addWidget(left)
        splitter.addWidget(self.view)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        splitter.setSizes([450, 560])  # the result's tables need the width more than the form
        splitter.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)

    # -- state ----------------------------------------------------------------------------------
    def request(self, model: Path | None):
        """The :class:`studio.ops.quantize.Request` the form describes for ``model``; a UserError
        names the field to fill."""
        from studio.ops.quantize import Request

        if model is None:
            raise UserError("No model chosen", "page 1, Model file", "Choose the ONNX model to quantise on page 1.")
        if Path(model).suffix.lower() != ".onnx":
            raise UserError(f"{Path(model).name} is not an ONNX model", "page 1, Model file",
                            "Quantisation runs ONNX Runtime: choose an .onnx model.")
        calib = self.calib_edit.text().strip()
        if not calib:
            raise UserError("No calibration data", "Quantize page, Calibration",
                            "Choose a folder of pictures or an .npz with one array per input.")
        out = self.output_edit.text().strip()
        if not out:
            raise UserError("No output path", "Quantize page, Output", "Give the path of the mixed model (.onnx).")
        evaluate = self.eval_edit.text().strip()
        fields = {"task": self.task_combo.currentText(), **self.target.fields(), **self.ascend.fields()}
        return Request(Path(model), Path(out), Path(calib), Path(evaluate) if evaluate else None,
                       self.method_combo.currentText(), self.per_channel_box.isChecked(),
                       self.format_combo.currentText(), preset=self.preset_combo.currentData(),
                       resize=self.resize_combo.currentData(), bgr=self.bgr_box.isChecked(),
                       budget=self.budget_spin.value(), timing=self.timing_box.isChecked(), **fields)

    def host(self) -> str | None:
        """The host the Ascend files run on (``studio quantize --host``), None for none."""
        return self.ascend.host()

    def set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setVisible(running)
        self.progress.setVisible(running)
        if running:
            self.progress.setRange(0, 0)  # busy until the first fraction

    def show_step(self, fraction: float | None, message: str) -> None:
        if fraction is not None:
            self.progress.setRange(0, 100)
            self.progress.setValue(int(fraction * 100))
        self.step_label.setText(message)

    # -- handlers -------------------------------------------------------------------------------
    def _on_target_kind(self, _index: int) -> None:
        task = self.target.kind().task  # a task target judges one kind of model: its preprocessing follows
        if task is not None:
            self.task_combo.setCurrentText(task)
        self.task_combo.setEnabled(task is None)

    def _default_ascend_folder(self) -> Path | None:
        out = self.output_edit.text().strip()
        return Path(out).with_name(f"{Path(out).stem}_ascend") if out else None

    def _pick_calib_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Calibration pictures")
        if path:
            self.calib_edit.setText(path)

    def _pick_eval(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Evaluation samples (.npz; cancel to pick a folder)", "",
                                              "NumPy (*.npz)")
        path = path or QFileDialog.getExistingDirectory(self, "Evaluation pictures")
        if path:
            self.eval_edit.setText(path)

    def _pick_output(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Mixed model", self.output_edit.text(), "ONNX (*.onnx)")
        if path:
            self.output_edit.setText(path)


def _form_tab(tabs: QTabWidget, title: str) -> QFormLayout:
    """A new tab of ``tabs`` holding a form; returns the form."""
    page = QWidget(tabs)
    form = QFormLayout(page)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)
    tabs.addTab(page, title)
    return form
