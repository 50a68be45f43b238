"""Where "Profile model…" runs: this computer or an SSH host (Studio's engine there).

The hosts come from the window's host context (the one host store); with no host added the
dialog is not shown and the model is profiled here, as before.
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QVBoxLayout, QWidget

HERE = "This computer"


class RunOnDialog(QDialog):
    """``host()`` is None for this computer, else the chosen host's name."""

    def __init__(self, model_name: str, hosts: list[str], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"Profile {model_name}")
        intro = QLabel(f"Profile {model_name} with ONNX Runtime. On a host, Studio's engine runs there (its venv "
                       "is made on first use, in ~/.cache/studio-remote) and the profile comes back here.", self)
        intro.setWordWrap(True)
        self.where = QComboBox(self)
        self.where.addItem(HERE, None)
        for name in hosts:
            self.where.addItem(name, name)
        self.where.setToolTip("Where the model runs (hosts: the Hosts panel / studio ssh add)")
        form = QFormLayout()
        form.addRow("Run on", self.where)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel,
                                        self)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Profile")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.buttons)

    def host(self) -> str | None:
        return self.where.currentData()
