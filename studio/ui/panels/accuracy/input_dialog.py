"""A small dialog that asks for the inputs a model run needs: sizes of dynamic dims, or data.

The FP16 check and "Compare with original" run a model with ONNX Runtime; a dynamic dim cannot
be guessed, and random values rarely suit integer or boolean inputs (token ids, a sample rate),
so the panel asks here (the command line's ``--input-shape`` / ``--input``). Data is a .npy
file or one number for every element (``16000`` for a sample rate).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFileDialog, QGridLayout, QHBoxLayout, QLabel, QLineEdit,
                               QPushButton, QWidget)

from studio.core.units import parse_number
from studio.ui.widgets.dialog_parts import ok_cancel, stacked


class InputShapesDialog(QDialog):
    """One row per input asked about: its declared dims, a shape to fill in, or data instead.

    ``values()`` returns ``(shapes, data)``: ``{name: [dims]}`` for inputs given by size and
    ``{name: Path or array}`` for inputs given by a .npy file or a number.
    """

    def __init__(self, model: Path, dynamic: list[tuple[str, list, str]], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"Inputs of {Path(model).name}")
        self.dynamic = dynamic
        self.shape_edits: dict[str, QLineEdit] = {}
        self.file_edits: dict[str, QLineEdit] = {}
        intro = QLabel("Give the size of each dynamic dimension (random data of that shape, seed 0), or the "
                       "data: a .npy file, or one number for every element (e.g. 16000 for a sample rate). "
                       "Integer and boolean inputs get random values unless data is given.", self)
        intro.setWordWrap(True)
        grid = QGridLayout()
        for column, title in enumerate(("Input", "Declared", "Shape", "or data (.npy or a number)")):
            grid.addWidget(QLabel(f"<b>{title}</b>", self), 0, column)
        for row, (name, dims, dtype) in enumerate(dynamic, start=1):
            label = QLabel(name, self)
            label.setToolTip(name)
            grid.addWidget(label, row, 0)
            grid.addWidget(QLabel(f"{dtype} [{', '.join(str(d) if isinstance(d, int) else (d or '?') for d in dims)}]",
                                  self), row, 1)
            shape = QLineEdit(self)
            shape.setPlaceholderText(",".join(str(d) if isinstance(d, int) else "N" for d in dims) or "(scalar)")
            shape.setText(",".join(str(d) if isinstance(d, int) else "" for d in dims))
            shape.setReadOnly(all(isinstance(d, int) for d in dims))  # a fixed shape is not asked for
            shape.textChanged.connect(self._check)
            self.shape_edits[name] = shape
            grid.addWidget(shape, row, 2)
            file_row = QHBoxLayout()
            file_edit = QLineEdit(self)
            file_edit.setPlaceholderText("FILE.npy or 16000")
            file_edit.textChanged.connect(self._check)
            self.file_edits[name] = file_edit
            browse = QPushButton("…", self)
            browse.setFixedWidth(28)
            browse.clicked.connect(lambda _=False, edit=file_edit: self._browse(edit))
            file_row.addWidget(file_edit, 1)
            file_row.addWidget(browse)
            grid.addLayout(file_row, row, 3)
        self.problem = QLabel(self)
        self.problem.setStyleSheet("color: #d73a49")
        self.buttons = ok_cancel(self)
        stacked(self, intro, grid, self.problem, self.buttons)
        self._check()

    def _browse(self, edit: QLineEdit) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Input data", "", "NumPy arrays (*.npy)")
        if name:
            edit.setText(name)

    def set_shape(self, name: str, text: str) -> None:
        """Fill one input's shape (tests and callers that know the size)."""
        self.shape_edits[name].setText(text)

    def set_data(self, name: str, text: str) -> None:
        """Fill one input's data field (a .npy path or a number)."""
        self.file_edits[name].setText(text)

    def values(self) -> tuple[dict[str, list[int]], dict]:
        """(shapes for inputs given by size, data for the others: a Path, or an array of one number)."""
        import numpy as np

        shapes, data = {}, {}
        for name, dims, dtype in self.dynamic:
            text = self.file_edits[name].text().strip()
            shape = [int(v) for v in self.shape_edits[name].text().replace(" ", "").split(",") if v]
            number = parse_number(text)
            if number is not None:
                data[name] = np.full(shape if len(shape) == len(dims) else [], number, dtype=np.dtype(dtype))
            elif text:
                data[name] = Path(text)
            elif any(not isinstance(d, int) for d in dims):
                shapes[name] = shape
        return shapes, data

    def problem_text(self) -> str:
        """Why OK is disabled ('' when every input has a full shape or a file)."""
        for name, dims, _dtype in self.dynamic:
            text = self.file_edits[name].text().strip()
            if text and parse_number(text) is None:
                continue  # a file: its own shape is used
            parts = [v for v in self.shape_edits[name].text().replace(" ", "").split(",")]
            if len(dims) == 0:
                continue
            if len(parts) != len(dims) or not all(p.isdigit() and int(p) > 0 for p in parts):
                return f"{name}: give {len(dims)} positive sizes separated by commas, or a .npy file"
            for index, (declared, given) in enumerate(zip(dims, parts)):
                if isinstance(declared, int) and declared != int(given):
                    return f"{name}: dim {index} is fixed at {declared} in the model"
        return ""

    def _check(self) -> None:
        problem = self.problem_text()
        self.problem.setText(problem)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not problem)
