"""Editing a MindX SDK pipeline from the graph panel: change one element property and save.

Double-clicking a property in the details pane opens :class:`PropertyDialog` (a file picker for
file properties such as ``modelPath``, with the converter's last output offered). The save runs
as a job through :func:`studio.tools.graph.pipeline.edit.set_prop_in_file`, which keeps every
other byte of the file; the pipeline is then read again and the element selected.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from studio.tools.graph.pipeline.plugins import FILE_PROPS
from studio.ui.widgets.dialog_parts import ok_cancel, stacked


class PropertyDialog(QDialog):
    """Ask for a property's new value (and its name, when adding one)."""

    def __init__(self, element: str, prop: str, value: str, project: Path | None, last_output: Path | None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"Change {element}.{prop}" if prop else f"Add a property to {element}")
        self.project = project
        self.name_edit = QLineEdit(prop, self)
        self.name_edit.setPlaceholderText("property name, e.g. modelPath")
        self.name_edit.setVisible(not prop)
        self.value_edit = QLineEdit("" if isinstance(value, dict) else str(value), self)
        self.value_edit.setMinimumWidth(420)
        self.browse = QPushButton("Browse…", self)
        self.browse.clicked.connect(self._on_browse)
        self.use_last = QPushButton(self)
        self.use_last.setVisible(last_output is not None)
        if last_output is not None:
            self.use_last.setText(f"Use the last conversion: {last_output.name}")
            self.use_last.setToolTip(str(last_output))
            self.use_last.clicked.connect(lambda: self.value_edit.setText(self._relative(last_output)))
        row = QHBoxLayout()
        row.addWidget(self.value_edit, 1)
        row.addWidget(self.browse)
        hint = QLabel(f"Relative paths are resolved against {project}" if project else "", self)
        hint.setWordWrap(True)
        self.buttons = ok_cancel(self, "Save")
        stacked(self, self.name_edit, row, self.use_last, hint, self.buttons)
        self.name_edit.textChanged.connect(self._update)
        self._update()

    @property
    def prop(self) -> str:
        """The property to set."""
        return self.name_edit.text().strip()

    @property
    def value(self) -> str:
        """The new value, as typed."""
        return self.value_edit.text()

    def _update(self) -> None:
        self.browse.setVisible(self.prop in FILE_PROPS)
        self.buttons.buttons()[0].setEnabled(bool(self.prop))

    def _relative(self, path: Path) -> str:
        """``path`` as the pipeline should spell it: relative to the project when inside it."""
        if self.project is not None:
            try:
                return "./" + Path(os.path.relpath(path, self.project)).as_posix()
            except ValueError:  # another drive (Windows)
                pass
        return str(path)

    def _on_browse(self) -> None:
        start = str(self.project or "")
        path, _ = QFileDialog.getOpenFileName(self, f"Choose {self.prop}", start)
        if path:
            self.value_edit.setText(self._relative(Path(path)))


class PipelineEditor(QObject):
    """The graph panel's part that edits pipelines: a property asked for in the details pane is
    saved into the pipeline on the left of its named collaborator, the panel's ``GraphViews``.

    Signals:
        saved(Path, str): the pipeline file written and the element to select once it is read again.
        status(str): a short message for the status bar.
    """

    saved = Signal(object, str)
    status = Signal(str)

    def __init__(self, runner, views, links, parent: QWidget):
        super().__init__(parent)
        self.runner = runner
        self.views = views
        self.widget = parent  # the dialog's parent
        self.last_converted: Path | None = None  # offered as a model path
        self._saving: tuple[Path, str, str] | None = None
        views.details.edit_requested.connect(self._on_edit_requested)
        links.model_converted.connect(self._on_model_converted)

    def _on_model_converted(self, path) -> None:
        self.last_converted = Path(path)

    def _pipeline_project(self) -> Path | None:
        model = self.views.left.model
        text = (model.metadata.get("project folder", "") if model is not None else "") or ""
        return Path(text.split(" (", 1)[0]) if text else None

    def _on_edit_requested(self, node: str, prop: str, value) -> None:
        stream, _, element = node.partition("/")
        dialog = PropertyDialog(element, prop, value, self._pipeline_project(), self.last_converted, self.widget)
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.prop:
            self.set_pipeline_prop(node, dialog.prop, dialog.value)

    def set_pipeline_prop(self, node: str, prop: str, value: str):
        """Save ``node``'s ``prop`` = ``value`` into the pipeline on screen, then show it again."""
        from studio.tools.graph.pipeline.edit import set_prop_in_file

        model = self.views.left.model
        path = Path(model.path)
        stream, _, element = node.partition("/")

        def job(cancel):
            yield from ()
            return set_prop_in_file(path, f"{stream}/{element}.{prop}={value}")

        handle = self.runner.start(f"Saving {path.name}", job, key=f"graph-save:{path}")
        self._saving = (path, node, prop)
        handle.finished.connect(self._on_pipeline_saved)  # bound: no call on a panel already gone
        return handle  # a failure is the runner's to report (the notice board): nothing to undo here

    def _on_pipeline_saved(self, _result) -> None:
        path, node, prop = self._saving
        self.status.emit(f"Graph: saved {node}.{prop} in {path.name}")
        self.saved.emit(path, node)
