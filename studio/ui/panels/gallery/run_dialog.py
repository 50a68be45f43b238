"""The gallery's Run… dialog: a model over a folder of pictures, as ``studio infer`` takes it: an
.onnx here or on a host (Studio's engine there), an .om on a host with msame or ais_bench."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QWidget,
)

from studio.tools.infer.preprocess import PRESETS, TASK_DEFAULTS
from studio.tools.infer.runner import InferOptions
from studio.ui.widgets.dialog_parts import ok_cancel, stacked
from studio.ui.widgets.run_on import HERE

DEFAULT = "default for the task"
GUESS = "from the model's output shape"  # the task left to the engine, which says what it took and why


def free_folder(folder: Path) -> Path:
    """``folder``, or ``folder_2``, ``folder_3``… when it already holds a run: a rerun keeps the last."""
    candidate, number = folder, 2
    while candidate.exists() and any(candidate.iterdir()):
        candidate, number = folder.with_name(f"{folder.name}_{number}"), number + 1
    return candidate


class _PathField(QWidget):
    """A line edit with a Browse… button (a file or a folder)."""

    def __init__(self, title: str, folder: bool, parent: QWidget, optional: bool = False):
        super().__init__(parent)
        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText("optional" if optional else "")
        self.edit.setMinimumWidth(360)
        button = QPushButton("Browse…", self)
        button.clicked.connect(lambda: self._browse(title, folder))
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.edit, 1)
        row.addWidget(button)

    def _browse(self, title: str, folder: bool) -> None:
        if folder:
            path = QFileDialog.getExistingDirectory(self, title, self.edit.text())
        else:
            path, _ = QFileDialog.getOpenFileName(self, title, self.edit.text())
        if path:
            self.edit.setText(path)

    def path(self) -> Path | None:
        """The path typed or chosen (None when empty)."""
        text = self.edit.text().strip()
        return Path(text) if text else None


class InferDialog(QDialog):
    """Ask for the model, the pictures, the task and (optionally) names, ground truth and output."""

    def __init__(self, workspace: Path | None, parent: QWidget | None = None, hosts: list[str] | None = None):
        super().__init__(parent)
        self.setWindowTitle("Run a model over pictures")
        self.workspace = workspace
        self.model = _PathField("Model", False, self)
        self.images = _PathField("Pictures", True, self)
        self.task = QComboBox(self)
        self.task.addItems([GUESS, *TASK_DEFAULTS])
        self.task.setToolTip("What the model answers. Left to its output shape: [N, C, H, W] segment, [N, C] "
                             "classify, [N, boxes, values] detect (the run's summary says which it took)")
        self.preset = QComboBox(self)
        self.preset.addItems([DEFAULT, *PRESETS])
        self.labels = _PathField("Class names", False, self, optional=True)
        self.truth = _PathField("Ground truth", False, self, optional=True)
        self.output = QLineEdit(self)
        self.output.setPlaceholderText("default: infer/<model>_<pictures> in the workspace (a new folder per run)")
        self.where = QComboBox(self)
        self.where.addItem(HERE, None)
        for name in hosts or []:
            self.where.addItem(name, name)
        self.where.setToolTip("Where the model runs: an .onnx here or with Studio's engine on a host; an .om on a host "
                              "with msame or ais_bench (pictures preprocessed and answers scored here)")
        self.tool = QComboBox(self)
        self.tool.addItems(["msame", "ais_bench"])
        self.tool.setToolTip("What runs an .om on the host (found on its PATH after the toolkit's set_env.sh)")
        form = QFormLayout()
        form.addRow("Model (.onnx, .om)", self.model)
        form.addRow("Run on", self.where)
        form.addRow(".om runs with", self.tool)
        form.addRow("Pictures folder", self.images)
        form.addRow("Task", self.task)
        form.addRow("Normalisation", self.preset)
        form.addRow("Class names", self.labels)
        form.addRow("Ground truth", self.truth)
        form.addRow("Output folder", self.output)
        self.buttons = ok_cancel(self, "Run")
        stacked(self, form, self.buttons)
        for edit in (self.model.edit, self.images.edit):
            edit.textChanged.connect(self._update)
        self._update()

    def _update(self) -> None:
        model = self.model.path()
        self.tool.setEnabled(model is not None and model.suffix.lower() == ".om")
        self.buttons.buttons()[0].setEnabled(model is not None and self.images.path() is not None)

    def fill(self, request) -> None:
        """Start from a previous run's request: its model, pictures, task and files (not its output
        folder: a new run gets its own)."""
        self.model.edit.setText(str(request.model))
        self.images.edit.setText(str(request.images))
        self.task.setCurrentText(request.task or GUESS)
        self.preset.setCurrentText(request.preset or DEFAULT)
        self.labels.edit.setText(str(request.labels) if request.labels else "")
        self.truth.edit.setText(str(request.truth) if request.truth else "")

    def host(self) -> str | None:
        """The host chosen (None: this computer)."""
        return self.where.currentData()

    def request(self):
        """The run the dialog describes, as the operation's request (:mod:`studio.ops.infer`)."""
        from studio.ops.infer import Request

        return replace(Request.of(self.options()), tool=self.tool.currentText())

    def options(self) -> InferOptions:
        """The run the dialog describes."""
        model, images = self.model.path(), self.images.path()
        out = Path(self.output.text()) if self.output.text().strip() else \
            free_folder((self.workspace or model.parent) / "infer" / f"{model.stem}_{images.name}")
        preset = self.preset.currentText()
        task = self.task.currentText()
        return InferOptions(model=model, images=images, out=out, task=None if task == GUESS else task,
                            labels=self.labels.path(), truth=self.truth.path(),
                            preset=None if preset == DEFAULT else preset)
