"""Dialogs of the Hosts panel: add/edit a host (nothing secret in it) and trust a host key."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel,
                               QLineEdit, QMessageBox, QPushButton, QSpinBox, QWidget)

from studio.core.errors import UserError
from studio.remote.hosts import HostEntry
from studio.targets.probe import DEFAULT_TOOLKIT

AUTH_LABELS = [("key", "Key file"), ("agent", "ssh-agent"), ("password", "Password (asked; kept only in the OS keyring)")]


class HostDialog(QDialog):
    """Edit the fields of a host entry; :meth:`entry` returns the validated entry."""

    def __init__(self, entry: HostEntry | None = None, other_hosts: list[str] = (), parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Edit host" if entry else "Add host")
        self._extra = dict(entry.extra) if entry else {}
        self.name = QLineEdit(entry.name if entry else "")
        self.name.setPlaceholderText("npu-box")
        self.host = QLineEdit(entry.host if entry else "")
        self.host.setPlaceholderText("192.168.1.20 or npu-box.lab")
        self.port = QSpinBox()
        self.port.setRange(1, 65535)
        self.port.setValue(entry.port if entry else 22)
        self.user = QLineEdit(entry.user if entry else "")
        self.user.setPlaceholderText("your local user name")
        self.auth = QComboBox()
        for key, label in AUTH_LABELS:
            self.auth.addItem(label, key)
        self.auth.setCurrentIndex([k for k, _ in AUTH_LABELS].index(entry.auth if entry else "key"))
        self.key_file = QLineEdit(entry.key_file or "" if entry else "")
        self.key_file.setPlaceholderText("~/.ssh/id_ed25519 (empty: the default keys)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._on_browse)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_file, 1)
        key_row.addWidget(browse)
        self._key_widgets = (self.key_file, browse)
        self.toolkit = QLineEdit(entry.toolkit or "" if entry else "")
        self.toolkit.setPlaceholderText(DEFAULT_TOOLKIT)
        self.toolkit.setToolTip("The CANN toolkit folder on the host, holding set_env.sh")
        self.proxy = QComboBox()
        self.proxy.setEditable(True)
        self.proxy.addItem("")
        self.proxy.addItems([h for h in other_hosts if not entry or h != entry.name])
        self.proxy.setCurrentText(entry.proxy_jump or "" if entry else "")
        self.proxy.setToolTip("Connect through another host (a host name here, or user@host:port)")
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #d9534f;")
        self.error.hide()
        form = QFormLayout(self)
        form.addRow("Name", self.name)
        form.addRow("Host", self.host)
        form.addRow("Port", self.port)
        form.addRow("User", self.user)
        form.addRow("Authentication", self.auth)
        form.addRow("Key file", key_row)
        form.addRow("CANN toolkit", self.toolkit)
        form.addRow("Proxy jump", self.proxy)
        form.addRow(self.error)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._on_accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.auth.currentIndexChanged.connect(self._on_auth_changed)
        self._on_auth_changed()
        self.setMinimumWidth(460)

    def entry(self) -> HostEntry:
        """The entry as typed; raises UserError when a field is wrong."""
        auth = self.auth.currentData()
        return HostEntry(name=self.name.text().strip(), host=self.host.text().strip(), port=self.port.value(),
                         user=self.user.text().strip(), auth=auth,
                         key_file=(self.key_file.text().strip() or None) if auth == "key" else None,
                         proxy_jump=self.proxy.currentText().strip() or None,
                         toolkit=self.toolkit.text().strip() or None, extra=self._extra)

    def _on_auth_changed(self) -> None:
        for widget in self._key_widgets:
            widget.setEnabled(self.auth.currentData() == "key")

    def _on_browse(self) -> None:
        from pathlib import Path

        path, _ = QFileDialog.getOpenFileName(self, "Private key", str(Path.home() / ".ssh"))
        if path:
            self.key_file.setText(path)

    def _on_accept(self) -> None:
        try:
            self.entry()
        except UserError as exc:
            self.error.setText(f"{exc.what}. {exc.fix or ''}")
            self.error.show()
            return
        self.accept()


def confirm_trust(parent: QWidget, host_name: str, address: str, key_type: str, fingerprint: str) -> bool:
    """Ask whether to trust an unknown host key, showing its SHA256 fingerprint."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Unknown host key")
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setText(f"<b>{host_name}</b> ({address}) is not known yet.<br>It presents this {key_type} key:"
                f"<pre>{fingerprint}</pre>Compare it with the server's fingerprint "
                "(<code>ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub</code> on the server) before trusting it.")
    trust = box.addButton("Trust", QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    return box.clickedButton() is trust


def explain_changed_key(parent: QWidget, host_name: str, what: str, fix: str, where: str) -> None:
    """Refuse a changed host key and say why, naming the known_hosts line."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Critical)
    box.setWindowTitle("Host key changed: connection refused")
    box.setText(f"{host_name}: {what}.")
    box.setInformativeText(f"Recorded in {where}.\n\n{fix}")
    box.exec()
