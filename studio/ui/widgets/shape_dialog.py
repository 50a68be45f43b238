"""Ask for the sizes of a model's dynamic input dims before profiling (or benchmarking) it.

One row per input with dynamic dims, one box per dim: static sizes are shown and fixed, dynamic
ones are empty (their symbolic name as placeholder) until the user types a size. Nothing is
guessed; OK stays disabled until every dynamic dim has a positive size.
"""

from __future__ import annotations

from PySide6.QtGui import QIntValidator
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QWidget,
)

from studio.tools.profiler.local_inputs import InputSpec
from studio.ui.widgets.dialog_parts import ok_cancel, stacked


class ShapeDialog(QDialog):
    """``shapes()`` gives {input name: [sizes]} for every input shown, once accepted."""

    def __init__(self, model_name: str, specs: list[InputSpec], parent: QWidget | None = None,
                 action: str = "profile"):
        """``action`` names what the sizes are for ("profile", "benchmark", …) in the text and on OK."""
        super().__init__(parent)
        self.setWindowTitle(f"Input shapes for {model_name}")
        self.specs = [s for s in specs if s.dynamic_axes]
        self.boxes: dict[str, list[QLineEdit]] = {}
        intro = QLabel(f"{model_name} has dynamic input dimensions. Give the size of each empty dim to {action} "
                       "it with seeded random data (the latency depends on them; Studio does not guess).", self)
        intro.setWordWrap(True)
        form = QFormLayout()
        for spec in self.specs:
            row = QHBoxLayout()
            boxes = []
            for axis, dim in enumerate(spec.dims):
                box = QLineEdit(self)
                box.setValidator(QIntValidator(1, 1 << 30, box))
                box.setMaximumWidth(90)
                if axis in spec.dynamic_axes:
                    box.setPlaceholderText(str(dim) if dim else "?")
                    box.setToolTip(f"axis {axis}" + (f" ({dim})" if dim else "") + ": dynamic — give its size")
                    box.textChanged.connect(self._on_changed)
                else:
                    box.setText(str(dim))
                    box.setReadOnly(True)
                    box.setEnabled(False)
                    box.setToolTip(f"axis {axis}: fixed by the model")
                row.addWidget(box)
                boxes.append(box)
            row.addStretch(1)
            self.boxes[spec.name] = boxes
            label = QLabel(spec.name if len(spec.name) <= 32 else spec.name[:31] + "…", self)
            label.setToolTip(f"{spec.name} ({spec.type})")
            form.addRow(label, row)
        self.buttons = ok_cancel(self, action.capitalize())
        stacked(self, intro, form, self.buttons)
        self._on_changed()

    def set_dims(self, name: str, sizes: list[int]) -> None:
        """Type sizes into an input's boxes (the dynamic ones; static boxes keep their size)."""
        for box, size in zip(self.boxes[name], sizes):
            if not box.isReadOnly():
                box.setText(str(size))

    def shapes(self) -> dict[str, list[int]] | None:
        """The full shape of every input shown, or None while a dynamic dim is empty."""
        out = {}
        for name, boxes in self.boxes.items():
            try:
                sizes = [int(box.text()) for box in boxes]
            except ValueError:
                return None
            if any(size < 1 for size in sizes):
                return None
            out[name] = sizes
        return out

    def _on_changed(self) -> None:
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(self.shapes() is not None)
