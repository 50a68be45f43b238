"""Wizard page 4: INT8 quantisation of page 1's model (``studio quantize``).

The form on the left holds the calibration data (a folder of pictures or an ``.npz``), the
method, per-channel weights, the format, the accuracy target (min cosine, or a top-1 drop on
labelled pictures) and the timing budget; Quantize and Cancel with a progress bar sit under it.
The result (:class:`~studio.ui.panels.convert.quantize_view.QuantizeView`) fills the right side.
The page only builds the :class:`studio.ops.quantize.Request`; the run is
:class:`~studio.ui.panels.convert.quantize_job.QuantizeJob`'s.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio.core.errors import UserError
from studio.ui import style
from studio.ui.panels.convert.quantize_view import QuantizeView

DEFAULT_MIN_COSINE = 0.99


class QuantizePage(QWidget):
    """Signals: run_requested(), cancel_requested()."""

    run_requested = Signal()
    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.calib_edit = QLineEdit(self)
        self.calib_edit.setPlaceholderText("folder of pictures, or .npz (one array per input)")
        self.eval_edit = QLineEdit(self)
        self.eval_edit.setPlaceholderText("optional: held-out samples (default: the calibration ones)")
        self.method_combo = _combo(self, ("minmax", "entropy", "percentile"))
        self.per_channel_box = QCheckBox("Per-channel weights", self)
        self.format_combo = _combo(self, ("qdq", "qoperator"))
        self.format_combo.setToolTip("qdq: QuantizeLinear/DequantizeLinear around float ops; "
                                     "qoperator: QLinearConv, QLinearMatMul, ...")
        self.task_combo = _combo(self, ("classify", "detect", "segment"))
        self.task_combo.setToolTip("Whose preprocessing defaults apply to pictures (as studio infer --task)")

        self.cosine_radio = QRadioButton("Min cosine", self)
        self.cosine_radio.setChecked(True)
        self.cosine_spin = _spin(self, 0.0, 1.0, 4, DEFAULT_MIN_COSINE, 0.001)
        self.cosine_spin.setToolTip("Every float output's cosine against FP32, on every sample, at least this")
        self.top1_radio = QRadioButton("Max top-1 drop", self)
        self.top1_spin = _spin(self, 0.0, 100.0, 1, 1.0, 0.5)
        self.top1_spin.setSuffix(" points")
        self.truth_edit = QLineEdit(self)
        self.truth_edit.setPlaceholderText("labels CSV: image,label rows (as studio infer --truth)")
        self.names_edit = QLineEdit(self)
        self.names_edit.setPlaceholderText("optional: class names, one a line (labels given by name)")
        target_group = QButtonGroup(self)
        for radio in (self.cosine_radio, self.top1_radio):
            target_group.addButton(radio)
        self.cosine_radio.toggled.connect(self._on_target_kind)

        self.timing_box = QCheckBox("Time FP32, INT8 and mixed", self)
        self.timing_box.setChecked(True)
        self.budget_spin = _spin(self, 0.2, 60.0, 1, 3.0, 0.5)
        self.budget_spin.setSuffix(" s each")
        self.budget_spin.setToolTip("Seconds of interleaved timing per comparison against FP32")
        self.timing_box.toggled.connect(self.budget_spin.setEnabled)
        self.output_edit = QLineEdit(self)
        self.output_edit.setPlaceholderText("the mixed model (.onnx); written only when the search succeeds")

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)
        npz = lambda: self._pick_file(self.calib_edit, "NumPy (*.npz)")  # noqa: E731
        truth = lambda: self._pick_file(self.truth_edit, "CSV (*.csv)")  # noqa: E731
        names = lambda: self._pick_file(self.names_edit, "Text (*.txt *.names);;All files (*)")  # noqa: E731
        form.addRow("Calibration", _with_buttons(self, self.calib_edit, ("Folder…", self._pick_calib_folder),
                                                 (".npz…", npz)))
        form.addRow("Evaluate on", _with_buttons(self, self.eval_edit, ("…", self._pick_eval)))
        form.addRow("Pictures for", self.task_combo)
        form.addRow("Method", self.method_combo)
        form.addRow("Format", self.format_combo)
        form.addRow("", self.per_channel_box)
        form.addRow(self.cosine_radio, self.cosine_spin)
        form.addRow(self.top1_radio, self.top1_spin)
        form.addRow("Truth", _with_buttons(self, self.truth_edit, ("…", truth)))
        form.addRow("Class names", _with_buttons(self, self.names_edit, ("…", names)))
        form.addRow(self.timing_box, self.budget_spin)
        form.addRow("Output", _with_buttons(self, self.output_edit, ("…", self._pick_output)))

        self.run_button = QPushButton("Quantize", self)
        self.run_button.setToolTip("Calibrate, rank the layers, search the fewest to keep in float, measure "
                                   "(studio quantize); the model is page 1's")
        self.run_button.clicked.connect(self.run_requested)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.clicked.connect(self.cancel_requested)
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
        left_layout.addLayout(form)
        left_layout.addLayout(run_row)
        left_layout.addWidget(self.step_label)
        left_layout.addStretch(1)
        self.view = QuantizeView(self)
        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.addWidget(left)
        splitter.addWidget(self.view)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        splitter.setSizes([460, 800])  # the result's tables need the width more than the form
        splitter.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self._on_target_kind(True)

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
        truth = self.truth_edit.text().strip()
        top1 = self.top1_radio.isChecked()
        if top1 and not truth:
            raise UserError("A top-1 target needs labelled pictures", "Quantize page, Truth",
                            "Give a labels CSV (image,label rows), or use the min cosine target.")
        names = self.names_edit.text().strip()
        evaluate = self.eval_edit.text().strip()
        return Request(Path(model), Path(out), Path(calib), Path(evaluate) if evaluate else None,
                       self.method_combo.currentText(), self.per_channel_box.isChecked(),
                       self.format_combo.currentText(),
                       min_cosine=None if top1 else self.cosine_spin.value(),
                       max_top1_drop=self.top1_spin.value() if top1 else None,
                       truth=Path(truth) if truth and top1 else None, labels=Path(names) if names and top1 else None,
                       budget=self.budget_spin.value(), timing=self.timing_box.isChecked(),
                       task=self.task_combo.currentText())

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
    def _on_target_kind(self, cosine: bool) -> None:
        self.cosine_spin.setEnabled(cosine)
        for widget in (self.top1_spin, self.truth_edit, self.names_edit):
            widget.setEnabled(not cosine)

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

    def _pick_file(self, edit: QLineEdit, filter_text: str) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a file", "", filter_text)
        if path:
            edit.setText(path)

    def _pick_output(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Mixed model", self.output_edit.text(), "ONNX (*.onnx)")
        if path:
            self.output_edit.setText(path)


def _combo(parent: QWidget, items) -> QComboBox:
    combo = QComboBox(parent)
    combo.addItems(list(items))
    return combo


def _spin(parent: QWidget, low: float, high: float, decimals: int, value: float, step: float) -> QDoubleSpinBox:
    spin = QDoubleSpinBox(parent)
    spin.setRange(low, high)
    spin.setDecimals(decimals)
    spin.setSingleStep(step)
    spin.setValue(value)
    return spin


def _with_buttons(parent: QWidget, edit: QLineEdit, *buttons) -> QWidget:
    """``edit`` with small browse buttons after it, as one form field."""
    box = QWidget(parent)
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(style.GAP)
    row.addWidget(edit, 1)
    for text, slot in buttons:
        button = QToolButton(box)
        button.setText(text)
        button.clicked.connect(slot)
        row.addWidget(button)
    return box
