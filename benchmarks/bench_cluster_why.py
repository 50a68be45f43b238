"""Why a rank is slow, at scale: what ``--comm`` and ``--free`` add to ``profile cluster``, and the
Cluster panel's worst GUI stall while their reports load.

The 16 ranks are the ones :mod:`bench_cluster_scale` synthesizes from the real 2-rank text export
(each rank's trace_view.json repeated to ``--events`` events). Measured, each in a fresh process:

* ``studio profile cluster DIR --json`` (the peer column: what the step split and matrix cost),
  and the same with ``--comm`` (the collectives' split and the slow ops' causes, read from every
  rank's trace_view.json) and with ``--free`` (every idle gap labelled): the time each adds
  (goal: <= 1 s added). ``--free`` twice in one Studio home: first with an empty cache (every
  rank read and labelled, the ranks in parallel on every core), then again (each rank's labelled
  gaps from the cache: what a second run, or the panel after the CLI, costs);
* the Cluster panel opening DIR: the longest gap of a 5 ms timer on the GUI thread from the open
  until both the collectives' report and the idle gaps are shown (goal: < 50 ms), then while each
  other tab is brought to the front for the first time (filled and laid out then: goal < 50 ms),
  against the same timer's longest gap over 0.6 s with nothing loading (what the machine itself
  costs); with an empty cache, and after the CLI's ``--free`` (the gaps from the cache).

    python benchmarks/bench_cluster_why.py              # 16 ranks x 50k events (~1 min)
    python benchmarks/bench_cluster_why.py --stretch    # 16 ranks x 1M events (several minutes, ~0.5 GB on disk)
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from bench_cluster_scale import RANKS, scale_parser, synthesize, timed_tail  # noqa: E402
from bench_profiler_scale import load_row, row, run_measured  # noqa: E402

# The panel opens the folder; the timer's longest gap is taken until both reports are shown (or
# said to be missing): the work runs in jobs and worker processes, the GUI thread only renders.
PANEL = r"""
import json, sys, time
from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication
app = QApplication([])
from studio.ui.jobs import JobRunner
from studio.ui.panels.cluster import ClusterPanel
panel = ClusterPanel(JobRunner()); panel.resize(1280, 720); panel.show()
out = {"stall_ms": 0.0, "tab_ms": {}, "busy_ms": {}}
last = [None, None]
phase = ["open"]
def tick():
    # the gap between ticks (wall time), and the window thread's own CPU time in it: the part of a
    # stall that is the panel's work, not the other processes on the cores or the workers' turns
    now, cpu = time.perf_counter(), time.thread_time()
    if last[0] is not None:
        gap, busy = (now - last[0]) * 1000, (cpu - last[1]) * 1000
        if phase[0] == "open":
            out["stall_ms"] = max(out["stall_ms"], gap)
        else:
            out["tab_ms"][phase[0]] = max(out["tab_ms"].get(phase[0], 0.0), gap)
        out["busy_ms"][phase[0]] = max(out["busy_ms"].get(phase[0], 0.0), busy)
    last[:] = [now, cpu]
    comm = panel.collectives.report is not None or panel.collectives.message.text().startswith("⚠")
    free = panel.free.report is not None
    if comm and free and "shown" not in out:
        out["shown"] = time.perf_counter() - t
        out["comm_ops"] = len(panel.collectives.report["ops"]) if panel.collectives.report else 0
        out["gaps"] = len(panel.free.report["gaps"])
        QTimer.singleShot(300, lambda: show_tab(1))  # the first paints after the reports count too
def show_tab(index):  # then each other tab brought to the front for the first time, as a user does
    if index == panel.tabs.count():  # what the tabs hold then: a run that filled none cannot pass for fast
        out["rows"] = {"collectives": panel.collectives.table.model().rowCount(),
                       "idle gaps": panel.free.gaps.model().rowCount(), "links": panel.comm.table.model().rowCount()}
        app.quit()
        return
    phase[0] = panel.tabs.tabText(index)
    panel.tabs.setCurrentIndex(index)
    QTimer.singleShot(300, lambda: show_tab(index + 1))
idle = {"worst": 0.0, "last": None}
def idle_tick():  # the same timer with nothing loading: the machine's own floor
    now = time.perf_counter()
    if idle["last"] is not None:
        idle["worst"] = max(idle["worst"], (now - idle["last"]) * 1000)
    idle["last"] = now
