"""The gallery's Run… dialog: a model over a folder of pictures, as ``studio infer`` takes it."""

from __future__ import annotations

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

DEFAULT = "default for the task"


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

    def __init__(self, workspace: Path | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Run a model over pictures")
        self.workspace = workspace
        self.model = _PathField("Model", False, self)
        self.images = _PathField("Pictures", True, self)
        self.task = QComboBox(self)
        self.task.addItems(list(TASK_DEFAULTS))
        self.preset = QComboBox(self)
        self.preset.addItems([DEFAULT, *PRESETS])
        self.labels = _PathField("Class names", False, self, optional=True)
        self.truth = _PathField("Ground truth", False, self, optional=True)
        self.output = QLineEdit(self)
        self.output.setPlaceholderText("default: infer/<model>_<pictures> in the workspace")
        form = QFormLayout()
        form.addRow("Model (.onnx)", self.model)
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
        self.buttons.buttons()[0].setEnabled(self.model.path() is not None and self.images.path() is not None)

    def options(self) -> InferOptions:
        """The run the dialog describes."""
        model, images = self.model.path(), self.images.path()
        out = Path(self.output.text()) if self.output.text().strip() else \
            (self.workspace or model.parent) / "infer" / f"{model.stem}_{images.name}"
        preset = self.preset.currentText()
        return InferOptions(model=model, images=images, out=out, task=self.task.currentText(),
                            labels=self.labels.path(), truth=self.truth.path(),
                            preset=None if preset == DEFAULT else preset)
