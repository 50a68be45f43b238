"""The GUI thread never does a job's work: while CPU-heavy jobs run, its event loop keeps turning.

How long the loop stalls under such jobs is a figure of ``benchmarks/bench_gui_stalls.py`` (it
depends on the machine's load); these tests check where the work runs.
"""

from __future__ import annotations

import threading
import time

from gui_ticks import Ticks

from studio.core.jobs import Progress
from studio.ui.jobs import JobRunner, JobState


def cpu_heavy_job(cancel, seconds: float = 1.5, step_iterations: int = 2000, ran_on: list | None = None):
    """Pure-Python arithmetic (holds the GIL between switches); each step is ``step_iterations`` long."""
    if ran_on is not None:
        ran_on.append(threading.current_thread())
    deadline = time.perf_counter() + seconds
    total, count = 0, 0
    while time.perf_counter() < deadline:
        for i in range(step_iterations):
            total += i * i % 7
        count += 1
        yield Progress(min(1.0, 1 - (deadline - time.perf_counter()) / seconds), f"chunk {count}")
    return total


def test_cpu_heavy_jobs_run_off_the_gui_thread_while_its_loop_turns(qtbot):
    runner = JobRunner()
    ran_on: list[threading.Thread] = []
    with Ticks(10) as ticks:
        handles = [runner.start(f"heavy {i}", lambda cancel: cpu_heavy_job(cancel, ran_on=ran_on))
                   for i in range(2)]  # both cores busy
        qtbot.waitUntil(lambda: all(h.state is JobState.FINISHED for h in handles), timeout=60_000)
    assert len(ran_on) == 2 and threading.main_thread() not in ran_on
    assert len(ticks.gaps) >= 2, "the GUI thread's timer must tick while the jobs run"


def test_a_big_trace_is_parsed_in_a_worker_process_while_the_loop_turns(qtbot, tmp_path, monkeypatch):
    """The real GIL-holding job: msgspec decodes a 64 MB trace in 16 MB chunks, numpy builds columns.

    In a thread of this interpreter each chunk would hold the lock for 100-200 ms and the GUI
    thread with it; the profiler panel's job has a worker process parse it and only maps the result.
    """
    from profiler_tracegen import generate

    from studio.tools.profiler import loader
    from studio.ui.panels.profiler.loading import load_job

    parsed_here = []
    for name in ("open_profile", "parse_to_cache"):  # what parses a source, were it called in this process
        real = getattr(loader, name)
        monkeypatch.setattr(loader, name, lambda *a, _real=real, _name=name, **k: (parsed_here.append(_name),
                                                                                    _real(*a, **k))[1])
    path = generate(tmp_path / "big.json", 300_000)
    assert path.stat().st_size > loader.OFFLOAD_BYTES  # big enough to go to a worker
    runner = JobRunner()
    with Ticks() as ticks:
        handle = runner.start("heavy", lambda cancel: load_job(path, cancel))
        qtbot.waitUntil(lambda: not handle.active, timeout=120_000)
    assert handle.state is JobState.FINISHED, handle.error
    assert parsed_here == [], "the trace was parsed in the GUI's process"
    assert handle.result.by_name, "the statistics arrived with the trace"
    assert len(ticks.gaps) >= 2, "the GUI thread's timer must tick while the trace loads"
