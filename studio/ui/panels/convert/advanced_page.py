"""Wizard page 3: fusion switches, precision, ATC options, additional arguments, Command Preview."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from studio.tools.convert.atc_command import LOG_LEVELS, PRECISION_MODES
from studio.tools.convert.fusion_switch import FusionSwitches
from studio.tools.convert.passes import ATC_PASS_NAMES, PASSES
from studio.ui.widgets.dialog_parts import hinted


class AdvancedPage(QWidget):
    """Signals: changed(); load_requested(Path) for a fusion switch file."""

    changed = Signal()
    load_requested = Signal(object)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.switches: FusionSwitches | None = None
        self.passes_list = QListWidget(self)
        for name, _, description in PASSES:
            atc = [k for k, v in ATC_PASS_NAMES.items() if v == name]
            item = QListWidgetItem(f"{name} — {description}")
            item.setData(Qt.ItemDataRole.UserRole, name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            item.setToolTip(f"{name}: {description}" + (f"\nATC names: {', '.join(atc)}" if atc else ""))
            self.passes_list.addItem(item)
        self.passes_list.setMaximumHeight(self.passes_list.sizeHintForRow(0) * (len(PASSES) + 1) + 6)
        self.passes_list.itemChanged.connect(lambda _item: self.changed.emit())
        load = QPushButton("Load fusion switch file…", self)
        load.clicked.connect(self._on_load_clicked)
        self.switch_label = QLabel("No fusion switch file: every pass on.", self)
        self.switch_label.setWordWrap(True)
        fusion_box = QGroupBox("Graph passes (local) / fusion switches (ATC)", self)
        fusion_layout = QVBoxLayout(fusion_box)
        fusion_layout.addWidget(self.passes_list)
        row = QHBoxLayout()
        row.addWidget(self.switch_label, 1)
        row.addWidget(load)
        fusion_layout.addLayout(row)

        self.keep_fp32 = hinted(self, "op types or node names kept FP32 under FP16, e.g. Softmax, head/conv")
        self.validate_box = QCheckBox("Validate against the original (ONNX Runtime; each output within atol and rtol)", self)
        self.validate_box.setChecked(True)
        self.precision_combo = QComboBox(self)
        self.precision_combo.addItem("(ATC default: force_fp16)", None)
        for mode in PRECISION_MODES:
            self.precision_combo.addItem(mode, mode)
        self.debug_spin = QSpinBox(self)
        self.debug_spin.setRange(0, 4)
        self.debug_spin.setToolTip("4 keeps .o/.json/.cce and the UB fusion json (needed by the Advisor's roofline)")
        self.log_combo = QComboBox(self)
        self.log_combo.addItem("(null)", None)
        for level in LOG_LEVELS[:-1]:
            self.log_combo.addItem(level, level)
        self.out_nodes = hinted(self, "node:0;node2:0 or ONNX tensor names (default: the model's outputs)")
        self.dynamic_batch = hinted(self, '"1,2,4,8" (needs -1 as batch in the input shape)')
        self.dynamic_image = hinted(self, '"h1,w1;h2,w2" (needs -1 at H and W)')
        self.extra = hinted(self, "additional ATC arguments, e.g. --op_select_implmode=high_precision")
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)
        form.addRow("Keep FP32", self.keep_fp32)
        form.addRow("", self.validate_box)
        form.addRow("Precision mode", self.precision_combo)
        form.addRow("Op debug level", self.debug_spin)
        form.addRow("Log level", self.log_combo)
        form.addRow("Output nodes", self.out_nodes)
        form.addRow("Dynamic batch", self.dynamic_batch)
        form.addRow("Dynamic image size", self.dynamic_image)
        form.addRow("Additional arguments", self.extra)
        self.atc_widgets = [self.precision_combo, self.debug_spin, self.log_combo, self.dynamic_batch, self.dynamic_image, self.extra]

        self.preview = QPlainTextEdit(self)
        self.preview.setReadOnly(True)
        self.preview.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.preview.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.preview.setMinimumHeight(70)
        self.preview_error = QLabel(self)
        self.preview_error.setWordWrap(True)
        self.preview_error.setStyleSheet("color: #c0392b;")
        self.preview_error.hide()
        copy = QPushButton("Copy", self)
        copy.setToolTip("Copy the command to the clipboard")
        copy.clicked.connect(self._on_copy)
        preview_head = QHBoxLayout()
        preview_head.addWidget(QLabel("<b>Command Preview</b>", self), 1)
        preview_head.addWidget(copy)

        layout = QVBoxLayout(self)
        layout.addWidget(fusion_box)
        layout.addLayout(form)
        layout.addLayout(preview_head)
        layout.addWidget(self.preview, 1)
        layout.addWidget(self.preview_error)
        for widget in (self.keep_fp32, self.out_nodes, self.dynamic_batch, self.dynamic_image, self.extra):
            widget.textChanged.connect(self.changed)
        for combo in (self.precision_combo, self.log_combo):
            combo.currentIndexChanged.connect(self.changed)
        self.debug_spin.valueChanged.connect(self.changed)
        self.validate_box.toggled.connect(self.changed)

    # -- state ----------------------------------------------------------------------------------
    def pass_switches(self) -> dict[str, bool]:
        return {self.passes_list.item(i).data(Qt.ItemDataRole.UserRole):
                self.passes_list.item(i).checkState() == Qt.CheckState.Checked
                for i in range(self.passes_list.count())}

    def set_switches(self, switches: FusionSwitches) -> None:
        """Apply a parsed fusion switch file to the pass list; ATC-only names are listed."""
        self.switches = switches
        local = switches.local_passes()
        self.passes_list.blockSignals(True)
        for i in range(self.passes_list.count()):
            item = self.passes_list.item(i)
            name = item.data(Qt.ItemDataRole.UserRole)
            if name in local:
                item.setCheckState(Qt.CheckState.Checked if local[name] else Qt.CheckState.Unchecked)
        self.passes_list.blockSignals(False)
        atc_only = switches.atc_only()
        text = f"Loaded {switches.path.name if switches.path else 'switches'}"
        if atc_only:
            text += f"; passed to ATC only: {', '.join(atc_only)}"
        self.switch_label.setText(text)
        self.switch_label.setToolTip(str(switches.path) if switches.path else "")
        self.changed.emit()

    def set_atc_mode(self, atc: bool) -> None:
        for widget in self.atc_widgets:
            widget.setEnabled(atc)
        self.keep_fp32.setEnabled(not atc)
        self.validate_box.setEnabled(not atc)

    def show_command(self, command: str, error: str | None) -> None:
        self.preview.setPlainText(command)
        self.preview_error.setVisible(bool(error))
        self.preview_error.setText(error or "")

    # -- handlers -------------------------------------------------------------------------------
    def _on_copy(self) -> None:
        QGuiApplication.clipboard().setText(self.preview.toPlainText())

    def _on_load_clicked(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Fusion switch file", "", "Fusion switch files (*.cfg *.json *.txt);;All files (*)")
        if path:
            self.load_requested.emit(Path(path))
