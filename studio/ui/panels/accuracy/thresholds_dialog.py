"""The Accuracy panel's "Thresholds…": the five limits every verdict uses, set for the comparison on
screen (the rows are judged again, no tensor is read); the same options as the command line's
``--cosine --rel-euclidean --kl-div --rmse --mean-rel-err``."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QDoubleSpinBox, QFormLayout, QPushButton, QWidget

from studio.core.thresholds import DEFAULTS, LIMITS


class ThresholdsDialog(QDialog):
    """Five spin boxes, pre-filled with the comparison's limits; :meth:`values` after OK."""

    def __init__(self, current: dict[str, float], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Thresholds")
        layout = QFormLayout(self)
        self.boxes: dict[str, QDoubleSpinBox] = {}
        for name, (default, flag, text) in LIMITS.items():
            box = QDoubleSpinBox(self)
            box.setDecimals(6)
            box.setRange(-1.0 if name == "cosine" else 0.0, 1.0 if name == "cosine" else 1e9)
            box.setSingleStep(0.001 if name == "cosine" else 0.01)
            box.setValue(current.get(name, default))
            box.setToolTip(f"{text} (default {default:g}; on the command line: {flag})")
            layout.addRow(f"{flag[2:]}:", box)
            self.boxes[name] = box
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        reset = buttons.addButton("Defaults", QDialogButtonBox.ButtonRole.ResetRole)
        reset.clicked.connect(self._on_defaults)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addRow(buttons)

    def _on_defaults(self) -> None:
        for name, box in self.boxes.items():
            box.setValue(DEFAULTS[name])

    def values(self) -> dict[str, float]:
        return {name: box.value() for name, box in self.boxes.items()}


def thresholds_button(panel) -> QPushButton:
    """The toolbar button: asks for the limits and shows the comparison judged by them."""
    button = QPushButton("Thresholds…", panel)
    button.setToolTip("Set the limits every verdict uses (cosine, relative Euclidean distance, KL, RMSE, mean "
                      "relative error); the rows, findings and the FP16 verdict are judged again")

    def on_click() -> None:
        result = panel.state.result
        if result is None:
            return
        dialog = ThresholdsDialog(result.thresholds.as_dict(), panel)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        from studio.core.errors import UserError
        from studio.tools.accuracy.compare import rejudge
        from studio.tools.accuracy.metrics import Thresholds

        try:
            judged = rejudge(result, Thresholds.of(dialog.values()))
        except UserError as exc:
            panel.status.emit(f"Accuracy: {exc}")
            return
        panel.set_result(judged, panel.state.last_pair)

    button.clicked.connect(on_click)
    return button
