"""A big Chrome trace opened in the Profiler panel: time to its first frame, to the whole trace,
and the GUI thread's worst stall meanwhile (the tests' 5 ms timer, tests/gui_ticks.py).

The trace is synthesised (benchmarks/profiler_tracegen.py, ~210 bytes an event) in a temporary
folder and deleted afterwards; each repeat opens it with an empty cache (its own STUDIO_HOME), the
panel on screen (offscreen platform). The peer is ``json.load`` of the same file.

    python benchmarks/bench_first_frame.py --events 1000000 --repeats 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]


def wait_until(predicate, timeout_s: float) -> bool:
    from PySide6.QtTest import QTest

    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        QTest.qWait(5)
    return True


def open_once(path: Path, home: Path) -> tuple[float, float, int]:
    """(s to the first frame, s to the whole trace on screen, worst GUI gap ms) for one cold open."""
    from gui_ticks import Ticks

    from studio.core import formats
    from studio.ui.jobs import JobRunner
    from studio.ui.panels.profiler.panel import ProfilerPanel

    os.environ["STUDIO_HOME"] = str(home)
    panel = ProfilerPanel(JobRunner())
    panel.resize(1400, 800)
    panel.show()
    view = panel.timeline
    first = whole = None
    began = time.perf_counter()
    with Ticks(5) as ticks:
        panel.open_file(formats.detect(path))

        def check() -> bool:
            nonlocal first, whole
            if first is None and view.trace is not None and view.last_frame_ms > 0:
                first = time.perf_counter() - began
            done = bool(panel.state.profiles) and panel.state.profiles[0].complete and view.trace is not None
            if done and view.trace is panel.state.profiles[0].trace and whole is None:
                whole = time.perf_counter() - began
            return whole is not None and first is not None

        wait_until(check, 900)
        wait_until(lambda: False, 0.2)  # the paints after the last swap count too
    panel.close()
    return first or float("nan"), whole or float("nan"), max(ticks.gaps, default=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from profiler_tracegen import generate

    app = QApplication.instance() or QApplication([])  # noqa: F841 - kept alive for the panel
    work = Path(tempfile.mkdtemp(prefix="studio-bench-frame-"))
    try:
        path = generate(work / "big.json", args.events)
        size = path.stat().st_size
        t = time.perf_counter()
        with path.open("rb") as handle:
            json.load(handle)
        peer = time.perf_counter() - t
        print(f"trace: {args.events:,} events, {size / 1e6:.0f} MB; json.load {peer:.2f} s")
        for i in range(args.repeats):
            first, whole, gap = open_once(path, work / f"home{i}")
            print(f"repeat {i + 1}: first frame {first:.2f} s · whole trace {whole:.2f} s · worst GUI stall {gap} ms")
            shutil.rmtree(work / f"home{i}", ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
