"""Why a rank is slow, at scale: what ``--comm`` and ``--free`` add to ``profile cluster``, and the
Cluster panel's worst GUI stall while their reports load.

The 16 ranks are the ones :mod:`bench_cluster_scale` synthesizes from the real 2-rank text export
(each rank's trace_view.json repeated to ``--events`` events). Measured, each in a fresh process:

* ``studio profile cluster DIR --json`` (the peer column: what the step split and matrix cost),
  and the same with ``--comm`` (the collectives' split and the slow ops' causes, read from every
  rank's trace_view.json) and with ``--free`` (every idle gap labelled): the time each adds
  (goal: <= 1 s added);
* the Cluster panel opening DIR: the longest gap of a 5 ms timer on the GUI thread from the open
  until both the collectives' report and the idle gaps are shown (goal: < 50 ms), against the same
  timer's longest gap over 0.6 s with nothing loading (what the machine itself costs).

    python benchmarks/bench_cluster_why.py            # 16 ranks x 1M events
    python benchmarks/bench_cluster_why.py --quick    # 16 ranks x 50k events
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
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
app = QApplication([])
from studio.ui.jobs import JobRunner
from studio.ui.panels.cluster import ClusterPanel
panel = ClusterPanel(JobRunner()); panel.resize(1280, 720); panel.show()
out = {"stall_ms": 0.0}
last = [None]
def tick():
    now = time.perf_counter()
    if last[0] is not None:
        out["stall_ms"] = max(out["stall_ms"], (now - last[0]) * 1000)
    last[0] = now
    comm = panel.collectives.report is not None or panel.collectives.message.text().startswith("⚠")
    free = panel.free.report is not None
    if comm and free and "shown" not in out:
        out["shown"] = time.perf_counter() - t
        out["comm_ops"] = len(panel.collectives.report["ops"]) if panel.collectives.report else 0
        out["gaps"] = len(panel.free.report["gaps"])
        app.quit()
idle = {"worst": 0.0, "last": None}
def idle_tick():  # the same timer with nothing loading: the machine's own floor
    now = time.perf_counter()
    if idle["last"] is not None:
        idle["worst"] = max(idle["worst"], (now - idle["last"]) * 1000)
    idle["last"] = now
floor = QTimer(); floor.setInterval(5); floor.timeout.connect(idle_tick); floor.start()
QTimer.singleShot(600, app.quit)
app.exec()
floor.stop()
out["idle_ms"] = idle["worst"]
""" + timed_tail("panel.open_folder(sys.argv[1])")


def cli(folder: Path, *flags: str) -> float:
    """Wall seconds of ``studio profile cluster DIR --json FLAGS`` in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="studio-bench-home-") as home:
        env = {**os.environ, "STUDIO_HOME": home, "PYTHONPATH": str(REPO)}
        return run_measured([sys.executable, "-m", "studio", "profile", "cluster", "--json", *flags, str(folder)],
                            env)[0]


def panel(folder: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="studio-bench-home-") as home:
        env = {**os.environ, "STUDIO_HOME": home, "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"}
        result = Path(home) / "panel.json"
        run_measured([sys.executable, "-c", PANEL, str(folder), str(result)], env)
        return json.loads(result.read_text())


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
    args = scale_parser(__doc__.splitlines()[0], "studio_bench_cluster_why").parse_args()
    with ranks(args.dir, 50_000 if args.quick else args.events) as (folder, label):
        plain = cli(folder)
        for flag, what in (("--comm", "collectives' split and slow ops' causes"), ("--free", "idle gaps labelled")):
            row(f"profile cluster {flag} ({what}), {label}: time added", "s", cli(folder, flag) - plain, plain,
                "profile cluster alone (step split, matrix)", "<= 1 s added")
        shown = panel(folder)
        row(f"Cluster panel, {label}: worst GUI stall until the collectives and idle gaps are shown "
            f"({shown['shown']:.1f} s; {shown['comm_ops']:,} op rows, {shown['gaps']:,} gaps)", "ms",
            shown["stall_ms"], shown["idle_ms"], "the same timer with nothing loading (the machine's floor)",
            "< 50 ms")
    load_row()
    return 0


if __name__ == "__main__":
    sys.exit(main())
