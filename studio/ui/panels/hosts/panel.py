"""The Hosts panel: SSH hosts, "Test connection" as a checklist, host-key trust, open a terminal."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.core.errors import UserError
from studio.core.formats import Detected
from studio.remote.hosts import HostEntry, HostStore
from studio.ui import style
from studio.ui.jobs import JobRunner
from studio.ui.links import PanelLinks
from studio.ui.panels.base import Panel
from studio.ui.panels.hosts import dialogs
from studio.ui.panels.hosts.checklist import Checklist
from studio.ui.widgets.empty_state import EmptyState


class HostsPanel(Panel):
    """Host entries (hosts.toml), their connection checks and their keys."""

    NAME = "hosts"
    TITLE = "Hosts"
    AREA = Qt.DockWidgetArea.RightDockWidgetArea

    def __init__(self, runner: JobRunner, parent: QWidget | None = None, links: PanelLinks | None = None):
        super().__init__(runner, parent, links)
        self.ssh_config_path = None  # None = ~/.ssh/config
        self._job = None
        self._summaries: dict[str, str] = {}  # the last test's one-line outcome per host
        self._list = QTreeWidget(self)
        self._list.setHeaderLabels(["Name", "Address", "Auth", "CANN toolkit"])
        self._list.setRootIsDecorated(False)
        self._list.setUniformRowHeights(True)
        self._list.setAlternatingRowColors(True)
        self._list.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self._list.header().setStretchLastSection(True)
        self._list.itemSelectionChanged.connect(self._on_selection)
        self._list.itemDoubleClicked.connect(lambda *_: self._on_edit())
        self._buttons: dict[str, QPushButton] = {}
        row1, row2 = QHBoxLayout(), QHBoxLayout()
        for key, label, handler, row in [
                ("add", "Add…", self._on_add, row1), ("import", "Import from ~/.ssh/config…", self._on_import, row1),
                ("edit", "Edit…", self._on_edit, row1), ("remove", "Remove", self._on_remove, row1),
                ("test", "Test connection", self._on_test, row2), ("terminal", "Open terminal", self._on_terminal, row2),
                ("cancel", "Cancel test", self._on_cancel, row2)]:
            button = QPushButton(label, self)
            button.clicked.connect(handler)
            row.addWidget(button)
            self._buttons[key] = button
        row1.addStretch(1)
        row2.addStretch(1)
        self._state = QLabel(self)
        self._state.setWordWrap(True)
        self._state.setContentsMargins(4, 2, 4, 2)
        self.checklist = Checklist(self)
        self._empty = EmptyState("No SSH host yet", "Add the machines Studio runs, converts, profiles and deploys "
                                 "on (also: <code>studio ssh add NAME --host HOST</code>).", self)
        self._empty.add_action("Add a host…", self._on_add)
        self._empty.add_action("Import from ~/.ssh/config…", self._on_import)
        top = QWidget(self)
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addLayout(row1)
        top_layout.addWidget(self._list, 1)
        top_layout.addLayout(row2)
        bottom = QWidget(self)
        bottom_layout = QVBoxLayout(bottom)
        bottom_layout.setContentsMargins(0, 0, 0, 0)
        bottom_layout.addWidget(self._state)
        bottom_layout.addWidget(self.checklist, 1)
        bottom_layout.addStretch(0)
        self.checklist.hide()  # shown with the first test's result; the hint above says what to do
        splitter = self._splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(top)
        splitter.addWidget(bottom)
        splitter.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(style.GAP, style.GAP, style.GAP, style.GAP)
        layout.addWidget(self._empty, 1)
        layout.addWidget(splitter, 1)
        self.links.add_host.connect(self._on_add)
        self.refresh()

    @property
    def store(self) -> HostStore:
        """The window's host entries (shared through the host context)."""
        return self.host_context.store

    # -- list --------------------------------------------------------------------------------
    def refresh(self, select: str | None = None) -> None:
        """Re-read hosts.toml and show its entries."""
        select = select or self.selected_name()
        try:
            self.host_context.reload()
        except UserError as exc:
            self.status.emit(f"Hosts: {exc.what}")
        self._list.clear()
        for entry in self.store.hosts.values():
            auth = entry.auth if entry.auth != "key" else (entry.key_file or "default keys")
            item = QTreeWidgetItem([entry.name, entry.address + (f" via {entry.proxy_jump}" if entry.proxy_jump else ""),
                                    auth, entry.toolkit or "default"])
            item.setData(0, Qt.ItemDataRole.UserRole, entry.name)
            for column in range(4):
                item.setToolTip(column, item.text(column))
            self._list.addTopLevelItem(item)
            if entry.name == select:
                self._list.setCurrentItem(item)
        if self._list.currentItem() is None and self._list.topLevelItemCount():
            self._list.setCurrentItem(self._list.topLevelItem(0))
        has_hosts = bool(self.store.hosts)
        self._splitter.setVisible(has_hosts)  # the empty state has the buttons that add one
        self._empty.setVisible(not has_hosts)
        self._on_selection()

    def selected_name(self) -> str | None:
        item = self._list.currentItem() if hasattr(self, "_list") else None
        return item.data(0, Qt.ItemDataRole.UserRole) if item else None

    def select(self, name: str) -> None:
        for i in range(self._list.topLevelItemCount()):
            if self._list.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole) == name:
                self._list.setCurrentItem(self._list.topLevelItem(i))

    def _on_selection(self) -> None:
        chosen = self.selected_name() is not None
        busy = self._job is not None
        for key in ("edit", "remove", "terminal"):
            self._buttons[key].setEnabled(chosen)
        self._buttons["test"].setEnabled(chosen and not busy)
        self._buttons["cancel"].setVisible(busy)
        if not busy:
            hint = "Select a host and press <b>Test connection</b> for a checklist of what works " \
                   "and what the host can run." if chosen else ""
            self._state.setText(self._summaries.get(self.selected_name(), hint))

    def _save(self, entry: HostEntry, replacing: str | None = None) -> None:
        if replacing and replacing != entry.name:
            self.store.hosts.pop(replacing, None)
        self.store.put(entry)
        self.store.save()
        self.refresh(select=entry.name)
        self.status.emit(f"Hosts: saved {entry.name} ({entry.address})")

    # -- add / edit / import / remove --------------------------------------------------------
    def _run_dialog(self, entry: HostEntry | None, replacing: str | None) -> None:
        dialog = dialogs.HostDialog(entry, sorted(self.store.hosts), self)
        if dialog.exec():
            self._save(dialog.entry(), replacing)

    def _on_add(self) -> None:
        self._run_dialog(None, None)

    def _on_edit(self) -> None:
        name = self.selected_name()
        if name:
            self._run_dialog(self.store.get(name), name)

    def _on_import(self):
        """Read the ssh configuration on a worker, offer its aliases, then the entry's dialog.
        Returns the reading job's handle."""
        from studio.remote.ssh_config import read_job

        path = self.ssh_config_path
        handle = self.runner.start("Reading the ssh configuration", lambda cancel: read_job(path))
        handle.finished.connect(self._offer_aliases)
        handle.failed.connect(self._import_failed)  # the window's notifier shows the message itself
        return handle

    def _offer_aliases(self, config) -> None:
        from studio.remote.ssh_config import entry_job

        aliases = config.aliases()
        if not aliases:
            QMessageBox.information(self, "Import from ssh config", f"No Host entries in {config.path}.")
            return
        alias = self.choose_alias(str(config.path), aliases)
        if alias:
            handle = self.runner.start(f"Reading {alias} from the ssh configuration",
                                       lambda cancel: entry_job(config, alias))
            handle.finished.connect(lambda found: self._imported(*found))
            handle.failed.connect(self._import_failed)

    def choose_alias(self, path: str, aliases: list[str]) -> str | None:
        """Ask which alias to import (a dialog; tests replace this method)."""
        alias, ok = QInputDialog.getItem(self, "Import from ssh config", f"Host in {path}:", aliases, 0, False)
        return alias if ok and alias else None

    def show_import_notes(self, notes: list[str]) -> None:
        """Say what of the configuration was not applied (a dialog; tests replace this method)."""
        QMessageBox.information(self, "Import from ssh config", "\n\n".join(notes))

    def _imported(self, entry: HostEntry, notes: list[str]) -> None:
        if notes:
            self.show_import_notes(notes)
        self._run_dialog(entry, None)

    def _import_failed(self, exc: BaseException, _tb: str = "") -> None:
        self.status.emit(f"Hosts: import from ssh config: {getattr(exc, 'what', None) or exc}")

    def _on_remove(self) -> None:
        name = self.selected_name()
        if name and QMessageBox.question(self, "Remove host", f"Forget the host {name}?") == \
                QMessageBox.StandardButton.Yes:
            self.store.remove(name)
            self.store.save()
            self.refresh()

    # -- test connection ---------------------------------------------------------------------
    def test_connection(self, name: str):
        """Start the checklist job for ``name``; returns its JobHandle."""
        from studio.targets.probe import probe
        from studio.targets.ssh import SshTarget

        entry = self.store.get(name)
        target = SshTarget(entry, self.host_context)
        handle = self.runner.start(f"Testing {name}", lambda cancel: probe(target, cancel=cancel), key=target.key)
        self._job = handle
        self._state.setText(f"Testing <b>{name}</b> ({entry.address})…")
        self.checklist.clear()
        self.checklist.show()
        handle.progress.connect(lambda step: self._state.setText(f"{name}: {step.message}…"))
        handle.finished.connect(lambda result: self._on_tested(name, result))
        handle.failed.connect(lambda exc, _tb: self._on_test_failed(name, exc))
        handle.ended.connect(self._on_test_ended)
        self._on_selection()
        return handle

    def _on_test(self) -> None:
        name = self.selected_name()
        if name:
            self.test_connection(name)

    def _on_cancel(self) -> None:
        if self._job is not None:
            self._job.cancel()

    def _on_test_ended(self) -> None:
        self._job = None
        self._on_selection()

    def _on_tested(self, name: str, result) -> None:
        self.checklist.show_result(result)
        counts = {status: sum(i.status == status for i in result.items) for status in ("ok", "missing", "failed")}
        failed = [i.label for i in result.items if i.status == "failed"]
        summary = "all checks passed" if counts["ok"] == len(result.items) else \
            f"{counts['ok']} ok, {counts['missing']} missing, {counts['failed']} failed" + \
            (f" ({', '.join(failed)})" if failed else "")
        self._summaries[name] = f"<b>{name}</b> ({result.address}): {summary}"
        self._state.setText(self._summaries[name])
        self.status.emit(f"Hosts: {name}: {summary}")
        if result.unknown_key is not None:
            exc = result.unknown_key
            if self.confirm_trust(name, result.address, exc.key_type, exc.fingerprint):
                self.trust_key(name, exc.key_type, exc.key_blob)
                self.test_connection(name)
        elif result.changed_key is not None:
            exc = result.changed_key
            dialogs.explain_changed_key(self, name, exc.what, exc.fix or "", f"{exc.file}:{exc.line}")

    def _on_test_failed(self, name: str, exc: BaseException) -> None:
        self._summaries[name] = f"<b>{name}</b>: the test stopped: {getattr(exc, 'what', None) or exc}"
        self._state.setText(self._summaries[name])

    def confirm_trust(self, name: str, address: str, key_type: str, fingerprint: str) -> bool:
        """Ask the user (a dialog; tests replace this method)."""
        return dialogs.confirm_trust(self, name, address, key_type, fingerprint)

    def trust_key(self, name: str, key_type: str, key_blob: bytes) -> None:
        entry = self.store.get(name)
        path = self.host_context.known_hosts.trust(entry.host, entry.port, key_type, key_blob)
        self.status.emit(f"Hosts: trusted the key of {name} (recorded in {path})")

    # -- terminal ----------------------------------------------------------------------------
    def _on_terminal(self) -> None:
        name = self.selected_name()
        if name:
            self.links.open_terminal.emit(name)
            self.links.focus.emit("terminal")

    def open_file(self, detected: Detected) -> None:
        self.status.emit(f"Hosts: {detected.path.name} is not a host file")
