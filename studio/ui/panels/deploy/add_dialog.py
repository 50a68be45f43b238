"""The dialog that adds a deployment: name, host, local folder, remote folder, excludes."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel,
                               QLineEdit, QPlainTextEdit, QPushButton, QWidget)

from studio.errors import UserError
from studio.tools.deploy.deployments import Deployment


class AddDeploymentDialog(QDialog):
    """Asks for a new deployment; ``deployment`` holds it after ``accept``."""

    def __init__(self, hosts: list[str], local: Path | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Add Deployment")
        self.deployment: Deployment | None = None
        self.name = QLineEdit(self)
        self.host = QComboBox(self)
        self.host.setEditable(True)
        self.host.addItems(hosts)
        self.local = QLineEdit(str(local) if local else "", self)
        browse = QPushButton("Browse…", self)
        browse.clicked.connect(self._on_browse)
        row = QHBoxLayout()
        row.addWidget(self.local, 1)
        row.addWidget(browse)
        self.remote = QLineEdit(self)
        self.remote.setPlaceholderText("/home/me/project")
        self.excludes = QPlainTextEdit(self)
        self.excludes.setPlaceholderText("one gitignore pattern per line, e.g.\n*.om\nbuild/")
        self.excludes.setFixedHeight(80)
        self.error = QLabel(self)
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c62828;")
        form = QFormLayout(self)
        form.addRow("Name", self.name)
        form.addRow("Host", self.host)
        form.addRow("Local folder", row)
        form.addRow("Remote folder", self.remote)
        form.addRow("Exclude", self.excludes)
        if not hosts:
            form.addRow(QLabel("No SSH hosts yet: add one with `studio ssh add NAME --host HOST`.", self))
        form.addRow(self.error)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self._on_accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.resize(520, self.sizeHint().height())

    def _on_browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Local folder", self.local.text())
        if folder:
            self.local.setText(folder)

    def _on_accept(self) -> None:
        from studio.tools.deploy.ignore import Excludes

        patterns = [p for p in self.excludes.toPlainText().splitlines() if p.strip()]
        try:
            Excludes(patterns)
            local = str(Path(self.local.text()).expanduser().resolve()) if self.local.text() else ""
            self.deployment = Deployment(self.name.text().strip(), self.host.currentText().strip(), local,
                                         self.remote.text().strip(), patterns)
        except UserError as exc:
            self.error.setText(f"{exc.what}. {exc.fix or ''}")
            return
        self.accept()
