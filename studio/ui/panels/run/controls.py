"""The Run menu and toolbar: pick a run configuration, run it, stop it, edit the configurations.

Installed by the main window with one call; it reads the configurations from the window's open
workspace (the same object the window saves, so nothing is overwritten) and starts runs in the
Run panel.
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QComboBox, QMainWindow, QToolBar

from studio.core.errors import UserError
from studio.runs.config import load_configs

NO_WORKSPACE = "(open a workspace)"


class RunControls(QObject):
    """Run menu + toolbar bound to a main window (which has ``workspace``, ``panels``, ``notifier``)."""

    def __init__(self, window: QMainWindow, before=None):
        super().__init__(window)
        self.window = window
        from studio.ui.panels.run.host_actions import HostActions

        # the host actions of this menu and of the profiler's and accuracy panel's toolbars
        self.host = HostActions(window, self.edit, lambda: self.combo.currentText())
        self.profile, self.dump, self.dump_compare = self.host.profile, self.host.dump, self.host.dump_compare
        self.bench = self.host.bench
        self.menu = window.menuBar().addMenu("&Run") if before is None else None
        if self.menu is None:
            from PySide6.QtWidgets import QMenu

            self.menu = QMenu("&Run", window)
            window.menuBar().insertMenu(before, self.menu)
        self.run_action = self._action("&Run", self.run_selected, shortcut="Shift+F10")
        self.stop_action = self._action("&Stop All Runs", self.stop_all, shortcut="Ctrl+F2")
        self.menu.addSeparator()
        self.profile_action = self._action("&Profile on Host…", self.ask_profile, "Run the selected configuration "
                                           "under msprof and open its PROF_ folder")
        self.dump_action = self._action("&Dump on Host…", self.ask_dump, "Run the selected configuration with a "
                                        "dump acl.json and open the dumps")
        self.compare_action = self._action("Dump on Host and &Compare…", self.ask_dump_compare, "Dump on the host "
                                           "and, with the same inputs, the original model here; compare")
        self.bench_action = self._action("&Benchmark .om…", self.ask_bench, "Time an .om with msame or ais_bench "
                                         "where the selected configuration runs")
        self.menu.addSeparator()
        self.edit_action = self._action("&Edit Configurations…", self.edit)
        self.configs_menu = self.menu.addMenu("Run &Configuration")
        self.menu.aboutToShow.connect(self.refresh)
        self.toolbar = QToolBar("Run", window)
        self.toolbar.setObjectName("toolbar_run")
        self.combo = QComboBox(self.toolbar)
        self.combo.setMinimumContentsLength(16)
        self.combo.setToolTip("Run configuration")
        self.toolbar.addWidget(self.combo)
        self.toolbar.addAction(self.run_action)
        self.toolbar.addAction(self.stop_action)
        self.toolbar.addAction(self.edit_action)
        window.addToolBar(self.toolbar)
        if hasattr(window, "workspace_opened"):
            window.workspace_opened.connect(lambda _ws: self.refresh())
        self.refresh()

    def _action(self, text: str, slot, tip: str = "", shortcut: str = "") -> QAction:
        """A Run menu entry calling ``slot``, with its tooltip and shortcut when given."""
        action = self.menu.addAction(text)
        if tip:
            action.setToolTip(tip)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        return action

    @property
    def workspace(self):
        return getattr(self.window, "workspace", None)

    def refresh(self) -> None:
        """Fill the combo box and the menu from the workspace's configurations."""
        current = self.combo.currentText()
        names = []
        if self.workspace is not None:
            try:
                names = [c.name for c in load_configs(self.workspace)]
            except UserError as exc:
                self.window.notifier.report_exception(exc, context="Run configurations")
        self.combo.clear()
        self.combo.addItems(names or [NO_WORKSPACE if self.workspace is None else "(no run configurations)"])
        self.combo.setEnabled(bool(names))
        self.run_action.setEnabled(bool(names))  # the host actions stay enabled: they explain what is missing
        if current in names:
            self.combo.setCurrentText(current)
        self.configs_menu.clear()
        for name in names:
            action = self.configs_menu.addAction(name)
            action.triggered.connect(lambda _=False, n=name: self.run(n))

    def run_selected(self) -> None:
        if self.combo.isEnabled():
            self.run(self.combo.currentText())

    def run(self, name: str):
        """Start the configuration called ``name`` in the Run panel; returns its console."""
        try:
            config = next((c for c in load_configs(self.workspace) if c.name == name), None)
            if config is None:
                raise UserError(f"No run configuration called {name!r}", "Run menu", "Edit the configurations.")
            console = self.window.panels["run"].start(config)
        except UserError as exc:
            self.window.notifier.report_exception(exc, context="Run")
            return None
        self.window.show_panel("run")
        return console

    def stop_all(self) -> None:
        self.window.panels["run"].stop_all()

    def edit(self):
        """Open the configurations dialog (non-modal result: the menu refreshes when it closes)."""
        from studio.ui.panels.run.dialog import RunConfigDialog

        if self.workspace is None:
            self.window.notifier.report_exception(
                UserError("Run configurations live in a workspace", "Run > Edit Configurations…",
                          "Open or create a workspace first (File > New Workspace…)."), context="Run")
            return None
        dialog = RunConfigDialog(self.workspace, select=self.combo.currentText(), parent=self.window)
        dialog.finished.connect(lambda _code: self.refresh())
        dialog.open()
        return dialog

    # ---------------------------------------------------------------- host actions
    def ask_profile(self):
        return self.host.ask("profile")

    def ask_dump(self):
        return self.host.ask("dump")

    def ask_dump_compare(self):
        return self.host.ask("dump_compare")

    def ask_bench(self):
        return self.host.ask("bench")
