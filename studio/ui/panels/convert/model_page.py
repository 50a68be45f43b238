"""Wizard page 1: the model, its inputs (editable shapes), the target SoC, output type and path."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.tools.convert.atc_command import INPUT_FORMATS, OUTPUT_TYPES, SOC_VERSIONS
from studio.tools.convert.model_info import ModelInfo
from studio.tools.convert.options import FRAMEWORKS, framework_for
from studio.ui.panels.convert.host_picker import HostPicker

LOCAL, ATC = "local", "atc"


class ModelPage(QWidget):
    """Model file, mode (local ONNX or ATC), inputs table, SoC, formats and output.

    Signals:
        changed(): any field changed (the command preview follows).
        model_chosen(Path): the user picked a model file; the panel inspects it as a job.
    """

    changed = Signal()
    model_chosen = Signal(object)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.info: ModelInfo | None = None
        self._requested: Path | None = None
        # Where a new model's output goes by default (the panel points it at the workspace's folder).
        self.output_folder = lambda: None
        self.model_edit = QLineEdit(self)
        self.model_edit.setPlaceholderText("ONNX model (local or ATC), or TensorFlow .pb / Caffe .prototxt / MindSpore .air (ATC)")
        self.model_edit.editingFinished.connect(self._on_model_edited)
        browse = QPushButton("Browse…", self)
        browse.clicked.connect(self._on_browse_model)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_edit, 1)
        model_row.addWidget(browse)

        self.local_radio = QRadioButton("Local ONNX (runs here with ONNX Runtime)", self)
        self.atc_radio = QRadioButton("ATC for the NPU (.om)", self)
        self.local_radio.setChecked(True)
        mode_row = QHBoxLayout()
        mode_row.addWidget(self.local_radio)
        mode_row.addWidget(self.atc_radio)
        mode_row.addStretch(1)
        self.atc_radio.toggled.connect(self._on_mode_toggled)

        self.framework_combo = QComboBox(self)
        for number, name in FRAMEWORKS.items():
            self.framework_combo.addItem(f"{number} — {name}", number)
        self.framework_combo.setCurrentIndex(self.framework_combo.findData(5))
        self.weight_edit = QLineEdit(self)
        self.weight_edit.setPlaceholderText(".caffemodel (Caffe only)")
        self.soc_combo = QComboBox(self)
        self.soc_combo.setEditable(True)
        self.soc_combo.addItems(SOC_VERSIONS)
        self.soc_combo.setToolTip("Target chip; 'npu-smi info' on the host shows it (Ascend + Name)")
        self.input_format_combo = QComboBox(self)
        self.input_format_combo.addItem("(model default)", None)
        for fmt in INPUT_FORMATS:
            self.input_format_combo.addItem(fmt, fmt)
        self.output_type_combo = QComboBox(self)
        self.output_type_combo.addItems(["FP32", "FP16"])
        self.output_edit = QLineEdit(self)
        self.output_edit.setPlaceholderText("converted model path (.onnx locally; .om path for ATC)")
        self.host_picker = HostPicker(self)
        self.host_picker.changed.connect(self.changed)

        self.inputs_table = QTableWidget(0, 3, self)
        self.inputs_table.setHorizontalHeaderLabels(["Input", "Shape (N,C,H,W; -1 = dynamic)", "Type"])
        self.inputs_table.verticalHeader().hide()
        header = self.inputs_table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.inputs_table.setColumnWidth(0, 160)
        self.inputs_table.itemChanged.connect(self._on_shape_edited)
        self.inputs_hint = QLabel("Choose a model to list its inputs.", self)
        self.inputs_hint.setWordWrap(True)
        self.inputs_hint.setStyleSheet("color: palette(mid);")
        add_row = QPushButton("Add input", self)
        add_row.setToolTip("TensorFlow and Caffe models are not read here: type the input names and shapes")
        add_row.clicked.connect(self._on_add_input)

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)
        form.addRow("Model file", model_row)
        form.addRow("Conversion", mode_row)
        form.addRow("Framework", self.framework_combo)
        form.addRow("Weight file", self.weight_edit)
        form.addRow("Target SoC", self.soc_combo)
        form.addRow("Input format", self.input_format_combo)
        form.addRow("Output type", self.output_type_combo)
        form.addRow("Output", self.output_edit)
        form.addRow("Run ATC on", self.host_picker)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        inputs_row = QHBoxLayout()
        inputs_row.addWidget(QLabel("<b>Inputs</b>", self))
        inputs_row.addWidget(self.inputs_hint, 1)
        inputs_row.addWidget(add_row)
        layout.addLayout(inputs_row)
        layout.addWidget(self.inputs_table, 1)
        for signal in (self.framework_combo.currentIndexChanged, self.soc_combo.currentTextChanged,
                       self.input_format_combo.currentIndexChanged, self.output_type_combo.currentIndexChanged,
                       self.output_edit.textChanged, self.weight_edit.textChanged):
            signal.connect(self.changed)
        self._on_mode_toggled(False)

    # -- state ----------------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return ATC if self.atc_radio.isChecked() else LOCAL

    def set_mode(self, mode: str) -> None:
        (self.atc_radio if mode == ATC else self.local_radio).setChecked(True)

    def model_path(self) -> Path | None:
        text = self.model_edit.text().strip()
        return Path(text) if text else None

    def set_model(self, path: Path) -> None:
        """Show ``path`` and ask the panel to inspect it; non-ONNX models switch to ATC.

        Another model than the one shown gets its own output path: the last model's would overwrite
        its result. The default is in the workspace's ``convert/`` folder (beside the model without
        a workspace).
        """
        if self.model_path() is not None and Path(path) != self.model_path():
            self.output_edit.clear()
        self._requested = path
        self.model_edit.setText(str(path))
        framework = framework_for(path)
        if framework is not None:
            self.framework_combo.setCurrentIndex(self.framework_combo.findData(framework))
        if framework not in (5, None):
            self.set_mode(ATC)
        if not self.output_edit.text():
            suffix = ".onnx" if framework == 5 and self.mode == LOCAL else ""
            folder = self.output_folder() or path.parent
            self.output_edit.setText(str(Path(folder) / (path.stem + "_converted" + suffix)))
        self.model_chosen.emit(path)
        self.changed.emit()

    def show_info(self, info: ModelInfo) -> None:
        """Fill the inputs table from an inspected model (dynamic dims highlighted)."""
        self.info = info
        self.inputs_table.blockSignals(True)
        self.inputs_table.setRowCount(0)
        for tensor in info.inputs:
            self._append_row(tensor.name, tensor.shape_text(), tensor.dtype, from_model=True)
        self.inputs_table.blockSignals(False)
        self._refresh_hint()
        self.changed.emit()

    def _append_row(self, name: str, shape: str, dtype: str, from_model: bool) -> None:
        row = self.inputs_table.rowCount()
        self.inputs_table.insertRow(row)
        name_item = QTableWidgetItem(name)
        name_item.setToolTip(name)
        if from_model:
            name_item.setFlags(name_item.flags() & ~Qt.ItemFlag.ItemIsEditable)
        type_item = QTableWidgetItem(dtype)
        type_item.setFlags(type_item.flags() & ~Qt.ItemFlag.ItemIsEditable)
        self.inputs_table.setItem(row, 0, name_item)
        self.inputs_table.setItem(row, 1, QTableWidgetItem(shape))
        self.inputs_table.setItem(row, 2, type_item)
        self._mark_dynamic(row)

    def _mark_dynamic(self, row: int) -> None:
        item = self.inputs_table.item(row, 1)
        if item is None:
            return
        dynamic = "-1" in item.text().split(",") or "?" in item.text()
        item.setBackground(QColor(255, 200, 120, 90) if dynamic else QColor(0, 0, 0, 0))
        item.setToolTip("Dynamic dim: give a size for local conversion, or a dynamic option for ATC"
                        if dynamic else item.text())

    def _refresh_hint(self) -> None:
        rows = self.inputs_table.rowCount()
        dynamic = [self.inputs_table.item(r, 0).text() for r in range(rows)
                   if "-1" in (self.inputs_table.item(r, 1).text() if self.inputs_table.item(r, 1) else "").split(",")]
        if not rows:
            self.inputs_hint.setText("Choose a model to list its inputs (or add them by hand for .pb / Caffe).")
        elif dynamic:
            self.inputs_hint.setText(f"Set the -1 dims of {', '.join(dynamic)} (highlighted) to the sizes you deploy with.")
        else:
            self.inputs_hint.setText("Shapes are fixed; edit them to convert for another size.")

    def input_shape_spec(self) -> str | None:
        """The table as an ``--input_shape`` value (None when nothing differs from the model)."""
        entries, changed = [], False
        original = {t.name: t.shape_text() for t in (self.info.inputs if self.info else [])}
        for row in range(self.inputs_table.rowCount()):
            name_item, shape_item = self.inputs_table.item(row, 0), self.inputs_table.item(row, 1)
            if name_item is None or shape_item is None or not name_item.text().strip():
                continue
            shape = shape_item.text().replace(" ", "")
            entries.append(f"{name_item.text().strip()}:{shape}")
            changed |= original.get(name_item.text()) != shape or "-1" in shape.split(",")
        return ";".join(entries) if entries and changed else None

    def model_hw(self, input_index: int = 0) -> tuple[int, int] | None:
        """(H, W) of an input from the table, for AIPP sizes (NCHW or NHWC guessed by channels)."""
        item = self.inputs_table.item(input_index, 1) if self.inputs_table.rowCount() > input_index else None
        try:
            dims = [int(d) for d in item.text().split(",")] if item else []
        except ValueError:
            return None
        if len(dims) != 4 or min(dims) <= 0:
            return None
        return (dims[1], dims[2]) if dims[3] in (1, 3, 4) and dims[1] not in (1, 3, 4) else (dims[2], dims[3])

    # -- handlers -------------------------------------------------------------------------------
    def _on_browse_model(self) -> None:
        start = str(self.model_path().parent) if self.model_path() else ""
        path, _ = QFileDialog.getOpenFileName(self, "Model to convert", start,
                                              "Models (*.onnx *.pb *.prototxt *.air);;All files (*)")
        if path:
            self.set_model(Path(path))

    def _on_model_edited(self) -> None:
        path = self.model_path()
        if path is not None and path != self._requested:  # focus changes also end editing
            self.set_model(path)

    def _on_add_input(self) -> None:
        self._append_row("input", "1,3,224,224", "?", from_model=False)
        self._refresh_hint()
        self.changed.emit()

    def _on_shape_edited(self, item: QTableWidgetItem) -> None:
        self._mark_dynamic(item.row())
        self._refresh_hint()
        self.changed.emit()

    def _on_mode_toggled(self, atc: bool) -> None:
        self.output_type_combo.blockSignals(True)
        current = self.output_type_combo.currentText()
        self.output_type_combo.clear()
        self.output_type_combo.addItems(list(OUTPUT_TYPES) if atc else ["FP32", "FP16"])
        index = self.output_type_combo.findText(current)
        self.output_type_combo.setCurrentIndex(max(0, index))
        self.output_type_combo.blockSignals(False)
        for widget in (self.framework_combo, self.weight_edit, self.soc_combo, self.input_format_combo,
                       self.host_picker):
            widget.setEnabled(atc)
        if atc:
            self.host_picker.refresh()  # hosts may have been added in the Hosts panel meanwhile
        out = self.output_edit.text()
        if atc and out.endswith(".onnx"):
            self.output_edit.setText(out[:-5])
        elif not atc and out and not out.endswith(".onnx"):
            self.output_edit.setText(out + ".onnx")
        self.changed.emit()