floor = QTimer(); floor.setInterval(5); floor.timeout.connect(idle_tick); floor.start()
# A loop of its own: Qt 6's app.quit() closes every window, and a hidden panel neither lays out
# nor paints (its tabs would not even be filled) — the figure below would be of no window at all.
loop = QEventLoop(); QTimer.singleShot(600, loop.quit); loop.exec()
floor.stop()
assert panel.isVisible(), "the panel must be on screen while its stalls are measured"
out["idle_ms"] = idle["worst"]
""" + timed_tail("panel.open_folder(sys.argv[1])")


# Studio's modules compiled once, into a folder of the run: an installed Studio has its bytecode,
# while a checkout run with PYTHONDONTWRITEBYTECODE compiles every module it imports, in every
# process, holding the interpreter — the panel's job threads' imports then stall its window.
PYCACHE = Path(tempfile.gettempdir()) / f"studio_bench_why_pyc_{os.getpid()}"
BASE_ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "PYTHONPYCACHEPREFIX": str(PYCACHE), "PYTHONPATH": str(REPO)}


def compile_studio() -> None:
    import subprocess

    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", str(REPO / "studio")], env=BASE_ENV,
                   check=True, stdout=subprocess.DEVNULL)


def cli(folder: Path, *flags: str, home: str | None = None) -> float:
    """Wall seconds of ``studio profile cluster DIR --json FLAGS`` in a fresh process (in the Studio
    home ``home``, else in an empty one)."""
    with tempfile.TemporaryDirectory(prefix="studio-bench-home-") as fresh:
        env = {**BASE_ENV, "STUDIO_HOME": home or fresh}
        return run_measured([sys.executable, "-m", "studio", "profile", "cluster", "--json", *flags, str(folder)],
                            env)[0]


def panel(folder: Path, home: str | None = None) -> dict:
    """The panel script's figures (in the Studio home ``home``, else in an empty one)."""
    with tempfile.TemporaryDirectory(prefix="studio-bench-home-") as fresh:
        env = {**BASE_ENV, "STUDIO_HOME": home or fresh, "QT_QPA_PLATFORM": "offscreen"}
        result = Path(fresh) / "panel.json"
        run_measured([sys.executable, "-c", PANEL, str(folder), str(result)], env)
        return json.loads(result.read_text())


def panel_row(folder: Path, label: str, when: str, home: str | None = None) -> None:
    shown = panel(folder, home)
    floor = "the same timer with nothing loading (the machine's floor)"
    busy = shown["busy_ms"]
    row(f"Cluster panel, {label}, {when}: worst GUI stall until the collectives and idle gaps are shown "
        f"({shown['shown']:.1f} s; {shown['comm_ops']:,} op rows, {shown['gaps']:,} gaps; the window thread's own "
        f"work in a gap at most {busy['open']:.0f} ms)", "ms", shown["stall_ms"], shown["idle_ms"], floor, "< 50 ms")
    tab, worst = max(shown["tab_ms"].items(), key=lambda item: item[1])
    rows = ", ".join(f"{n:,} {name}" for name, n in shown["rows"].items())
    own = max(v for k, v in busy.items() if k != "open")
    row(f"Cluster panel, {label}, {when}: worst GUI stall bringing each other tab to the front for the first "
        f"time (the worst: {tab}; its own work in a gap at most {own:.0f} ms; then listed: {rows})", "ms", worst,
        shown["idle_ms"], floor, "< 50 ms")


@contextmanager
def ranks(root: Path, events: int):
    """The synthesized ranks under ``root`` (removed after): (folder, label)."""
    try:
        started = time.perf_counter()
        per_rank, steps = synthesize(root / "ranks", events)
        print(f"# {RANKS} ranks x {per_rank:,} events ({steps} steps) in {time.perf_counter() - started:.0f} s",
              file=sys.stderr)
        yield root / "ranks", f"{RANKS} ranks x {per_rank / 1e6:.2g}M events"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    parser = scale_parser(__doc__.splitlines()[0], "studio_bench_cluster_why")
    parser.add_argument("--stretch", action="store_true", help="16 ranks x --events (1M) events: several minutes")
    args = parser.parse_args()
    goal = "<= 1 s added"
    try:
        with ranks(args.dir, args.events if args.stretch else 50_000) as (folder, label), \
                tempfile.TemporaryDirectory(prefix="studio-bench-home-") as home:
            compile_studio()
            # each figure the best of two runs (the machine is shared): the empty cache's in two empty homes,
            # the second of them kept for the runs from the cache and the panel after the CLI
            plain = min(cli(folder), cli(folder))
            peer = "profile cluster alone (step split, matrix)"
            row(f"profile cluster --comm (collectives' split and slow ops' causes), {label}: time added", "s",
                min(cli(folder, "--comm"), cli(folder, "--comm")) - plain, plain, peer, goal)
            row(f"profile cluster --free (idle gaps labelled), {label}, empty cache: time added", "s",
                min(cli(folder, "--free"), cli(folder, "--free", home=home)) - plain, plain, peer, goal)
            row(f"profile cluster --free (idle gaps labelled), {label}, again (from the cache): time added", "s",
                min(cli(folder, "--free", home=home), cli(folder, "--free", home=home)) - plain, plain, peer, goal)
            panel_row(folder, label, "empty cache")
            panel_row(folder, label, "after the CLI's --free", home)
    finally:
        shutil.rmtree(PYCACHE, ignore_errors=True)
    load_row()
    return 0


if __name__ == "__main__":
    sys.exit(main())
