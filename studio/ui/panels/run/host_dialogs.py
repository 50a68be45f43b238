"""Dialogs of the host actions: msprof options, dump options, benchmark options.

Each starts with the run configuration it runs (preselected: the Run toolbar's), so the same
dialog serves the Run menu and the panels' toolbars.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout,
                               QHBoxLayout, QPlainTextEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget)

from studio.tools.profiler.msprof_cmd import AIC_METRICS, TASK_TIME, MsprofOptions
from studio.ui.widgets.dialog_parts import hinted

_SWITCHES = (("ascendcl", "AscendCL API (--ascendcl)"), ("runtime_api", "Runtime API (--runtime-api)"),
             ("aicpu", "AI CPU (--aicpu)"), ("msproftx", "msproftx markers (--msproftx)"),
             ("model_execution", "Model execution (--model-execution)"),
             ("sys_hardware_mem", "Memory (--sys-hardware-mem)"), ("ai_core", "AI Core PMU (--ai-core)"))


def _config_box(dialog: QDialog, names: list[str], current: str | None) -> QComboBox:
    box = QComboBox(dialog)
    box.addItems(names)
    if current in names:
        box.setCurrentText(current)
    box.setToolTip("The run configuration to run (its host, working folder, command line): "
                   "Run > Edit Configurations…")
    return box


class _ConfigDialog(QDialog):
    """A dialog whose first row picks the run configuration."""

    def __init__(self, names: list[str], current: str | None, parent: QWidget | None):
        super().__init__(parent)
        self.config = _config_box(self, names, current)

    def config_name(self) -> str:
        return self.config.currentText()


def _buttons(dialog: QDialog) -> QDialogButtonBox:
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, dialog)
    buttons.accepted.connect(dialog.accept)
    buttons.rejected.connect(dialog.reject)
    return buttons


class MsprofDialog(_ConfigDialog):
    """msprof switches (defaults: the face-mask tutorial's), or "collect the folder the script writes"."""

    def __init__(self, names: list[str], current: str | None = None, parent: QWidget | None = None):
        super().__init__(names, current, parent)
        self.setWindowTitle("Profile on host")
        self.setMinimumWidth(480)
        defaults = MsprofOptions()
        form = QFormLayout()
        form.addRow("Run configuration", self.config)
        self.checks: dict[str, QCheckBox] = {}
        for name, label in _SWITCHES:
            box = QCheckBox(label, self)
            box.setChecked(getattr(defaults, name))
            self.checks[name] = box
            form.addRow(box)
        self.task_time = QComboBox(self)
        self.task_time.addItems(list(TASK_TIME))
        self.task_time.setCurrentText(defaults.task_time)
        form.addRow("Task time (--task-time)", self.task_time)
        self.metrics = QComboBox(self)
        self.metrics.addItems(list(AIC_METRICS))
        self.metrics.setCurrentText(defaults.aic_metrics)
        form.addRow("AI Core metrics (--aic-metrics)", self.metrics)
        self.checks["ai_core"].toggled.connect(self.metrics.setEnabled)
        self.metrics.setEnabled(defaults.ai_core)
        self.collect = hinted(self, "empty: wrap the app in msprof")
        self.collect.setToolTip("For PyTorch scripts that profile themselves: the folder under which they "
                                "write *_ascend_pt/ASCEND_PROFILER_OUTPUT (no msprof then)")
        form.addRow("Collect folder instead", self.collect)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(_buttons(self))

    def options(self) -> MsprofOptions:
        values = {name: box.isChecked() for name, box in self.checks.items()}
        return MsprofOptions(task_time=self.task_time.currentText(), aic_metrics=self.metrics.currentText(), **values)


class _ModelRow(QWidget):
    def __init__(self, parent: QWidget, start: Path | None, hint: str = "the .om the app loads",
                 pattern: str = "OM models (*.om)"):
        super().__init__(parent)
        self.edit = hinted(self, hint)
        self._pattern = pattern
        browse = QPushButton("Browse…", self)
        browse.clicked.connect(lambda: self._browse(start))
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.edit, 1)
        row.addWidget(browse)

    def _browse(self, start: Path | None) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Model", str(start or Path.home()), self._pattern)
        if path:
            self.edit.setText(path)


