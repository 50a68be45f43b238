"""The Run panel: a console tab per run, streaming output; Stop kills the run's process group."""

from __future__ import annotations

from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from studio.core.errors import UserError
from studio.core.formats import Detected
from studio.runs.config import RunConfig
from studio.runs.runner import run_configuration
from studio.runs.where import target_for_config
from studio.ui.jobs import JobRunner
from studio.ui.links import PanelLinks
from studio.ui.panels.base import Panel
from studio.ui.panels.run.console import RunConsole
from studio.ui.widgets.empty_state import EmptyState

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
        self.empty = EmptyState("No run yet", "Each run of a run configuration opens a console here. Start one "
                                "with <b>Run › Run</b> (Shift+F10) or the Run toolbar.", self)
        self.empty.add_action("Edit configurations…", self.links.edit_run_configurations.emit,
                              "Add or change the run configurations of the open workspace")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.empty)
        layout.addWidget(self.tabs, 1)
        self.tabs.hide()

    def open_file(self, detected: Detected) -> None:  # the Run panel opens no files
        raise UserError("The Run panel does not open files", detected.path, "Open it in its tool's panel.")

    def target_for(self, config: RunConfig):
        """This computer, or the configuration's host on the window's connection pool."""
        context = getattr(self.links, "host_context", None)
        return target_for_config(context, config)

    def resolve_workdir(self, config: RunConfig) -> str | None:
        """A local configuration's folder relative to the workspace; a host's as written."""
        if not config.is_local:
            return config.workdir or None
        folder, workdir = self.workspace_folder, config.workdir
        if folder is not None and (not workdir or not workdir.startswith("/")):
            return str((folder / workdir).resolve()) if workdir else str(folder)
        return workdir or None

    def start(self, config: RunConfig) -> RunConsole:
        """Start ``config`` and show its console (raises UserError for a configuration that cannot run)."""
        config.validate()
        target = self.target_for(config)
        workdir = self.resolve_workdir(config)
        context = getattr(self.links, "host_context", None)

        def make(cancel):
            if config.upload:
                from studio.ops import upload_first

                yield from upload_first.run(context, config.upload, cancel)
            return (yield from run_configuration(config, target, workdir, cancel=cancel,
                                                 results_base=self.workspace_folder))

        return self.launch(config.name, target, make)

    def launch(self, title: str, target, make_job, on_result=None) -> RunConsole:
        """Run an engine job on ``target`` in a new console tab; ``on_result(result)`` when it finishes.

        Jobs on one host share its job key, so they run one at a time (a run never overlaps a
        sync or an ATC run on the same host)."""
        console = RunConsole(title, target.where, self)
        key = None if getattr(target, "is_local", True) else target.key
        handle = self.runner.start(title, lambda cancel: console.wrap(make_job(cancel)), key=key)
        console.attach(handle)
        console.ended.connect(self._on_ended)
        console.open_requested.connect(self.request_open)
        if on_result is not None:
            handle.finished.connect(on_result)
        self.tabs.insertTab(0, console, f"▶ {title}")
        self.tabs.setCurrentIndex(0)
        while self.tabs.count() > MAX_TABS:  # keep the newest
            self._on_close_tab(self.tabs.count() - 1)
        self.empty.hide()
        self.tabs.show()
        self.status.emit(f"running {title} on {target.where}")
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
