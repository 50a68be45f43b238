"""The main window: docks, menus, status bar, file routing, recent files and window layout."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import QApplication, QDockWidget, QFileDialog, QMainWindow, QMessageBox, QWidget

from studio import __version__
from studio.core import formats
from studio.core.formats import Detected
from studio.core.jobs import Progress
from studio.core.logs import log_file_path
from studio.core.paths import config_dir
from studio.core.settings import UserSettings
from studio.ui.jobs import JobHandle, JobRunner
from studio.ui import window_fit
from studio.ui.notifier import Notifier
from studio.ui.links import PanelLinks
from studio.ui.panels.base import Panel
from studio.ui.plain_text import plain_line
from studio.ui.panels.registry import PANELS, PanelSpec
from studio.ui.widgets.focus import focus_into
from studio.ui.widgets.job_status import JobStatusWidget
from studio.ui.widgets.log_view import LogView
from studio.ui.dock_tabs import whole_tab_titles
from studio.ui.widgets.status_line import FittingStatusBar
from studio.ui.widgets.workspace_tree import WorkspaceTree
from studio.core.workspace import Workspace

log = logging.getLogger(__name__)

LAYOUT_VERSION = 2  # bump when docks are added or renamed, so old saved states are ignored


class MainWindow(QMainWindow):
    """Studio's window. Owns the JobRunner, the notifier and every dock.

    Signals:
        file_routed(Detected): a file reached its panel (tests and cross-panel features listen).
        workspace_opened(Workspace)
        panels_ready(): every tool panel has been built (they are built after the first frame).
    """

    file_routed = Signal(object)
    workspace_opened = Signal(object)
    panels_ready = Signal()

    def __init__(self, settings: UserSettings | None = None, notifier: Notifier | None = None,
                 restore_layout: bool = True):
        super().__init__()
        self.setWindowTitle("Studio")
        self.setObjectName("studio_main_window")
        self.setAcceptDrops(True)
        self.setDockNestingEnabled(True)
        self.settings = settings or UserSettings.load()
        self.notifier = notifier or Notifier(self)
        self.runner = JobRunner(self, board=self.notifier.board)  # its jobs' failures reach this notifier
        self.notifier.parent_widget = self
        self.workspace: Workspace | None = None
        self._panel_specs: dict[str, PanelSpec] = {spec.name: spec for spec in PANELS}
        self._built: dict[str, Panel] = {}
        self.panels = _PanelMap(self)  # name -> Panel; a panel is built when first asked for
        self._closing = False
        self.links = PanelLinks(self)  # cross-panel requests ("show this op in the graph")
        self.links.focus.connect(self.show_panel)
        self.links.host_context = _host_context(self)  # ONE host store, known hosts and connection pool
        self.docks: dict[str, QDockWidget] = {}
        self._panel_status: dict[str, str] = {}  # each panel's latest status message

        central = QWidget(self)  # the docks are the content; an empty central widget stays hidden
        central.hide()
        self.setCentralWidget(central)
        self._build_docks()
        self._build_menus()
        self._build_status_bar()
        # The status line hears every notice through the notifier, which brings it from the board
        # to this thread. A bound slot: disconnected when the window goes.
        self.notifier.noticed.connect(self._on_notice)
        self._default_state = self.saveState(LAYOUT_VERSION)
        self._sizes_pending = True  # dock sizes can only be set once the window has a size
        self._persist_layout = restore_layout  # a screenshot run must not overwrite the user's layout
        self._placed = False  # checked against the screen once shown (a window manager's frame is known then)
        if restore_layout:
            self._restore_layout()
        else:
            window_fit.place(self)  # the screen's free area decides, not a fixed size
        if self.settings.load_problem is not None:
            self.notifier.report_exception(self.settings.load_problem, context="Settings")

    # ------------------------------------------------------------------ construction
    def _add_dock(self, name: str, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{name}")  # saveState/restoreState key on the object name
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        self.docks[name] = dock
        dock.visibilityChanged.connect(lambda visible, n=name: self._on_dock_shown(n, visible))
        # a dock moved into (or out of) a group: Qt may have made that group a new tab bar
        dock.dockLocationChanged.connect(lambda _area: QTimer.singleShot(0, self, lambda: whole_tab_titles(self)))
        return dock

    def _build_docks(self) -> None:
        self.workspace_tree = WorkspaceTree(self)
        self.workspace_tree.open_requested.connect(lambda p: self.open_paths([p]))
        self.workspace_tree.open_workspace_requested.connect(self._on_open_workspace)
        self.workspace_tree.demo_requested.connect(self.open_demo)
        self._add_dock("workspace", "Workspace", self.workspace_tree, Qt.DockWidgetArea.LeftDockWidgetArea)
        tool_docks = []
        for spec in PANELS:  # the docks exist at once; their panels come right after the first frame
            placeholder = QWidget(self)
            tool_docks.append(self._add_dock(spec.name, spec.title, placeholder, Qt.DockWidgetArea.RightDockWidgetArea))
        self.log_view = LogView(log_file_path(), self)
        log_dock = self._add_dock("log", "Log", self.log_view, Qt.DockWidgetArea.RightDockWidgetArea)
        # The log sits under the tool panels and the workspace runs full height. Split before
        # tabifying: splitting a dock that is already in a tab group only adds another tab.
        self.splitDockWidget(tool_docks[0], log_dock, Qt.Orientation.Vertical)
        for dock in tool_docks[1:]:
            self.tabifyDockWidget(tool_docks[0], dock)
        tool_docks[0].raise_()
        whole_tab_titles(self)

    def build_panel(self, name: str) -> Panel:
        """The panel called ``name``, importing and building it now if it is not built yet."""
        panel = self._built.get(name)
        if panel is not None:
            return panel
        spec = self._panel_specs[name]  # KeyError for a name that is no tool panel
        panel = spec.load()(self.runner, self, links=self.links)
        panel.request_open.connect(lambda p: self.open_paths([p]))
        panel.request_load.connect(lambda p: self.open_paths([p], focus=False))
        panel.status.connect(lambda text, n=name: self._on_panel_status(n, text))
        if self.workspace is not None:
            panel.workspace_folder = self.workspace.folder
        self._built[name] = panel
        placeholder = self.docks[name].widget()
        self.docks[name].setWidget(panel)
        placeholder.deleteLater()
        if len(self._built) == len(self._panel_specs):
            self.panels_ready.emit()
        return panel

    def _build_next_panel(self) -> None:
        # One panel per event-loop turn, so the window keeps painting and answering meanwhile.
        if self._closing:
            return
        pending = [name for name in self._panel_specs if name not in self._built]
        if pending:
            self.build_panel(pending[0])
        if len(pending) > 1:
            QTimer.singleShot(0, self, self._build_next_panel)  # cancelled with the window

    def _apply_default_sizes(self) -> None:
        # Qt shares space between neighbours only when both sides are named.
        first_tool = self.docks[PANELS[0].name]
        left = max(260, self.width() // 5)
        self.resizeDocks([self.docks["workspace"], first_tool], [left, self.width() - left], Qt.Orientation.Horizontal)
        bottom = max(150, self.height() // 6)
        self.resizeDocks([first_tool, self.docks["log"]], [self.height() - bottom, bottom], Qt.Orientation.Vertical)

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self._action(file_menu, "&Open File…", self._on_open_file, QKeySequence.StandardKey.Open)
        self._action(file_menu, "Open &Folder…", self._on_open_folder, "Ctrl+Shift+O")
        self._action(file_menu, "Open &Workspace…", self._on_open_workspace)
        self._action(file_menu, "&New Workspace…", self._on_new_workspace)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)

        view_menu = bar.addMenu("&View")
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        view_menu.addSeparator()
        self._action(view_menu, "Reset &Layout", self.reset_layout)

        tools_menu = bar.addMenu("&Tools")
        for index, spec in enumerate(PANELS, start=1):  # Ctrl+1 .. Ctrl+9: "Ctrl+10" is no key sequence
            self._action(tools_menu, spec.title, lambda _=False, n=spec.name: self.show_panel(n),
                         f"Ctrl+{index}" if index <= 9 else None)
        tools_menu.addSeparator()
        self._action(tools_menu, "Cancel All Jobs", self.runner.cancel_all)

        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "&Demo Workspace", self.open_demo)
        self._action(help_menu, "Open &Log Folder", self.log_view._open_folder)
        self._action(help_menu, "&About Studio", self._on_about)
        from studio.ui.panels.run.controls import RunControls

        self.run_controls = RunControls(self, before=help_menu.menuAction())  # Run menu + toolbar
        self.links.edit_run_configurations.connect(self.run_controls.edit)

    def _action(self, menu, text: str, slot, shortcut=None) -> QAction:
        action = menu.addAction(text)
        action.triggered.connect(slot)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        return action

    def _build_status_bar(self) -> None:
        self.setStatusBar(FittingStatusBar(self))  # a long message is shortened, never clipped by the job status
        self.job_status = JobStatusWidget(self.runner, self)
        self.statusBar().addPermanentWidget(self.job_status)
        self.statusBar().showMessage("Ready", 3000)

    # ------------------------------------------------------------------ opening files
    def open_paths(self, paths: list[Path], focus: bool = True) -> list[JobHandle]:
        """Sniff each path on a worker thread and route it to the panel that reads it.

        Sniffing reads a few bytes, so the jobs share one queue: files reach their panels in the
        order given (with ``focus``, the last one opened ends up in front), whichever sniff would
        finish first. Without ``focus`` (a job's result, not the user's own open) the panel loads
        the file behind the panel in front, and the status bar says where it went.
        """
        handles = []
        for path in paths:
            handle = self.runner.start(f"Opening {Path(path).name}", lambda cancel, p=Path(path): _detect_job(p),
                                       key="open-files")
            handle.finished.connect(lambda detected, f=focus: self._route(detected, f))
            handles.append(handle)
        return handles

    def _route(self, detected: Detected, focus: bool = True) -> None:
        if detected.format.panel == formats.WORKSPACE:
            folder = detected.path if detected.path.is_dir() else detected.path.parent
            self.open_workspace(folder)
            return
        panel = self.panels.get(detected.format.panel)
        if panel is None:
            self.notifier.report_exception(RuntimeError(f"no panel for {detected.format.panel}"))
            return
        if focus:
            self.show_panel(panel.NAME)
        elif not self.is_in_front(panel.NAME):
            title = self.panel_title(panel.NAME)
            self.statusBar().showMessage(f"{detected.path.name} opened in the {title} panel (Tools › {title})", 10000)
        panel.open_file(detected)
        self.settings.add_recent_file(detected.path)
        if self.workspace is not None:
            self.workspace.add_artifact(detected.path, detected.format.id)
        self._save_workspace()  # small atomic writes: a crash later loses no recent file
        self._save_settings()
        log.info("opened %s as %s in %s", detected.path, detected.format.id, panel.NAME)
        self.file_routed.emit(detected)

    def show_panel(self, name: str) -> None:
        """Make a panel's dock visible and bring it to the front."""
        if name in self._panel_specs:
            self.build_panel(name)
        dock = self.docks[name]
        had_focus = QApplication.focusWidget()
        dock.show()
        dock.raise_()
        if had_focus is not None and (not had_focus.isVisible() or had_focus.visibleRegion().isEmpty()):
            # The switch hid the widget the user was in (a button of the panel now behind): Qt would
            # hand the keyboard to the next widget in the chain, the Workspace tree, where typing
            # selects files. The panel brought forward takes it instead.
            focus_into(dock)

    def panel_title(self, name: str) -> str:
        """The title the panel ``name`` shows on its tab and in the Tools menu."""
        return self._panel_specs[name].title

    def is_in_front(self, name: str) -> bool:
        """Whether the dock ``name`` can be seen (shown, and the current tab of its group)."""
        dock = self.docks[name]
        return dock.isVisible() and not dock.visibleRegion().isEmpty()

    def _on_notice(self, notice) -> None:
        self.show_status(notice.headline, 10000)

    def show_status(self, text: str, timeout_ms: int = 5000) -> None:
        """Show ``text`` in the status bar as plain text: it draws what it gets, so a panel's rich
        text (``<code>``, ``&lt;``) would show its tags."""
        self.statusBar().showMessage(plain_line(text), timeout_ms)

    def _on_panel_status(self, name: str, text: str) -> None:
        # The status bar speaks of the panel in front; another panel's news waits until it is raised.
        self._panel_status[name] = text
        if self.is_in_front(name):
            self.show_status(text)

    def _on_dock_shown(self, name: str, visible: bool) -> None:
        text = self._panel_status.get(name)
        if visible and text:
            self.show_status(text)

    # ------------------------------------------------------------------ workspaces
    def open_workspace(self, folder: Path, create: bool = False) -> Workspace | None:
        """Open the workspace in ``folder`` (making it one first when ``create``) and show it."""
        try:
            workspace = Workspace.create(folder) if create else Workspace.open(folder)
        except Exception as exc:  # noqa: BLE001 - shown to the user, the window stays as it was
            self.notifier.report_exception(exc, context="Open workspace")
            return None
        self._save_workspace()
        self.workspace = workspace
        self.settings.last_workspace = workspace.folder
        self._save_settings()
        self.workspace_tree.set_folder(workspace.folder, workspace.name)
        self.setWindowTitle(f"{workspace.name} — Studio")
        for panel in self._built.values():  # where panels write what they make (profiles, dumps)
            panel.workspace_folder = workspace.folder
        self.show_panel("workspace")
        self.workspace_opened.emit(workspace)
        return workspace

    def open_demo(self) -> JobHandle:
        """Write (or reuse) the demo workspace in the user data folder, open it, show the U-Net."""
        from studio.core.paths import data_dir

        folder = data_dir() / "demo"
        handle = self.runner.start("Preparing the demo workspace", lambda cancel: _demo_job(folder, cancel))
        handle.finished.connect(self._on_demo_ready)
        return handle

    def _on_demo_ready(self, demo) -> None:
        self.open_workspace(demo.folder)
        self.open_paths(demo.show)  # each tool's demo results, then the U-Net

    def _save_workspace(self) -> None:
        if self.workspace is not None and self.workspace.modified:
            try:
                self.workspace.save()
            except OSError as exc:
                log.warning("could not save workspace %s: %s", self.workspace.folder, exc)

    def _save_settings(self) -> None:
        try:
            self.settings.save()
        except OSError as exc:
            log.warning("could not save settings %s: %s", self.settings.path, exc)

    # ------------------------------------------------------------------ menu handlers
    def _on_open_file(self) -> None:
        names, _ = QFileDialog.getOpenFileNames(self, "Open file", str(self._start_dir()))
        self.open_paths([Path(n) for n in names])

    def _on_open_folder(self) -> None:
        name = QFileDialog.getExistingDirectory(self, "Open folder (PROF_*, dump folder, …)", str(self._start_dir()))
        if name:
            self.open_paths([Path(name)])

    def _on_open_workspace(self) -> None:
        name = QFileDialog.getExistingDirectory(self, "Open workspace", str(self._start_dir()))
        if name:
            self.open_workspace(Path(name))

    def _on_new_workspace(self) -> None:
        name = QFileDialog.getExistingDirectory(self, "Choose a folder for the new workspace", str(self._start_dir()))
        if name:
            self.open_workspace(Path(name), create=True)

    def _start_dir(self) -> Path:
        return self.workspace.folder if self.workspace else Path.home()

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self.settings.recent_files
        for path in recent:
            action = self.recent_menu.addAction(path.name)
            action.setToolTip(str(path))
            action.setStatusTip(str(path))
            action.triggered.connect(lambda _=False, p=path: self.open_paths([p]))
        if not recent:
            self.recent_menu.addAction("(none)").setEnabled(False)
        self.recent_menu.addSeparator()
        self.recent_menu.addAction("Clear Recent Files", self.settings.clear_recent_files)

    def _on_about(self) -> None:
        QMessageBox.about(self, "About Studio",
                          f"<b>Studio {__version__}</b><br>A workbench for Ascend NPUs and ONNX Runtime.<br>"
                          f"Apache-2.0.<br><br>Log file: {log_file_path()}")

    # ------------------------------------------------------------------ drag and drop
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # Qt override
        urls = event.mimeData().urls()
        if urls and all(url.isLocalFile() for url in urls):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:  # Qt override
        paths = [Path(url.toLocalFile()) for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.open_paths(paths)

    # ------------------------------------------------------------------ layout persistence
    def _layout_store(self) -> QSettings:
        return QSettings(str(config_dir() / "window.ini"), QSettings.Format.IniFormat)

    def _restore_layout(self) -> None:
        store = self._layout_store()
        geometry = store.value("geometry")
        state = store.value("state")
        # Only where it still fits: a layout saved on a big monitor must not open past a laptop's edges.
        window_fit.place(self, geometry if isinstance(geometry, QByteArray) else None)
        if isinstance(state, QByteArray) and self.restoreState(state, LAYOUT_VERSION):
            self._sizes_pending = False
        whole_tab_titles(self)

    def showEvent(self, event) -> None:  # Qt override
        super().showEvent(event)
        whole_tab_titles(self)
        if not self._placed:
            self._placed = True
            placed = self.geometry()
            QTimer.singleShot(0, self, lambda: self._keep_on_screen(placed))
        if len(self._built) < len(self._panel_specs):
            QTimer.singleShot(0, self, self._build_next_panel)  # cancelled with the window
        if self._sizes_pending:
            self._sizes_pending = False
            QTimer.singleShot(0, self._settle_default_layout)  # after the first layout pass

    def _keep_on_screen(self, placed) -> None:
        # Only the size Studio chose: a size the user (or a caller) set since is theirs.
        if self.geometry() == placed:
            window_fit.keep_on_screen(self)

    def _settle_default_layout(self) -> None:
        self._apply_default_sizes()
        self._default_state = self.saveState(LAYOUT_VERSION)

    def save_layout(self) -> None:
        """Remember window geometry and dock layout for the next start."""
        store = self._layout_store()
        store.setValue("geometry", self.saveGeometry())
        store.setValue("state", self.saveState(LAYOUT_VERSION))
        store.sync()

    def reset_layout(self) -> None:
        """Put every dock back where it was on first start."""
        self.restoreState(self._default_state, LAYOUT_VERSION)
        for dock in self.docks.values():
            dock.show()
        whole_tab_titles(self)

    def closeEvent(self, event: QCloseEvent) -> None:  # Qt override
        self._closing = True  # panels not built yet are not built any more
        if self._persist_layout:
            self.save_layout()
        self._save_workspace()
        self._save_settings()
        self.runner.cancel_all()
        self.runner.wait_for_done(3000)
        self.links.host_context.close()
        self.log_view.detach()
        super().closeEvent(event)


def _host_context(window: QWidget):
    """The window's HostContext: passwords and passphrases from the keyring or a dialog."""
    from studio.remote.context import HostContext
    from studio.ui.widgets.secret_prompt import GuiSecretPrompt

    return HostContext(asker_factory=GuiSecretPrompt(window).asker)


class _PanelMap(Mapping):
    """The window's tool panels by name, in menu order; a panel is built on first access."""

    def __init__(self, window: MainWindow):
        self._window = window

    def __getitem__(self, name: str) -> Panel:
        if name not in self._window._panel_specs:
            raise KeyError(name)
        return self._window.build_panel(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._window._panel_specs)

    def __len__(self) -> int:
        return len(self._window._panel_specs)


def _detect_job(path: Path):
    yield Progress(None, "detecting format")
    return formats.detect(path)


def _demo_job(folder: Path, cancel):
    from studio.tools.demo.workspace import ensure_demo_workspace

    demo = yield from ensure_demo_workspace(folder, cancel)
    Workspace.create(demo.folder, name="Demo")
    return demo