class DumpDialog(_ConfigDialog):
    """What to dump: the .om (its name and op names fill dump_list), layers, mode."""

    def __init__(self, names: list[str], current: str | None = None, start: Path | None = None,
                 parent: QWidget | None = None, compare: bool = False):
        super().__init__(names, current, parent)
        self.setWindowTitle("Dump on host" + (" and compare with the CPU" if compare else ""))
        self.setMinimumWidth(560)
        self.compare = compare
        self.model = _ModelRow(self, start)
        self.reference = _ModelRow(self, start, "the original .onnx (dumped here with ONNX Runtime)",
                                   "ONNX models (*.onnx)")
        self.inputs = hinted(self, "NAME=/path/input.npy, one per model input (uploaded beside the app)",
                             QPlainTextEdit, max_height=70)
        self.layers = hinted(self, "empty: every op; or op names separated by commas")
        self.mode = QComboBox(self)
        self.mode.addItems(["output", "input", "all"])
        self.op_switch = QCheckBox("Also single-op calls (dump_op_switch)", self)
        form = QFormLayout()
        form.addRow("Run configuration", self.config)
        form.addRow("Model (.om)", self.model)
        form.addRow("Layers", self.layers)
        form.addRow("Dump mode", self.mode)
        form.addRow(self.op_switch)
        if compare:
            form.addRow("Original model", self.reference)
            form.addRow("Input arrays", self.inputs)
        else:
            self.reference.hide()
            self.inputs.hide()
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(_buttons(self))

    def values(self) -> dict:
        values = {"model": Path(self.model.edit.text().strip()), "mode": self.mode.currentText(),
                  "layers": [x.strip() for x in self.layers.text().split(",") if x.strip()],
                  "op_switch": "on" if self.op_switch.isChecked() else "off"}
        if self.compare:
            inputs = {}
            for line in self.inputs.toPlainText().splitlines():
                name, sep, file = line.strip().partition("=")
                if line.strip():
                    inputs[name.strip() if sep else Path(line.strip()).stem] = Path((file if sep else name).strip())
            values.update(reference=Path(self.reference.edit.text().strip()), inputs=inputs)
        return values


class BenchDialog(_ConfigDialog):
    """An .om, the tool (msame, ais_bench or msit benchmark), loops, warm-ups, device; optionally the
    original .onnx, timed here with ONNX Runtime for the profiler's Compare tab."""

    def __init__(self, names: list[str], current: str | None = None, start: Path | None = None,
                 parent: QWidget | None = None):
        super().__init__(names, current, parent)
        self.setWindowTitle("Benchmark an .om where a run configuration runs")
        self.setMinimumWidth(560)
        self.model = _ModelRow(self, start)
        self.reference = _ModelRow(self, start, "optional: the original .onnx, timed here with ONNX Runtime too",
                                   "ONNX models (*.onnx)")
        self.reference.setToolTip("Same loops and warm-ups here with ONNX Runtime (CPU, seeded random inputs); "
                                  "the profiler's Compare tab then shows the NPU against it")
        self.tool = QComboBox(self)
        self.tool.addItems(["msame", "ais_bench", "msit"])
        self.loop, self.warmup, self.device = QSpinBox(self), QSpinBox(self), QSpinBox(self)
        self.loop.setRange(1, 100000)
        self.loop.setValue(100)
        self.warmup.setRange(0, 1000)
        self.warmup.setValue(5)
        self.device.setRange(0, 63)
        form = QFormLayout()
        for label, widget in (("Run configuration", self.config), ("Model (.om)", self.model), ("Tool", self.tool),
                              ("Loops", self.loop), ("Warm-ups", self.warmup), ("Device", self.device),
                              ("Original model", self.reference)):
            form.addRow(label, widget)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(_buttons(self))

    def values(self) -> dict:
        reference = self.reference.edit.text().strip()
        return {"model": Path(self.model.edit.text().strip()), "tool": self.tool.currentText(),
                "loop": self.loop.value(), "warmup": self.warmup.value(), "device": self.device.value(),
                "reference": Path(reference) if reference else None}
