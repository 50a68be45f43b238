"""Render the main window and every panel to PNG files, without a display.

This is how the look is reviewed (by people and by tests) on machines with no screen.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from studio.errors import UserError

WINDOW_SIZE = (1400, 900)


def _process_events_until(app, done, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        if done():
            return True
        time.sleep(0.01)
    return False


def take_screenshots(out_dir: Path, demo: bool = False, timeout_s: float = 120.0) -> list[Path]:
    """Write ``main_window.png`` and ``panel_<name>.png`` for each dock into ``out_dir``."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from studio.logs import setup_logging
    from studio.ui.app import create_application
    from studio.ui.main_window import MainWindow
    from studio.ui.notifier import Notifier

    setup_logging()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    app = create_application()
    notifier = Notifier(show_dialogs=False)
    window = MainWindow(notifier=notifier, restore_layout=False)
    window.resize(*WINDOW_SIZE)
    window.show()
    if demo:
        routed: list = []
        window.file_routed.connect(routed.append)
        window.open_demo()
        ready = _process_events_until(app, lambda: routed and not window.runner.active_jobs, timeout_s)
        if not ready:
            raise UserError("The demo workspace did not open in time", window.log_view.log_file,
                            "Read the log file for the job that did not finish.")
    if notifier.history:
        first = notifier.history[0]
        raise UserError(f"The window reported an error while preparing the screenshot: {first.message}",
                        window.log_view.log_file, "Read the details in the log file.")
    _process_events_until(app, lambda: False, 0.3)  # let layouts and the file tree settle
    written = [_save(window.grab(), out_dir / "main_window.png")]
    for name, dock in window.docks.items():
        window.show_panel(name)
        _process_events_until(app, lambda: False, 0.15)
        written.append(_save(dock.grab(), out_dir / f"panel_{name}.png"))
    window.close()
    return written


def _save(pixmap, path: Path) -> Path:
    if pixmap.isNull() or not pixmap.save(str(path), "PNG"):
        raise UserError("Could not write the screenshot", path, "Check that the folder is writable and has space.")
    return path
