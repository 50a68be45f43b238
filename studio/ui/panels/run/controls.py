"""The Run menu and toolbar: pick a run configuration, run it, stop it, edit the configurations.

Installed by the main window with one call; it reads the configurations from the window's open
workspace (the same object the window saves, so nothing is overwritten) and starts runs in the
Run panel.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QComboBox, QMainWindow, QToolBar

from studio.errors import UserError
from studio.runs.config import load_configs

NO_WORKSPACE = "(open a workspace)"


class RunControls(QObject):
    """Run menu + toolbar bound to a main window (which has ``workspace``, ``panels``, ``notifier``)."""

    def __init__(self, window: QMainWindow, before=None):
        super().__init__(window)
        self.window = window
        self.menu = window.menuBar().addMenu("&Run") if before is None else None
        if self.menu is None:
            from PySide6.QtWidgets import QMenu

            self.menu = QMenu("&Run", window)
            window.menuBar().insertMenu(before, self.menu)
        self.run_action = self.menu.addAction("&Run")
        self.run_action.setShortcut(QKeySequence("Shift+F10"))
        self.run_action.triggered.connect(self.run_selected)
        self.stop_action = self.menu.addAction("&Stop All Runs")
        self.stop_action.setShortcut(QKeySequence("Ctrl+F2"))
        self.stop_action.triggered.connect(self.stop_all)
        self.menu.addSeparator()
        self.profile_action = self.menu.addAction("&Profile on Host…")
        self.profile_action.setToolTip("Run the selected configuration under msprof and open its PROF_ folder")
        self.profile_action.triggered.connect(self.ask_profile)
        self.dump_action = self.menu.addAction("&Dump on Host…")
        self.dump_action.setToolTip("Run the selected configuration with a dump acl.json and open the dumps")
        self.dump_action.triggered.connect(self.ask_dump)
        self.compare_action = self.menu.addAction("Dump on Host and &Compare…")
        self.compare_action.setToolTip("Dump on the host and, with the same inputs, the original model here; compare")
        self.compare_action.triggered.connect(self.ask_dump_compare)
        self.bench_action = self.menu.addAction("&Benchmark .om…")
        self.bench_action.setToolTip("Time an .om with msame or ais_bench where the selected configuration runs")
        self.bench_action.triggered.connect(self.ask_bench)
        self.menu.addSeparator()
        self.edit_action = self.menu.addAction("&Edit Configurations…")
        self.edit_action.triggered.connect(self.edit)
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
        for action in (self.run_action, self.profile_action, self.dump_action, self.compare_action, self.bench_action):
            action.setEnabled(bool(names))
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
    def _selected(self):
        name = self.combo.currentText()
        config = next((c for c in load_configs(self.workspace) if c.name == name), None) if self.workspace else None
        if config is None:
            raise UserError("Choose a run configuration first", "Run toolbar", "Add one in Run > Edit Configurations….")
        return config

    def _out(self, kind: str) -> Path:
        import time

        return Path(self.workspace.folder) / kind / f"host-{time.strftime('%Y%m%d-%H%M%S')}"

    def _guard(self, action):
        try:
            return action()
        except UserError as exc:
            self.window.notifier.report_exception(exc, context="Run")
            return None

    def ask_profile(self) -> None:
        from studio.ui.panels.run.host_dialogs import MsprofDialog

        config = self._guard(self._selected)
        if config is None:
            return
        dialog = MsprofDialog(config.name, self.window)
        if dialog.exec():
            self.profile(config.name, dialog.options(), dialog.collect.text().strip() or None)

    def profile(self, name: str, options=None, collect: str | None = None):
        """Profile the configuration ``name`` on its target; the PROF_ folder opens in the profiler."""
        def start():
            from studio.tools.profiler.on_host import collect_on_host, profile_on_host

            config = next(c for c in load_configs(self.workspace) if c.name == name)
            panel = self.window.panels["run"]
            target = panel.target_for(config)
            out = self._out("profiles")
            from studio.tools.deploy.fetch import folder_fetcher

            fetch = folder_fetcher(target)  # tar / cat streams for a host
            if collect:
                make = lambda cancel: collect_on_host(target, config, collect, out, cancel, fetch)  # noqa: E731
            else:
                make = lambda cancel: profile_on_host(target, config, out, options, cancel, fetch)  # noqa: E731
            console = panel.launch(f"Profile {name}", target, make, lambda r: self.window.open_paths([r.folder]))
            self.window.show_panel("run")
            return console
        return self._guard(start)

    def ask_dump(self) -> None:
        from studio.ui.panels.run.host_dialogs import DumpDialog

        config = self._guard(self._selected)
        if config is None:
            return
        dialog = DumpDialog(config.name, Path(self.workspace.folder), self.window)
        if dialog.exec():
            values = dialog.values()
            self.dump(config.name, values.pop("model"), **values)

    def dump(self, name: str, model: Path, layers=None, mode: str = "output", op_switch: str = "off"):
        """Dump the configuration ``name`` on its target; the dump folder opens in the accuracy panel."""
        def start():
            from studio.tools.accuracy.acl_config import om_dump_entry
            from studio.tools.accuracy.on_host import dump_on_host

            config = next(c for c in load_configs(self.workspace) if c.name == name)
            if not Path(model).is_file():
                raise UserError("Model not found", model, "Choose the .om file the app loads.")
            panel = self.window.panels["run"]
            target = panel.target_for(config)
            out = self._out("dumps")

            def make(cancel):
                from studio.tools.graph.om_reader import read_om

                model_name, chosen = om_dump_entry(read_om(Path(model)), Path(model).name, layers)
                from studio.tools.deploy.fetch import folder_fetcher

                return (yield from dump_on_host(target, config, model_name, out, chosen, mode, op_switch,
                                                cancel=cancel, fetch=folder_fetcher(target)))

            console = panel.launch(f"Dump {name}", target, make, lambda r: self.window.open_paths([r.folder]))
            self.window.show_panel("run")
            return console
        return self._guard(start)

    def ask_dump_compare(self) -> None:
        from studio.ui.panels.run.host_dialogs import DumpDialog

        config = self._guard(self._selected)
        if config is None:
            return
        dialog = DumpDialog(config.name, Path(self.workspace.folder), self.window, compare=True)
        if dialog.exec():
            values = dialog.values()
            values.pop("op_switch")
            self.dump_compare(config.name, values.pop("model"), **values)

    def dump_compare(self, name: str, model: Path, reference: Path, inputs: dict, layers=None, mode: str = "output"):
        """Journey 3 in one action: dump on the host and here with the same inputs, compare; the
        comparison opens in the accuracy panel."""
        def start():
            from studio.tools.accuracy.acl_config import om_dump_entry
            from studio.tools.accuracy.on_host import dump_and_compare
            from studio.tools.deploy.fetch import folder_fetcher

            config = next(c for c in load_configs(self.workspace) if c.name == name)
            for path, what in ((Path(model), "the .om"), (Path(reference), "the original .onnx"),
                               *((Path(p), f"input {n}") for n, p in inputs.items())):
                if not path.is_file():
                    raise UserError(f"File not found: {what}", path, "Choose an existing file.")
            panel = self.window.panels["run"]
            target = panel.target_for(config)
            out = self._out("dumps")

            def make(cancel):
                from studio.tools.graph.om_reader import read_om

                model_name, chosen = om_dump_entry(read_om(Path(model)), Path(model).name, layers)
                return (yield from dump_and_compare(target, config, model_name, Path(reference), out, inputs, chosen,
                                                    mode, converted=Path(model), fetch=folder_fetcher(target),
                                                    cancel=cancel))

            def show(both) -> None:
                accuracy = self.window.panels["accuracy"]
                accuracy.set_result(both.result, (both.cpu_dump, both.host.folder))
                self.window.show_panel("accuracy")

            console = panel.launch(f"Dump and compare {name}", target, make, show)
            self.window.show_panel("run")
            return console
        return self._guard(start)

    def ask_bench(self) -> None:
        from studio.ui.panels.run.host_dialogs import BenchDialog

        config = self._guard(self._selected)
        if config is None:
            return
        dialog = BenchDialog(config.target, Path(self.workspace.folder), self.window)
        if dialog.exec():
            self.bench(config.name, **dialog.values())

    def bench(self, name: str, model: Path, tool: str = "msame", loop: int = 100, warmup: int = 5, device: int = 0):
        """Time ``model`` with ``tool`` where the configuration ``name`` runs; the numbers go to the console."""
        def start():
            from studio.tools.bench.on_target import bench_om

            config = next(c for c in load_configs(self.workspace) if c.name == name)
            panel = self.window.panels["run"]
            target = panel.target_for(config)

            out = self._out("profiles")
            out = out.with_name(f"bench-{out.name}")

            def make(cancel):
                from studio.jobs import Progress
                from studio.tools.bench.profile_folder import write_bench_folder

                result = yield from bench_om(target, Path(model), tool, loop, warmup, device, cancel=cancel)
                for line in result.report().splitlines():  # the summary, at the end of the console
                    yield Progress(None, line)
                result.folder = write_bench_folder(result, out)  # the profiler's Summary shows it
                return result

            console = panel.launch(f"Benchmark {Path(model).name}", target, make,
                                   lambda r: self.window.open_paths([r.folder]))
            self.window.show_panel("run")
            return console
        return self._guard(start)
