"""GUI stalls: how long the GUI thread's event loop stops while the work the GUI tests drive runs.

The GUI tests check that this work runs off the GUI thread (tests/ui: event loop latency, big
inputs, table sort, terminal flood, host check); how long the loop still stalls meanwhile depends
on how busy the machine is, so it is measured here, in one process, with the tests' 5 ms / 10 ms
timer (tests/gui_ticks.py), against the limits the tests used to assert:

- two CPU-heavy jobs (pure-Python steps of ~0.1 ms and of ~150 ms): worst gap < 100 ms over idle;
- the profiler's load job on a 300k-event (64 MB) trace: worst < 150 ms over idle;
- opening a 50k-node model in the graph panel, filling and sorting a 100k-row statistics table,
  sorting a 100k-row table: worst < 100 ms over idle, 99th percentile < 50 ms over idle;
- a 150,000-line flood into the terminal, a host check in the Hosts panel (loopback sshd): worst
  < 300 ms.

"idle" (the peer column) is the worst gap of the same timer with no job, measured just before each
row: what the machine itself costs (other processes on the cores), the floor no job can go under.

    python benchmarks/run.py bench_gui_stalls.py
    python benchmarks/run.py bench_gui_stalls.py --only trace,model
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROWS = ("cpu", "trace", "model", "stats", "table", "terminal", "hosts")
PEER = "the same timer with no job, just before (the machine's floor)"


def measure(label: str, start, done, goal: str, interval_ms: int = 5, timeout_s: float = 600) -> None:
    """Tick while ``start()``'s work runs until ``done()``; print the worst and 99th-percentile gap."""
    from bench_common import emit, idle_worst, wait_until
    from gui_ticks import Ticks

    idle = idle_worst(interval_ms)
    gc.collect()
    gc.freeze()  # what earlier rows left in this process is not this row's doing
    try:
        with Ticks(interval_ms) as ticks:
            start()
            finished = wait_until(done, timeout_s)
            wait_until(lambda: False, 0.1)  # the first paints after the result count too
    finally:
        gc.unfreeze()
    gaps = ticks.gaps or [0]
    if not finished:
        label += f" (not finished after {timeout_s:.0f} s)"
        print(f"{label}: not finished; its gaps up to then are reported", file=sys.stderr)
    emit(f"GUI stall, worst: {label}", "ms", float(max(gaps)), float(idle), PEER, goal)
    emit(f"GUI stall, p99: {label}", "ms", float(np.percentile(gaps, 99)), float(idle), PEER, "-")


def cpu_jobs(step_iterations: int) -> None:
    from studio.core.jobs import Progress
    from studio.ui.jobs import JobRunner, JobState

    def job(cancel, seconds: float = 1.5):
        deadline = time.perf_counter() + seconds
        total = 0
        while time.perf_counter() < deadline:
            for i in range(step_iterations):
                total += i * i % 7
            yield Progress(None, "working")
        return total

    runner, handles = JobRunner(), []
    measure(f"2 CPU-heavy jobs, steps of {step_iterations:,} iterations",
            lambda: handles.extend(runner.start(f"heavy {i}", job) for i in range(2)),
            lambda: len(handles) == 2 and all(h.state is JobState.FINISHED for h in handles),
            "< 100 ms over idle", interval_ms=10)


def trace_load(work: Path) -> None:
    from profiler_tracegen import generate

    from studio.ui.jobs import JobRunner
    from studio.ui.panels.profiler.loading import load_job

    path = generate(work / "big.json", 300_000)
    runner, handles = JobRunner(), []
    measure("profiler load job, 300k-event trace",
            lambda: handles.append(runner.start("load", lambda cancel: load_job(path, cancel))),
            lambda: bool(handles) and not handles[0].active, "< 150 ms over idle")


def model_open(work: Path, keep: list) -> None:
    from studio.tools.graph.synthetic import write_synthetic
    from studio.ui.jobs import JobRunner
    from studio.ui.panels.graph.panel import GraphPanel

    path = write_synthetic(work / "big.onnx", 50_000)
    runner = JobRunner()
    panel = GraphPanel(runner)
    keep.append(panel)
    panel.resize(1400, 900)
    panel.show()
    measure("open a 50k-node model (graph panel)", lambda: panel.open_path(path),
            lambda: panel.left.view is not None and not runner.active_jobs,
            "< 100 ms over idle; p99 < 50 ms over idle")


