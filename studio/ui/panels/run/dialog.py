"""Run > Edit Configurations…: the workspace's run configurations, one form per configuration."""

from __future__ import annotations

from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit,
                               QListWidget, QMessageBox, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget)

from studio.core.errors import UserError
from studio.runs.config import LOCAL, RunConfig, delete_config, load_configs, save_config
from studio.ui.widgets.dialog_parts import hinted

LOCAL_LABEL = "local (this computer)"


class RunConfigDialog(QDialog):
    """Add, edit and remove run configurations; each Save writes ``studio.toml`` at once."""

    def __init__(self, workspace, host_names: list[str] | None = None, select: str | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Run Configurations")
        self.workspace = workspace
        self._current: str | None = None
        self.list = QListWidget(self)
        self.list.currentTextChanged.connect(self._on_select)
        add, remove = QPushButton("Add", self), QPushButton("Remove", self)
        add.clicked.connect(self._on_add)
        remove.clicked.connect(self._on_remove)
        self.name = QLineEdit(self)
        self.target = QComboBox(self)
        self.target.setEditable(True)  # a host may be added later; its name can be typed
        self.target.addItems([LOCAL_LABEL, *(host_names or [])])
        self.workdir = hinted(self, "workspace folder here, login folder on a host")
        self.command = hinted(self, "./main ../data/test.jpg")
        self.env = hinted(self, "NAME=value, one per line", QPlainTextEdit, max_height=80)
        self.toolkit = hinted(self, "the host's CANN toolkit (e.g. /usr/local/Ascend/ascend-toolkit/latest)")
        self.upload = hinted(self, "deployment to upload first (its plan is shown before it runs)")
        self.problem = QLabel("", self)
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #c62828")
        form = QFormLayout()
        for label, widget in (("Name", self.name), ("Run on", self.target), ("Working folder", self.workdir),
                              ("Command line", self.command), ("Environment", self.env),
                              ("Toolkit path", self.toolkit), ("Upload first", self.upload)):
            form.addRow(label, widget)
        save = QPushButton("Save", self)
        save.clicked.connect(self.save_current)
        left = QVBoxLayout()
        left.addWidget(self.list, 1)
        row = QHBoxLayout()
        row.addWidget(add)
        row.addWidget(remove)
        left.addLayout(row)
        right = QVBoxLayout()
        right.addLayout(form)
        right.addWidget(self.problem)
        right.addWidget(save)
        right.addStretch(1)
        body = QHBoxLayout()
        body.addLayout(left, 1)
        body.addLayout(right, 3)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(body, 1)
        layout.addWidget(buttons)
        self.resize(760, 420)
        self._refresh(select)

    def configs(self) -> list[RunConfig]:
        return load_configs(self.workspace)

    def _refresh(self, select: str | None = None) -> None:
        names = [c.name for c in self.configs()]
        self.list.blockSignals(True)
        self.list.clear()
        self.list.addItems(names)
        self.list.blockSignals(False)
        if names:
            self.list.setCurrentRow(names.index(select) if select in names else 0)
        else:
            self._show(None)

    def _on_select(self, name: str) -> None:
        self._show(next((c for c in self.configs() if c.name == name), None))

    def _show(self, config: RunConfig | None) -> None:
        self._current = config.name if config else None
        config = config or RunConfig("", "")
        self.name.setText(config.name)
        self.target.setCurrentText(LOCAL_LABEL if config.is_local else config.target)
        self.workdir.setText(config.workdir)
        self.command.setText(config.command)
        self.env.setPlainText("\n".join(f"{k}={v}" for k, v in config.env.items()))
        self.toolkit.setText(config.toolkit)
        self.upload.setText(config.upload)
        self.problem.clear()

    def form_config(self) -> RunConfig:
        """The configuration the form shows (UserError for a bad environment line)."""
        env = {}
        for number, line in enumerate(self.env.toPlainText().splitlines(), start=1):
            if not line.strip():
                continue
            key, sep, value = line.partition("=")
            if not sep:
                raise UserError(f"Environment line {number} is not NAME=value", line, "Write NAME=value.")
            env[key.strip()] = value
        target = self.target.currentText().strip()
        return RunConfig(self.name.text().strip(), self.command.text(),
                         LOCAL if target in ("", LOCAL_LABEL) else target, self.workdir.text().strip(), env,
                         self.toolkit.text().strip(), self.upload.text().strip())

    def save_current(self) -> bool:
        """Validate and write the form; a problem is shown under the form, not raised."""
        try:
            config = self.form_config()
            save_config(self.workspace, config, replace=self._current)
        except UserError as exc:
            self.problem.setText(str(exc))
            return False
        self._refresh(config.name)
        return True

    def _on_add(self) -> None:
        names = {c.name for c in self.configs()}
        name = next(f"run {i}" for i in range(1, 1000) if f"run {i}" not in names)
        self._show(RunConfig(name, ""))
        self._current = None
        self.command.setFocus()

    def _on_remove(self) -> None:
        if self._current is None:
            return
        answer = QMessageBox.question(self, "Remove", f"Remove the run configuration {self._current!r}?")
        if answer == QMessageBox.StandardButton.Yes:
            delete_config(self.workspace, self._current)
            self._refresh()
