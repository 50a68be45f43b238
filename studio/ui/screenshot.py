"""Render the main window and every panel to PNG files, without a display.

This is how the look is reviewed (by people and by tests) on machines with no screen. Each panel
is brought to the front in the window at the size asked for and grabbed as it sits in its dock,
so a screenshot shows what a user of that screen size sees.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from studio.core.errors import UserError

WINDOW_SIZE = (1400, 900)
MIN_SIZE = (640, 480)  # smaller than any laptop: a typo, not a screen


def parse_size(text: str) -> tuple[int, int]:
    """``"1280x720"`` -> (1280, 720); a clear UserError for anything else."""
    parts = text.lower().replace("×", "x").split("x")
    try:
        width, height = (int(part) for part in parts)
    except ValueError:
        raise UserError(f"Not a window size: {text!r}", "--size", "Write WIDTHxHEIGHT in pixels, e.g. 1280x720.") \
            from None
    if width < MIN_SIZE[0] or height < MIN_SIZE[1] or width > 7680 or height > 4320:
        raise UserError(f"Window size {width}x{height} is out of range", "--size",
                        f"Use a size from {MIN_SIZE[0]}x{MIN_SIZE[1]} to 7680x4320, e.g. 1280x720.")
    return width, height


def _process_events_until(app, done, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents()
        if done():
            return True
        time.sleep(0.01)
    return False


def take_screenshots(out_dir: Path, demo: bool = False, timeout_s: float = 120.0,
                     size: tuple[int, int] = WINDOW_SIZE,
                     check: Callable[[str, object], None] | None = None) -> list[Path]:
    """Write ``main_window.png`` and ``panel_<name>.png`` for each dock into ``out_dir`` (with
    ``demo``, also ``panel_<name>_selected.png`` for the panels where something can be selected).

    ``check(name, widget)`` is called with each dock while it is in front (and with the window,
    as ``"main_window"``), e.g. to look for cut text in the state shown.
    """
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from studio.core.logs import setup_logging
    from studio.ui.app import create_application
    from studio.ui.main_window import MainWindow
    from studio.ui.notifier import Notifier

    setup_logging()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    app = create_application()
    notifier = Notifier(show_dialogs=False)
    window = MainWindow(notifier=notifier, restore_layout=False)
    window.resize(*size)
    window.show()
    try:
        return _take(app, window, notifier, out_dir, demo, timeout_s, check)
    finally:
        window.close()
        window.deleteLater()
        app.processEvents()


def _take(app, window, notifier, out_dir: Path, demo: bool, timeout_s: float, check) -> list[Path]:
    built = lambda: len(window._built) == len(window._panel_specs)  # noqa: E731
    _process_events_until(app, built, timeout_s)
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
    if check is not None:
        check("main_window", window)
    for name, dock in window.docks.items():
        window.show_panel(name)
        _process_events_until(app, lambda: False, 0.15)
        written.append(_save(dock.grab(), out_dir / f"panel_{name}.png"))
        if check is not None:
            check(name, dock)
    if demo:
        written += _selected_states(app, window, out_dir, timeout_s, check)
    return written


def _selected_states(app, window, out_dir: Path, timeout_s: float, check) -> list[Path]:
    """``panel_<name>_selected.png``: each panel with its first thing selected (details, drill-down)."""
    from studio.ui.screenshot_states import SELECTIONS

    written = []
    for name, select in SELECTIONS.items():
        window.show_panel(name)
        if not select(window.panels[name]):
            continue
        _process_events_until(app, lambda: not window.runner.active_jobs, timeout_s)
        _process_events_until(app, lambda: False, 0.15)
        dock = window.docks[name]
        written.append(_save(dock.grab(), out_dir / f"panel_{name}_selected.png"))
        if check is not None:
            check(f"{name}_selected", dock)
    return written


def _save(pixmap, path: Path) -> Path:
    if pixmap.isNull() or not pixmap.save(str(path), "PNG"):
        raise UserError("Could not write the screenshot", path, "Check that the folder is writable and has space.")
    return path
