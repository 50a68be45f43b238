"""The dialog that adds a deployment: name, host, local folder, remote folder, excludes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel,
                               QLineEdit, QPlainTextEdit, QPushButton, QWidget)

from studio.core.errors import UserError
from studio.tools.deploy.deployments import Deployment
from studio.ui import style


class AddDeploymentDialog(QDialog):
    """Asks for a new deployment; ``deployment`` holds it after ``accept``.

    OK stays disabled until every field is filled in. With no SSH host yet, an "Add a host…"
    button calls ``add_host`` (which adds one and returns the host names) and lists the new host.
    """

    def __init__(self, hosts: list[str], local: Path | None = None, parent: QWidget | None = None,
                 add_host: Callable[[], list[str]] | None = None):
        super().__init__(parent)
        self._add_host = add_host
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
        self.error = style.problem(QLabel(self))
        form = QFormLayout(self)
        form.addRow("Name", self.name)
        form.addRow("Host", self.host)
        form.addRow("Local folder", row)
        form.addRow("Remote folder", self.remote)
        form.addRow("Exclude", self.excludes)
        self.no_host = QWidget(self)  # shown while there is no host to pick
        no_host = QHBoxLayout(self.no_host)
        no_host.setContentsMargins(0, 0, 0, 0)
        no_host.addWidget(style.muted(QLabel("No SSH host yet.", self.no_host)))
        self.add_host_button = QPushButton("Add a host…", self.no_host)
        self.add_host_button.clicked.connect(self._on_add_host)
        self.add_host_button.setEnabled(add_host is not None)
        no_host.addWidget(self.add_host_button)
        no_host.addStretch(1)
        self.no_host.setVisible(not hosts)
        form.addRow("", self.no_host)
        form.addRow(self.error)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self._on_accept)
        buttons.rejected.connect(self.reject)
        self.ok_button = buttons.button(QDialogButtonBox.StandardButton.Ok)
        form.addRow(buttons)
        for edit in (self.name, self.local, self.remote):
            edit.textChanged.connect(self._update_ok)
        self.host.currentTextChanged.connect(self._update_ok)
        self._update_ok()
        self.resize(520, self.sizeHint().height())

    def missing(self) -> list[str]:
        """The fields still empty (OK is enabled when none is)."""
        fields = (("name", self.name.text()), ("host", self.host.currentText()),
                  ("local folder", self.local.text()), ("remote folder", self.remote.text()))
        return [label for label, text in fields if not text.strip()]

    def _update_ok(self, *_args) -> None:
        missing = self.missing()
        self.ok_button.setEnabled(not missing)
        self.ok_button.setToolTip(f"Fill in the {', '.join(missing)} first" if missing else "")

    def _on_add_host(self) -> None:
        hosts = self._add_host() if self._add_host is not None else []
        known = {self.host.itemText(i) for i in range(self.host.count())}
        self.host.addItems([h for h in hosts if h not in known])
        if hosts and not self.host.currentText():
            self.host.setCurrentIndex(0)
        self.no_host.setVisible(not hosts)

    def _on_browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Local folder", self.local.text())
        if folder:
            self.local.setText(folder)

    def _on_accept(self) -> None:
        from studio.tools.deploy.deployments import check_excludes

        patterns = [p for p in self.excludes.toPlainText().splitlines() if p.strip()]
        try:
            check_excludes(patterns)
            local = str(Path(self.local.text()).expanduser().resolve()) if self.local.text() else ""
            self.deployment = Deployment(self.name.text().strip(), self.host.currentText().strip(), local,
                                         self.remote.text().strip(), patterns)
        except UserError as exc:
            self.error.setText(f"{exc.what}. {exc.fix or ''}")
            return
        self.accept()
