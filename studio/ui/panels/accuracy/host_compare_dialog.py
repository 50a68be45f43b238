"""Ask where the other run of "Compare here and on a host" happens: which host, which providers."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QDialog, QFormLayout, QLabel, QLineEdit, QWidget

from studio.ui.widgets.dialog_parts import ok_cancel, stacked


class HostCompareDialog(QDialog):
    """``host()`` and ``providers()`` once accepted."""

    def __init__(self, model_name: str, hosts: list[str], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"Compare {model_name} here and on a host")
        intro = QLabel(f"Dump every op output of {model_name} here (ONNX Runtime, CPU) and with Studio's engine on "
                       "a host — with its GPU provider, say — on the same seeded input, then compare the host's "
                       "tensors against this computer's. The host's venv is made on first use, in "
                       "~/.cache/studio-remote.", self)
        intro.setWordWrap(True)
        self.where = QComboBox(self)
        for name in hosts:
            self.where.addItem(name, name)
        self.providers_edit = QLineEdit(self)
        self.providers_edit.setPlaceholderText("CPUExecutionProvider (default)")
        self.providers_edit.setToolTip("The host's ONNX Runtime execution providers, comma-separated, e.g. "
                                       "CUDAExecutionProvider; refused when its onnxruntime lacks one")
        form = QFormLayout()
        form.addRow("Host", self.where)
        form.addRow("Providers there", self.providers_edit)
        self.buttons = ok_cancel(self, "Compare")
        stacked(self, intro, form, self.buttons)

    def host(self) -> str:
        return self.where.currentData()

    def providers(self) -> list[str]:
        return [p.strip() for p in self.providers_edit.text().split(",") if p.strip()]
