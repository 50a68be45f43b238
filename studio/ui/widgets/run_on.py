"""Where a model job runs ("Profile model…", "FP16 check"): this computer or an SSH host, where
Studio's own engine runs.

The hosts come from the window's host context (the one host store); with no host added the
panels do not show the dialog and run here, as before.
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QDialog, QFormLayout, QLabel, QWidget

from studio.ui.widgets.dialog_parts import ok_cancel, stacked

HERE = "This computer"


class RunOnDialog(QDialog):
    """``host()`` is None for this computer, else the chosen host's name."""

    def __init__(self, model_name: str, hosts: list[str], parent: QWidget | None = None,
                 verb: str = "Profile", what: str = "the profile comes back here", ok_text: str | None = None,
                 intro: str | None = None):
        """``intro`` is the first sentence (default: "VERB MODEL with ONNX Runtime."); ``what`` says
        what comes back from a host."""
        super().__init__(parent)
        self.setWindowTitle(f"{verb} {model_name}")
        first = intro or f"{verb} {model_name} with ONNX Runtime."
        intro = QLabel(f"{first} On a host, Studio's engine runs there (its venv is made on first use, in "
                       f"~/.cache/studio-remote) and {what}.", self)
        intro.setWordWrap(True)
        self.where = QComboBox(self)
        self.where.addItem(HERE, None)
        for name in hosts:
            self.where.addItem(name, name)
        self.where.setToolTip("Where the model runs (hosts: the Hosts panel / studio ssh add)")
        form = QFormLayout()
        form.addRow("Run on", self.where)
        self.buttons = ok_cancel(self, ok_text or verb)
        stacked(self, intro, form, self.buttons)

    def host(self) -> str | None:
        return self.where.currentData()
