"""Start the GUI: QApplication, style, error hooks, the main window, the first files."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

log = logging.getLogger(__name__)


def create_application(argv: list[str] | None = None):
    """Create (or reuse) the QApplication with Studio's names and style."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        app = QApplication(argv or [sys.argv[0]])
    _route_qt_messages()
    app.setApplicationName("Studio")
    app.setOrganizationName("Studio")
    app.setApplicationDisplayName("Studio")
    app.setStyle("Fusion")
    from studio.core.assets import read_text

    app.setStyleSheet(read_text("styles", "studio.qss"))
    from PySide6.QtGui import QIcon

    from studio.core.assets import resource

    app.setWindowIcon(QIcon(str(resource("icons", "studio.svg"))))
    if getattr(app, "_studio_collector", None) is None:
        from studio.ui.gui_gc import collect_on_gui_thread

        app._studio_collector = collect_on_gui_thread(app)  # no widget freed on a job's thread
    return app


def _route_qt_messages() -> None:
    """Send Qt's own warnings to Studio's log instead of the terminal."""
    from PySide6.QtCore import QtMsgType, qInstallMessageHandler

    qt_log = logging.getLogger("studio.qt")
    levels = {QtMsgType.QtDebugMsg: logging.DEBUG, QtMsgType.QtInfoMsg: logging.DEBUG,
              QtMsgType.QtWarningMsg: logging.WARNING, QtMsgType.QtCriticalMsg: logging.ERROR,
              QtMsgType.QtFatalMsg: logging.CRITICAL}

    def handler(kind, context, message: str) -> None:
        level = levels.get(kind, logging.WARNING)
        if "propagateSizeHints" in message:  # the offscreen platform's harmless chatter
            level = logging.DEBUG
        qt_log.log(level, "%s", message)

    qInstallMessageHandler(handler)


def reopen_last_workspace(window) -> None:
    """Open the workspace that was open when Studio last closed, if it is still there."""
    from studio.core.workspace import Workspace

    last = window.settings.last_workspace
    if last is not None and Workspace.is_workspace(last):
        window.open_workspace(last)


def build_window(demo: bool = False, workspace: Path | None = None, files: list[Path] | None = None):
    """Create the main window (not shown) and queue what it should open."""
    from studio.core.settings import UserSettings
    from studio.ui.main_window import MainWindow
    from studio.ui.notifier import Notifier

    notifier = Notifier()
    notifier.install_hooks()
    window = MainWindow(UserSettings.load(), notifier)
    if workspace is not None:
        window.open_workspace(workspace, create=True)
    elif not demo:
        reopen_last_workspace(window)
    if demo:
        window.open_demo()
    if files:
        window.open_paths(files)
    return window


def run_gui(demo: bool = False, workspace: Path | None = None, files: list[Path] | None = None,
            startup_probe: bool = False) -> int:
    """Run the workbench until its window closes; return the exit code."""
    from studio.core.logs import setup_logging

    setup_logging()
    log.info("Studio starting (pid %d)", os.getpid())
    from studio.ui.platform_check import window_problem

    problem = window_problem()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    app = create_application()
    window = build_window(demo, workspace, files)
    window.show()
    if startup_probe:
        # For benchmarks/: report when the first frame has been processed and when every panel
        # is built (they are built after the first frame), then quit.
        from PySide6.QtCore import QTimer

        def report_ready() -> None:
            print(f"ready_at={time.time():.6f}", flush=True)
            window.close()

        window.panels_ready.connect(report_ready)
        QTimer.singleShot(0, lambda: print(f"shown_at={time.time():.6f}", flush=True))
    return app.exec()