def stats_table(keep: list) -> None:
    from PySide6.QtCore import Qt

    from profiler_helpers import name_stats

    from studio.tools.profiler.model import Trace
    from studio.ui.panels.profiler.stats_tab import OP_COLUMNS, StatsTab, ready_rows

    tab = StatsTab()
    keep.append(tab)
    tab.resize(1200, 700)
    tab.show()
    by_name = name_stats(100_000)
    ready = ready_rows(by_name, [])
    trace = Trace.__new__(Trace)
    trace.tables = {}
    sorted_ = []
    tab.table.model.sorted.connect(lambda: sorted_.append(True))

    def start() -> None:
        tab.show_stats(trace, by_name, [], {}, ready)
        tab.table.view.sortByColumn(OP_COLUMNS.index("Total (µs)"), Qt.SortOrder.DescendingOrder)

    measure("fill and sort a 100k-row statistics tab", start, lambda: bool(sorted_),
            "< 100 ms over idle; p99 < 50 ms over idle")


def table_sort(keep: list) -> None:
    from PySide6.QtCore import Qt

    from profiler_helpers import table_rows

    from studio.ui.panels.profiler.table import TableWidget

    table = TableWidget("nothing")
    keep.append(table)
    table.set_rows(["Name", "Count", "Total (us)", "Share", "Type"], table_rows())
    sorted_ = []
    table.model.sorted.connect(lambda: sorted_.append(True))
    measure("sort a 100k-row table", lambda: table.view.sortByColumn(2, Qt.SortOrder.DescendingOrder),
            lambda: bool(sorted_), "< 100 ms over idle")


def loopback(work: Path):
    """A started loopback sshd and its host saved as ``box`` in Studio's host store, or None."""
    from bench_common import skipping
    from sshd_server import sshd_missing_reason, start_sshd

    from studio.remote.hosts import HostEntry, HostStore

    reason = sshd_missing_reason()
    if reason:
        skipping("the terminal and hosts rows (they need a loopback sshd)", reason)
        return None
    server = start_sshd(work / "sshd")
    store = HostStore()
    store.put(HostEntry(name="box", host=server.host, port=server.port, user=server.user, auth="key",
                        key_file=str(server.client_key)))
    store.save()
    return server


def terminal_flood(server, keep: list) -> None:
    from studio.remote.known_hosts import KnownHosts
    from studio.ui.jobs import JobRunner
    from studio.ui.panels.terminal import TerminalPanel

    panel = TerminalPanel(JobRunner())
    keep.append(panel)
    panel.host_context.known_hosts = KnownHosts(read_only=[server.known_hosts])
    panel.resize(900, 500)
    panel.show()
    tab = panel.open_terminal("box")
    from bench_common import wait_until

    if not wait_until(lambda: tab.session.state == "open", 30):
        raise SystemExit("terminal row: the session to the loopback sshd did not open")

    def screen() -> str:
        snap = tab.view.snapshot
        return snap.text(with_scrollback=True) if snap else ""

    measure("a 150,000-line flood into the terminal",
            lambda: tab.view.send.emit(b"yes 'flood line with some text' | head -150000; echo FLOOD-DONE-$((1+1))\r"),
            lambda: "FLOOD-DONE-2" in screen(), "< 300 ms", interval_ms=10)
    panel.close_all()


def host_check(server, work: Path, keep: list) -> None:
    from studio.remote.known_hosts import KnownHosts
    from studio.ui.jobs import JobRunner
    from studio.ui.panels.hosts import HostsPanel

    panel = HostsPanel(JobRunner())
    keep.append(panel)
    panel.host_context.known_hosts = KnownHosts(read_only=[], own=work / "known_hosts")
    panel.confirm_trust = lambda *args: True
    panel.resize(700, 600)
    panel.show()
    handles = []
    measure("Hosts panel: test a connection (trust, connect, probe)",
            lambda: handles.append(panel.test_connection("box")),
            lambda: bool(handles) and panel.checklist.status_of("auth") == "ok" and not handles[0].active,
            "< 300 ms", interval_ms=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(ROWS), help="comma-separated rows: " + ", ".join(ROWS))
    args = parser.parse_args()
    only = set(args.only.split(","))
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    work = Path(tempfile.mkdtemp(prefix="studio-bench-gui-stalls-"))
    os.environ["STUDIO_HOME"] = str(work / "home")  # the host store and caches of this run only
    from PySide6.QtWidgets import QApplication

    from studio.ui.gui_gc import GuiThreadCollector

    app = QApplication.instance() or QApplication([])
    collector = GuiThreadCollector()  # as the application: reference cycles collected on this thread
    keep: list = []  # the widgets of the rows, alive until the end
    server = None
    try:
        if "cpu" in only:
            cpu_jobs(2000)
            cpu_jobs(1_000_000)
        if "trace" in only:
            trace_load(work)
        if "model" in only:
            model_open(work, keep)
        if "stats" in only:
            stats_table(keep)
        if "table" in only:
            table_sort(keep)
        if only & {"terminal", "hosts"}:
            server = loopback(work)
        if server is not None and "terminal" in only:
            terminal_flood(server, keep)
        if server is not None and "hosts" in only:
            host_check(server, work, keep)
        print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores",
              file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
        collector.stop()
        for widget in keep:
            widget.close()
        app.processEvents()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
