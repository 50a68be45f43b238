"""The profiler's "Benchmark model…" dialog: which .onnx, where, how many loops.

Where: this computer (ONNX Runtime here) or an SSH host (Studio's engine there, its venv made on
first use). Providers are optional: empty means ONNX Runtime's CPU provider; a provider the
chosen machine's onnxruntime lacks is refused by the run, with the list it has.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QToolButton,
    QWidget,
)

from studio.ui.panels.profiler.bench_job import BenchRequest
from studio.ui.widgets.dialog_parts import ok_cancel, stacked
from studio.ui.widgets.run_on import HERE


class BenchDialog(QDialog):
    """``request()`` gives the :class:`BenchRequest` once accepted (shapes are asked later, if needed)."""

    def __init__(self, hosts: list[str], model: Path | None = None, start_folder: Path | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Benchmark an ONNX model")
        self.start_folder = start_folder
        intro = QLabel("Time the bare inference (no profiler attached): warm-ups, then timed loops on seeded random "
                       "inputs. The numbers (mean, p50, p99, min, max, throughput) open in Summary; the Compare tab "
                       "puts two benchmarks side by side, e.g. an .om timed on the NPU against this model.", self)
        intro.setWordWrap(True)
        self.model_edit = QLineEdit(str(model) if model else "", self)
        self.model_edit.setPlaceholderText("model.onnx")
        self.model_edit.textChanged.connect(self._update_ok)
        browse = QToolButton(self)
        browse.setText("…")
        browse.setToolTip("Choose the .onnx model")
        browse.clicked.connect(self._browse)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_edit, 1)
        model_row.addWidget(browse)
        self.where = QComboBox(self)
        self.where.addItem(HERE, None)
        for name in hosts:
            self.where.addItem(name, name)
        self.where.setToolTip("This computer (ONNX Runtime here) or a host, where Studio's engine runs (its venv is "
                              "made on first use, in ~/.cache/studio-remote)")
        self.loop = QSpinBox(self)
        self.loop.setRange(1, 1_000_000)
        self.loop.setValue(100)
        self.warmup = QSpinBox(self)
        self.warmup.setRange(0, 10_000)
        self.warmup.setValue(5)
        self.providers = QLineEdit(self)
        self.providers.setPlaceholderText("CPUExecutionProvider (default)")
        self.providers.setToolTip("ONNX Runtime execution providers, comma-separated, in order of preference "
                                  "(e.g. CUDAExecutionProvider); refused when that machine's onnxruntime lacks one")
        form = QFormLayout()
        form.addRow("Model", model_row)
        form.addRow("Run on", self.where)
        form.addRow("Timed loops", self.loop)
        form.addRow("Warm-ups", self.warmup)
        form.addRow("Providers", self.providers)
        self.buttons = ok_cancel(self, "Benchmark")
        stacked(self, intro, form, self.buttons)
        self.resize(560, self.sizeHint().height())
        self._update_ok()

    def request(self) -> BenchRequest:
        providers = [p.strip() for p in self.providers.text().split(",") if p.strip()]
        return BenchRequest(Path(self.model_edit.text().strip()), self.where.currentData(), self.loop.value(),
                            self.warmup.value(), providers)

    def _browse(self) -> None:
        start = str(self.start_folder) if self.start_folder is not None else ""
        name, _ = QFileDialog.getOpenFileName(self, "Benchmark an ONNX model", start, "ONNX models (*.onnx)")
        if name:
            self.model_edit.setText(name)

    def _update_ok(self) -> None:
        # Only the suffix is checked here (no disk access on the GUI thread); the job says if it is missing.
        ok = self.model_edit.text().strip().lower().endswith(".onnx")
        button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        button.setEnabled(ok)
        button.setToolTip("" if ok else "Give an .onnx model (an .om is timed on its host: On host ▾ → Benchmark .om…)")
