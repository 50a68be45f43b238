"""The Run panel: a console tab per run, streaming output; Stop kills the run's process group."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QTabWidget, QVBoxLayout, QWidget

from studio.errors import UserError
from studio.formats import Detected
from studio.runs.config import RunConfig
from studio.runs.runner import run_configuration
from studio.runs.where import local_target
from studio.ui.jobs import JobRunner
from studio.ui.links import PanelLinks
from studio.ui.panels.base import Panel
from studio.ui.panels.run.console import RunConsole

MAX_TABS = 12


class RunPanel(Panel):
    """Consoles of the runs started from the Run menu, newest first."""

    NAME = "run"
    TITLE = "Run"

    def __init__(self, runner: JobRunner, parent: QWidget | None = None, links: PanelLinks | None = None):
        super().__init__(runner, parent, links)
        self.tabs = QTabWidget(self)
        self.tabs.setTabsClosable(True)
        self.tabs.tabCloseRequested.connect(self._on_close_tab)
        self.empty = QLabel("Each run of a run configuration opens a console here.\n"
                            "Add configurations with Run > Edit Configurations…, start them with Run > Run "
                            "(Shift+F10) or the Run toolbar.", self)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setStyleSheet("color: palette(mid)")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.empty)
        layout.addWidget(self.tabs, 1)
        self.tabs.hide()

    def open_file(self, detected: Detected) -> None:  # the Run panel opens no files
        raise UserError("The Run panel does not open files", detected.path, "Open it in its tool's panel.")

    def start(self, config: RunConfig) -> RunConsole:
        """Start ``config`` and show its console (raises UserError for a configuration that cannot run)."""
        config.validate()
        if not config.is_local:
            raise UserError(f"Run configuration {config.name!r} runs on host {config.target!r}, which this build "
                            "cannot reach yet", "Run > Edit Configurations…", "Choose local (this computer).")
        folder = self.workspace_folder
        workdir = config.workdir
        if folder is not None and (not workdir or not workdir.startswith("/")):
            workdir = str((folder / workdir).resolve()) if workdir else str(folder)
        console = RunConsole(config.name, "this computer", self)
        target = local_target()
        handle = self.runner.start(f"Run {config.name}", lambda cancel: console.wrap(
            run_configuration(config, target, workdir or None, cancel=cancel)), key=None)
        console.attach(handle)
        console.ended.connect(self._on_ended)
        self.tabs.insertTab(0, console, f"▶ {config.name}")
        self.tabs.setCurrentIndex(0)
        while self.tabs.count() > MAX_TABS:  # keep the newest; finished ones go first
            self._on_close_tab(self.tabs.count() - 1)
        self.empty.hide()
        self.tabs.show()
        self.status.emit(f"running {config.name}")
        return console

    def consoles(self) -> list[RunConsole]:
        return [self.tabs.widget(i) for i in range(self.tabs.count())]

    def stop_all(self) -> None:
        for console in self.consoles():
            console.stop()

    def _on_ended(self, console: RunConsole) -> None:
        index = self.tabs.indexOf(console)
        if index >= 0:
            mark = {"ok": "✓", "failed": "✗", "error": "✗", "stopped": "■"}.get(console.state, "")
            self.tabs.setTabText(index, f"{mark} {console.name}")
        self.status.emit(f"{console.name}: {console.status.text()}")

    def _on_close_tab(self, index: int) -> None:
        console = self.tabs.widget(index)
        console.stop()
        self.tabs.removeTab(index)
        console.deleteLater()
        if not self.tabs.count():
            self.tabs.hide()
            self.empty.show()
