"""The Terminal panel: interactive shells on SSH hosts, one tab per session."""

from __future__ import annotations

import os

from PySide6.QtCore import QCoreApplication, QObject, Qt, Signal
from PySide6.QtWidgets import QComboBox, QPushButton, QTabWidget, QVBoxLayout, QWidget

from studio.core.formats import Detected
from studio.terminal.shell import ShellSession
from studio.ui.jobs import JobRunner
from studio.ui.links import PanelLinks
from studio.ui.panels.base import Panel
from studio.ui.panels.terminal.view import TerminalView
from studio.ui.widgets import boxes
from studio.ui.widgets.empty_state import EmptyState
from studio.ui.widgets.secret_prompt import GuiSecretPrompt


LOCAL_LABEL = "This computer (local shell)"


class _Bridge(QObject):
    """Carries "a new snapshot is ready" from the session's reader thread to the GUI thread."""

    updated = Signal()

    def __init__(self, parent: QObject):
        super().__init__(parent)
        self.pending = False

    def notify(self) -> None:  # reader thread: at most one queued event at a time
        if not self.pending:
            self.pending = True
            self.updated.emit()


class TerminalTab(QWidget):
    """One session and its view. ``title_changed(tab)``: the shell set a window title, or the
    session opened or closed."""

    title_changed = Signal(object)

    def __init__(self, session_factory, host_name: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.host_name = host_name
        self.title = ""
        self._state = "connecting"
        self.view = TerminalView(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        self._bridge = _Bridge(self)
        self._bridge.updated.connect(self._on_updated, Qt.ConnectionType.QueuedConnection)
        # Before the first layout the view is tiny; start at 80x24, the resize that follows fixes it.
        columns, lines = self.view.grid_size() if self.view.isVisible() else (80, 24)
        self.session: ShellSession = session_factory(columns, lines, self._bridge.notify)
        self.view.send.connect(self.session.write)
        self.view.resized.connect(self.session.resize)
        self.session.start()

    def _on_updated(self) -> None:
        self._bridge.pending = False
        snap = self.session.snapshot
        self.view.set_snapshot(snap)
        if snap.title != self.title or self.session.state != self._state:
            self.title, self._state = snap.title, self.session.state
            self.title_changed.emit(self)

    def close_session(self) -> None:
        self.session.close()


class TerminalPanel(Panel):
    """Shells on the hosts of the Hosts panel (paramiko pty, xterm-256color emulation)."""

    NAME = "terminal"
    TITLE = "Terminal"
    AREA = Qt.DockWidgetArea.BottomDockWidgetArea

    def __init__(self, runner: JobRunner, parent: QWidget | None = None, links: PanelLinks | None = None):
        super().__init__(runner, parent, links)
        self._prompt = GuiSecretPrompt(self)
        self._hosts = QComboBox(self)
        self._hosts.setMinimumContentsLength(16)
        self._hosts.setToolTip("Hosts come from the Hosts panel (or `studio ssh add`)")
        self._open = QPushButton("Open terminal", self)
        self._open.clicked.connect(self._on_open_clicked)
        self._tabs = QTabWidget(self)
        self._tabs.setTabsClosable(True)
        self._tabs.setDocumentMode(True)
        self._tabs.tabCloseRequested.connect(self._on_tab_close)
        self._empty = EmptyState("No terminal open", "", self)
        self._empty_open = self._empty.add_action("Open terminal", self._on_open_clicked)
        self._empty_add = self._empty.add_action("Add a host…", self.links.add_host.emit,
                                                 "Add an SSH host (the Hosts panel's Add dialog)")
        bar = boxes.row(self, "Host:", (self._hosts, 1), self._open, margins=(6, 4, 6, 0))
        boxes.column(self, bar, (self._tabs, 1), (self._empty, 1))
        self.links.open_terminal.connect(self.open_terminal)
        app = QCoreApplication.instance()
        if app is not None:  # docked panels get no closeEvent when the window quits
            app.aboutToQuit.connect(self.close_all)
        self.refresh_hosts()

    # -- hosts -------------------------------------------------------------------------------
    def refresh_hosts(self) -> None:
        """Re-read the host list (hosts.toml) into the picker."""
        current = self._hosts.currentText()
        try:
            names = self.host_context.reload() and self.host_context.names()
        except Exception as exc:  # a broken hosts.toml is shown, not raised
            names = []
            self.status.emit(f"Terminal: cannot read hosts: {exc}")
        self._hosts.clear()
        for name in names:
            self._hosts.addItem(name, name)
        if os.name == "posix":  # a shell on this computer needs no host (pty: POSIX only)
            self._hosts.addItem(LOCAL_LABEL, None)
        if current:
            self._hosts.setCurrentText(current)
        self._update_empty_state()

    def showEvent(self, event) -> None:  # Qt override: hosts may have been added meanwhile
        self.refresh_hosts()
        super().showEvent(event)

    def _update_empty_state(self) -> None:
        has_tabs = self._tabs.count() > 0
        self._tabs.setVisible(has_tabs)
        self._empty.setVisible(not has_tabs)
        has_hosts = self._hosts.count() > 1
        self._empty_open.setEnabled(self._hosts.count() > 0)
        self._empty_add.setVisible(not has_hosts)
        if has_hosts:
            self._empty.set_message("No terminal open", "Pick a host and press <b>Open terminal</b> for an "
                                    "interactive shell (several tabs at once). Copy with Ctrl+Shift+C, paste with "
                                    "Ctrl+Shift+V, scroll back with Shift+PageUp or the mouse wheel.")
        else:
            self._empty.set_message("No SSH host yet", "Add one, then open a terminal on it here (also: "
                                    "<code>studio ssh add NAME --host HOST</code>). "
                                    f"<b>{LOCAL_LABEL}</b> opens a shell on this computer.")

    # -- sessions ----------------------------------------------------------------------------
    def open_terminal(self, host_name: str) -> TerminalTab:
        """Open a new tab with a shell on ``host_name`` (the connection is made off the GUI thread)."""
        context = self.host_context
        entry = context.entry(host_name)
        asker = self._prompt.asker()

        def factory(columns: int, lines: int, notify) -> ShellSession:
            # A session owns its connection (closing the tab closes it), so it is not a pooled one.
            opener = lambda: context.connect(entry, asker)  # noqa: E731
            return ShellSession(opener, columns, lines, title=host_name, on_update=notify)

        tab = TerminalTab(factory, host_name, self._tabs)
        tab.title_changed.connect(self._on_tab_title)
        index = self._tabs.addTab(tab, host_name)
        self._tabs.setTabToolTip(index, f"{entry.name}: {entry.address}")
        self._tabs.setCurrentIndex(index)
        self._update_empty_state()
        tab.view.setFocus()
        self.status.emit(f"Terminal: connecting to {entry.address}")
        return tab

    def open_local_terminal(self) -> TerminalTab:
        """Open a new tab with the user's shell on this computer (a local pty)."""
        from studio.terminal.local_pty import LocalShell

        def factory(columns: int, lines: int, notify) -> ShellSession:
            return ShellSession(LocalShell, columns, lines, title="this computer", on_update=notify)

        tab = TerminalTab(factory, LOCAL_LABEL, self._tabs)
        tab.title_changed.connect(self._on_tab_title)
        index = self._tabs.addTab(tab, "local")
        self._tabs.setTabToolTip(index, LOCAL_LABEL)
        self._tabs.setCurrentIndex(index)
        self._update_empty_state()
        tab.view.setFocus()
        return tab

    def _on_tab_title(self, tab: TerminalTab) -> None:
        index = self._tabs.indexOf(tab)
        if index < 0:
            return
        label = "local" if tab.host_name == LOCAL_LABEL else tab.host_name
        closed = tab.session.state == "closed"
        self._tabs.setTabText(index, f"{label} (closed)" if closed else label)
        # The shell's title (usually user@host: folder) can be long: the tooltip has all of it.
        self._tabs.setTabToolTip(index, "\n".join(filter(None, [tab.host_name, tab.title,
                                                                 "session ended" if closed else ""])))

    def tabs(self) -> list[TerminalTab]:
        return [self._tabs.widget(i) for i in range(self._tabs.count())]

    def _on_open_clicked(self) -> None:
        if self._hosts.currentData() is None:
            self.open_local_terminal()
        else:
            self.open_terminal(self._hosts.currentData())

    def _on_tab_close(self, index: int) -> None:
        tab = self._tabs.widget(index)
        self._tabs.removeTab(index)
        if isinstance(tab, TerminalTab):
            tab.close_session()
            tab.deleteLater()
        self._update_empty_state()

    def close_all(self) -> None:
        """End every session (the window is closing)."""
        for tab in self.tabs():
            tab.close_session()

    def closeEvent(self, event) -> None:  # Qt override
        self.close_all()
        super().closeEvent(event)

    def open_file(self, detected: Detected) -> None:
        self.status.emit(f"Terminal: {detected.path.name} is not something a terminal opens")
