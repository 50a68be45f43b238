"""A big Chrome trace opened in the Profiler panel: time to its first frame, to every event decoded
with the statistics final, and the GUI thread's worst stall meanwhile (the tests' 5 ms timer,
tests/gui_ticks.py).

The trace is synthesised (benchmarks/profiler_tracegen.py, ~214 bytes an event) in a temporary
folder and deleted afterwards; each repeat opens it with an empty cache (its own STUDIO_HOME), the
panel on screen (offscreen platform), in a fresh process whose tree (the window's process and its
worker) is sampled for peak memory. Peers, in the same run:

- first frame: ``json.load`` of the same file (``--stretch``: of its first tenth, the 1M-event
  trace the generator writes as the first 1M events of the 10M one, times ten: json.load of 2.2 GB
  needs ~12 GB);
- every event decoded, statistics final (MB/s): the page-cache read of the same file
  (``cat FILE > /dev/null``);
- worst GUI stall: the same timer with no job, in the same process just before (the machine's floor).

    python benchmarks/run.py bench_first_frame.py --events 1000000 --repeats 3
    python benchmarks/run.py bench_first_frame.py --stretch     # 10M events, 2.2 GB, once (~3 min)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

PEER_FLOOR = "the same timer with no job, just before (the machine's floor)"


def open_once(path: Path, home: Path) -> dict:
    """One cold open: s to the first frame, s to the whole trace with final statistics on screen,
    the worst GUI gap (ms), the idle floor measured just before (ms) and the CPU time of this
    process (every thread, not its worker) during the read (s): what competes with its GUI thread."""
    from bench_common import idle_worst, wait_until
    from gui_ticks import Ticks

    from studio.core import formats
    from studio.ui.jobs import JobRunner
    from studio.ui.panels.profiler.panel import ProfilerPanel

    os.environ["STUDIO_HOME"] = str(home)
    panel = ProfilerPanel(JobRunner())
    panel.resize(1400, 800)
    panel.show()
    view = panel.timeline
    idle = idle_worst()
    first = whole = None
    began, cpu = time.perf_counter(), time.process_time()
    with Ticks(5) as ticks:
        panel.open_file(formats.detect(path))

        def check() -> bool:
            nonlocal first, whole
            if first is None and view.trace is not None and view.last_frame_ms > 0:
                first = time.perf_counter() - began
            profiles = panel.state.profiles
            final = bool(profiles) and profiles[0].complete and view.trace is profiles[0].trace
            if final and whole is None and not panel.stats_tab.counted.text().startswith("Per op: PARTIAL"):
                whole = time.perf_counter() - began
            return whole is not None and first is not None

        wait_until(check, 1800)
        cpu = time.process_time() - cpu  # the window's process, every thread (not its worker)
        wait_until(lambda: False, 0.2)  # the paints after the last swap count too
    panel.close()
    nan = float("nan")
    return {"first": first or nan, "whole": whole or nan, "worst": max(ticks.gaps, default=0), "idle": idle,
            "window_cpu": cpu}


def child(path: Path, home: Path, out: Path) -> None:
    """``--child``: one cold open in this process, its figures written to ``out`` as JSON."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from studio.ui.gui_gc import collect_on_gui_thread

    app = QApplication.instance() or QApplication([])
    collect_on_gui_thread(app)  # as the application: cycles collected on the GUI thread, between events
    out.write_text(json.dumps(open_once(path, home)))


def measured_open(path: Path, work: Path, i: int) -> dict:
    """:func:`open_once` in a fresh process; adds its tree's peak memory (MB)."""
    from bench_common import run_measured

    home, out = work / f"home{i}", work / f"open{i}.json"
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(HERE.parent)}  # run.py's, else this checkout
    try:
        _wall, _cpu, peak = run_measured([sys.executable, __file__, "--child", str(path), str(home), str(out)], env)
        return {**json.loads(out.read_text()), "peak_mb": peak}
    finally:
        shutil.rmtree(home, ignore_errors=True)


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def json_load(path: Path) -> float:
    """``json.load`` of ``path`` in a fresh process (its memory is not this one's), s."""
    return seconds(lambda: subprocess.run([sys.executable, "-c", "import json,sys\njson.load(open(sys.argv[1]))",
                                           str(path)], check=True))


def cat(path: Path) -> float:
    with open(os.devnull, "wb") as sink:
        return seconds(lambda: subprocess.run(["cat", str(path)], stdout=sink, check=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--stretch", action="store_true",
                        help="10M events (2.2 GB), once; the peer json.load of its first tenth")
    parser.add_argument("--child", nargs=3, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    from bench_common import emit
    from profiler_tracegen import generate

    events, repeats = (10_000_000, 1) if args.stretch else (args.events, args.repeats)
    work = Path(tempfile.mkdtemp(prefix="studio-bench-frame-"))
    try:
        path = generate(work / "big.json", events)
        size = path.stat().st_size
        peer_path, scale = path, 1
        if args.stretch:  # json.load of 2.2 GB needs ~12 GB: its first 1M events, times ten
            peer_path, scale = generate(work / "first_tenth.json", events // 10), 10
        peer = scale * json_load(peer_path)
        if peer_path != path:
            peer_path.unlink()
        # The file was just written: its 2.2 GB would still be going to disk during the read
        # measured below (a file a user opens was written long before). Flushed first.
        os.sync()
        cat(path)  # into the page cache: the read below is the page-cache rate
        read = min(cat(path) for _ in range(3))
        label = f"{events / 1e6:g}M events ({size / 1e9:.2f} GB)"
        peer_name = "json.load of it" if scale == 1 else "10 x json.load of its first tenth (1M events)"
        for i in range(repeats):
            got = measured_open(path, work, i)
            print(f"repeat {i + 1}: first frame {got['first']:.2f} s · whole {got['whole']:.2f} s · worst GUI stall "
                  f"{got['worst']} ms (idle {got['idle']} ms) · peak {got['peak_mb']:,.0f} MB", file=sys.stderr)
            emit(f"Profiler {label}: first frame on screen", "s", got["first"], peer, peer_name, "<= 1 s")
            emit(f"Profiler {label}: every event decoded, statistics final", "MB/s", size / 1e6 / got["whole"],
                 size / 1e6 / read, "page-cache read (cat > /dev/null)", ">= 500 MB/s")
            emit(f"Profiler {label}: worst GUI stall during the read", "ms", got["worst"], got["idle"], PEER_FLOOR,
                 "< 50 ms")
            emit(f"Profiler {label}: peak memory, whole process tree", "MB", got["peak_mb"], 0, "-", "<= 1500 MB")
            emit(f"Profiler {label}: CPU of the window's process (all its threads) during the read", "s",
                 got["window_cpu"], got["whole"], "the read's wall time", "-")
        one, five, _ = os.getloadavg()
        emit("load average (1 min, 5 min) at the end of the run", "", one, five, f"{os.cpu_count()} cores", "-")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
