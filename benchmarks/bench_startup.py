"""Cold start: `studio` to a shown main window, and `studio --version`, against their floors.

Peers, measured in the same run: a bare PySide6 QMainWindow (the least any Qt app can do) and a
Python interpreter that does nothing. Median of several runs; the first run warms the disk cache.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 7
# A real X11 display when there is one (Xvfb counts), else Qt's offscreen platform.
PLATFORM = "xcb" if os.environ.get("DISPLAY") else "offscreen"
ENV = {**os.environ, "QT_QPA_PLATFORM": PLATFORM, "STUDIO_HOME": tempfile.mkdtemp(prefix="studio-bench-")}
atexit.register(shutil.rmtree, ENV["STUDIO_HOME"], True)  # the runs' settings and logs go with the run
STUDIO = [str(Path(sys.executable).parent / "studio")]

BARE_QT = """
import time
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMainWindow
app = QApplication([])
window = QMainWindow()
window.resize(1400, 900)
window.show()
QTimer.singleShot(0, lambda: (print(f"shown_at={time.time():.6f}", flush=True), app.quit()))
app.exec()
"""


def _time_to(mark: str, command: list[str]) -> float:
    start = time.time()
    out = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=120).stdout
    at = next(float(line.split("=", 1)[1]) for line in out.splitlines() if line.startswith(f"{mark}="))
    return at - start


def time_to_shown(command: list[str]) -> float:
    return _time_to("shown_at", command)


def time_to_ready(command: list[str]) -> float:
    """Until every tool panel is built (Studio builds them right after the first frame)."""
    return _time_to("ready_at", command)


def time_to_exit(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, env=ENV, timeout=120, check=True)
    return time.perf_counter() - start


def median_of(measure, command: list[str]) -> float:
    measure(command)  # warm-up: page cache, .pyc files
    return statistics.median(measure(command) for _ in range(RUNS))


def main() -> None:
    rows = [
        {"figure": f"cold start to shown main window ({PLATFORM})", "unit": "s",
         "ours": median_of(time_to_shown, [*STUDIO, "--startup-probe"]),
         "peer": median_of(time_to_shown, [sys.executable, "-c", BARE_QT]),
         "peer_name": "bare PySide6 QMainWindow", "goal": "< 1.5 s"},
        {"figure": f"cold start to every panel built ({PLATFORM})", "unit": "s",
         "ours": median_of(time_to_ready, [*STUDIO, "--startup-probe"]),
         "peer": median_of(time_to_shown, [sys.executable, "-c", BARE_QT]),
         "peer_name": "bare PySide6 QMainWindow", "goal": "< 1.5 s"},
        {"figure": "studio --version", "unit": "s",
         "ours": median_of(time_to_exit, [*STUDIO, "--version"]),
         "peer": median_of(time_to_exit, [sys.executable, "-c", "pass"]),
         "peer_name": "python -c pass", "goal": "close to the interpreter"},
    ]
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
